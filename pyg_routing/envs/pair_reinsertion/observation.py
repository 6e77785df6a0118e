"""What an N2S-style policy sees of a :class:`~.state.PairReinsertionState`.

N2S gives its encoder the coordinates only (the role of a node is implicit in the
index layout its decoders use) and the solution only through the positional
input: the route quantities a node code is computed from (the same builder the
2-opt environment uses), or the tour positions for the kinds that read positions
(APE, bias encodings, RoPE).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from pyg_routing.data.route_quantities import edge_index_from_successors
from pyg_routing.envs.base import Observation
from pyg_routing.envs.observation import tour_encoding_inputs
from pyg_routing.envs.pair_reinsertion.state import PairReinsertionState


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


def observe(state: PairReinsertionState, mask: Tensor,
            dtype: torch.dtype | None = None) -> PairObservation:
    """The observation of ``state`` with the removal ``mask``, features in ``dtype``
    (default: the state's). Its route quantities are built only when a node code asks
    for them (No PE, the biases and RoPE read the tour positions alone)."""
    dtype = state.pos.dtype if dtype is None else dtype
    return PairObservation(
        x=state.pos.to(dtype), edge_index=edge_index_from_successors(state.succ),
        succ=state.succ, pe=None, route_pos=state.rank,
        route_id=torch.where(state.depot_mask, -1, 0), mask=mask,
        extra=state.best_cost.unsqueeze(1).to(dtype),
        encoding_inputs=lambda code_dtype: tour_encoding_inputs(state, None, code_dtype),
        history=state.history().to(dtype))
