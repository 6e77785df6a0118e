r"""Random-walk structural encoding (RWSE, paper App. E) of route graphs, batched.

``(R^t)_{vv}`` with ``R = D^{-1} A`` on the route graph
(:mod:`pyg_routing.functional._route_graph`): per-route walk tables convolved
with each graph's depot-return series (see
:func:`~pyg_routing.functional._route_graph.rwse`), no matrix powers.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pyg_routing.functional._route_graph import RouteGraph, as_route_graph, rwse

__all__ = ["random_walk_pe"]


def random_walk_pe(graph: Tensor | RouteGraph, num_nodes: int | None = None,
                   batch: Tensor | None = None, *, walk_length: int = 8,
                   ptr: Tensor | None = None, depot_mask: Tensor | None = None,
                   dtype: torch.dtype | None = None,
                   open_routes: Tensor | bool | None = None) -> Tensor:
    r"""Random-walk structural encoding (RWSE) of route graphs,
    ``[(R^t)_{vv}]_{t=1..walk_length}`` with ``R = D^{-1} A``, ``[N, walk_length]``.

    Args:
        graph: ``[2, E]`` route arcs, or a :class:`RouteGraph`.
        num_nodes, batch, ptr, depot_mask: see :func:`route_graph`.
        walk_length: ``K``, the number of steps.
        dtype: output dtype (default: ``torch.get_default_dtype()``).
        open_routes: ``[B]`` bool or one bool, graphs whose routes are open (each route
            the path ``0 - v_1 - ... - v_m``, its closing edge absent: the walk reflects
            at ``v_m``); default: what a given :class:`RouteGraph` says, else closed.

    Equals PyG's ``AddRandomWalkPE(walk_length)`` on the undirected simple route
    graph (isolated nodes: 0), computed exactly from per-route tables.
    """
    if not isinstance(walk_length, int) or walk_length < 1:
        raise ValueError(f"random_walk_pe needs walk_length >= 1, got {walk_length!r}")
    rg = as_route_graph(graph, num_nodes, batch, ptr, depot_mask)
    if open_routes is not None:   # else keep the RouteGraph's own open_graph
        rg = rg.with_open(open_routes)
    return rwse(rg, walk_length, torch.get_default_dtype() if dtype is None else dtype)
