"""What an improvement policy sees of a :class:`~.state.TwoOptState`.

:func:`observe` recomputes, on the env's dense state and every step, the node
encoding the policy's :class:`~pyg_routing.models.GPSEncoder` reads, through the
encoding seam (:meth:`GPSEncoder.node_code` on :func:`encoding_inputs`): the same
call a PyG transform makes on a ``RoutingData``, with no ``Data`` objects and no
Python loop over instances.

Depot copies ("dummy depots", nodes ``0 .. K-1``) are depots for every encoding:
within-route position 0, route id -1 (IPE phase 0, XPE zeros). The graph
encodings (Laplacian PE, RWSE) are defined on the route graph in ORIGINAL node
ids, where all copies are one depot: they are computed on that merged graph
(one depot per instance) and every copy reads the depot's code.
"""

from __future__ import annotations

import torch
from torch import nn

from pyg_routing.data.route_quantities import RouteQuantities, edge_index_from_successors
from pyg_routing.envs.base import Observation
from pyg_routing.envs.two_opt.moves import action_mask, node_features, route_quantities
from pyg_routing.envs.two_opt.state import TwoOptState
from pyg_routing.functional._route_graph import RouteGraph, route_graph
from pyg_routing.transforms import EncodingInputs


def _encoder_of(model: nn.Module) -> nn.Module:
    """The ``GPSEncoder`` itself, or the ``.encoder`` of a policy wrapping one."""
    enc = getattr(model, "encoder", model)
    if not hasattr(enc, "node_code"):
        raise TypeError(f"expected a GPSEncoder (or a policy with .encoder), got "
                        f"{type(model).__name__}")
    return enc


def encoding_inputs(state: TwoOptState, rq: RouteQuantities | None = None,
                    dtype: torch.dtype | None = None) -> EncodingInputs:
    """The node encodings' inputs of ``state``, flat over its ``B * M`` nodes."""
    b, m = state.order.shape
    rq = route_quantities(state) if rq is None else rq
    k = state.num_depots
    n = m - k + 1
    dev = state.device
    # Merged route graph: copy -> 0, customer v -> v - K + 1 (original ids).
    graph_node = (torch.arange(m, device=dev) - (k - 1)).clamp(min=0)
    offsets = torch.arange(b, device=dev) * n

    def merged_graph(by: str = "") -> RouteGraph:
        orig = (state.order - (k - 1)).clamp(min=0)
        # Arcs in cycle order = route order (the cycle starts at copy 0); the
        # depot -> depot arcs of empty routes are ignored by the route graph.
        edge_index = torch.stack([(orig + offsets.unsqueeze(1)).reshape(-1),
                                  (orig.roll(-1, dims=1) + offsets.unsqueeze(1)).reshape(-1)])
        ptr = torch.arange(b + 1, device=dev) * n
        return route_graph(edge_index, b * n, None, ptr, None)

    aware = torch.full((b,), state.problem.direction_sensitive, device=dev)
    return EncodingInputs(
        depot_angle=rq.depot_angle, depot_mask=state.depot_mask.reshape(-1),
        direction_sensitive=aware, batch=torch.arange(b, device=dev).repeat_interleave(m),
        route_pos=rq.route_pos, route_id=rq.route_id, cum_dist=rq.cum_dist,
        route_length=rq.route_length, route_graph=merged_graph,
        graph_node=(offsets.unsqueeze(1) + graph_node).reshape(-1), dtype=dtype)


def observe(state: TwoOptState, encoder: nn.Module, mask: torch.Tensor | None = None
            ) -> Observation:
    """The :class:`Observation` of ``state`` for a policy built on ``encoder``.

    Args:
        state: ``B`` solutions on ``M`` nodes.
        encoder: the policy's ``GPSEncoder`` (or the policy itself, via ``.encoder``).
        mask: a precomputed ``[B, M, M]`` action mask (default: :func:`action_mask`).
    """
    enc = _encoder_of(encoder)
    b, m = state.order.shape
    dtype = next(enc.parameters()).dtype
    rq = route_quantities(state)
    code = enc.node_code(encoding_inputs(state, rq, dtype))
    return Observation(
        x=node_features(state).to(dtype),
        edge_index=edge_index_from_successors(state.succ),
        succ=state.succ,
        pe=None if code is None else code.reshape(b, m, -1).to(dtype),
        route_pos=rq.route_pos.view(b, m),
        route_id=rq.route_id.view(b, m),
        mask=action_mask(state) if mask is None else mask,
        extra=torch.stack([state.cost, state.best_cost], -1).to(dtype),
    )
