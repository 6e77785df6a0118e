"""What an N2S-style policy sees of a :class:`~.state.PairReinsertionState`.

N2S gives its encoder the coordinates only (the role of a node is implicit in the
index layout its decoders use) and the solution only through the positional
input: here, the encoder's node code computed every step through the encoding
seam (the same call the 2-opt environment makes), or the tour positions for the
kinds that read positions (APE, bias encodings, RoPE).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from pyg_routing.data.route_quantities import edge_index_from_successors
from pyg_routing.envs.base import Observation
from pyg_routing.envs.pair_reinsertion.state import PairReinsertionState
from pyg_routing.envs.two_opt.moves import route_quantities
from pyg_routing.envs.two_opt.observation import _encoder_of, encoding_inputs


@dataclass
class PairObservation(Observation):
    """:class:`Observation` of the pair-reinsertion environment.

    ``x`` is ``[B, M, 2]`` (coordinates), ``route_pos`` the tour position of every
    node (depot 0; it orders the reinsertion mask), ``mask`` the removal mask ``[B,
    P]``, ``extra`` the best-so-far cost ``[B, 1]`` (N2S's critic input), and:

    Attributes:
        history: ``[B, P, 4]`` removal features per pair (last 3 removals, frequency).
    """

    history: Tensor


def observe(state: PairReinsertionState, encoder: nn.Module, mask: Tensor) -> PairObservation:
    """The observation of ``state`` for a policy built on ``encoder`` (anything with
    ``node_code``, or a policy with such an ``.encoder``), with the removal ``mask``."""
    enc = _encoder_of(encoder)
    b, m = state.order.shape
    dtype = next(enc.parameters()).dtype
    code = None
    if getattr(enc, "node_pe", None) is not None:
        # Route quantities only when a node code reads them (No PE, bias, RoPE: not).
        code = enc.node_code(encoding_inputs(state, route_quantities(state), dtype))
        code = code.reshape(b, m, -1).to(dtype)
    return PairObservation(
        x=state.pos.to(dtype), edge_index=edge_index_from_successors(state.succ),
        succ=state.succ, pe=code, route_pos=state.rank,
        route_id=torch.where(state.depot_mask, -1, 0), mask=mask,
        extra=state.best_cost.unsqueeze(1).to(dtype), history=state.history().to(dtype))
