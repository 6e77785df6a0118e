"""What an improvement policy sees of a :class:`~.state.TwoOptState`.

:func:`observe` gathers, on the env's dense state and every step, the node features,
the route arcs and the route quantities of the current solutions; the node encoding
is the policy's business (its :class:`~pyg_routing.models.pe.PositionalEncoding`
reads the observation's :func:`~pyg_routing.envs.observation.tour_encoding_inputs`),
with no ``Data`` objects and no Python loop over instances.
"""

from __future__ import annotations

import torch

from pyg_routing.data.route_quantities import edge_index_from_successors
from pyg_routing.envs.base import Observation
from pyg_routing.envs.observation import tour_encoding_inputs, tour_route_quantities
from pyg_routing.envs.two_opt.features import node_features
from pyg_routing.envs.two_opt.moves import action_mask
from pyg_routing.envs.two_opt.state import TwoOptState


def observe(state: TwoOptState, mask: torch.Tensor | None = None,
            dtype: torch.dtype | None = None) -> Observation:
    """The :class:`Observation` of ``state``.

    Args:
        state: ``B`` solutions on ``M`` nodes.
        mask: a precomputed ``[B, M, M]`` action mask (default: :func:`action_mask`).
        dtype: floating dtype of the features (default: the state's).
    """
    b, m = state.order.shape
    dtype = state.pos.dtype if dtype is None else dtype
    rq = tour_route_quantities(state)
    return Observation(
        x=node_features(state).to(dtype),
        edge_index=edge_index_from_successors(state.succ),
        succ=state.succ,
        pe=None,
        route_pos=rq.route_pos.view(b, m),
        route_id=rq.route_id.view(b, m),
        mask=action_mask(state) if mask is None else mask,
        extra=torch.stack([state.cost, state.best_cost], -1).to(dtype),
        encoding_inputs=lambda code_dtype: tour_encoding_inputs(state, rq, code_dtype),
        open_routes=getattr(state, "open_routes", None),
    )
