"""The one builder of what node encodings read of a search state: route quantities in.

Every environment computes the route quantities of its solutions
(:class:`~pyg_routing.data.route_quantities.RouteQuantities`, flat over its ``B * M``
nodes) and hands :func:`encoding_inputs` of them to its observation; it never calls
into a model. The policy's :class:`~pyg_routing.models.pe.PositionalEncoding` turns
them into a node code when its encoding has one (the same
:meth:`~pyg_routing.transforms.NodeEncoding.code` call a PyG transform makes on a
``RoutingData``). :func:`tour_route_quantities` and :func:`tour_encoding_inputs` do it
for the states that keep each solution as one cycle with depot copies (2-opt, pair
reinsertion).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch
from torch import Tensor

from pyg_routing.data.costs import direction_sensitive
from pyg_routing.data.route_quantities import RouteQuantities
from pyg_routing.data.route_quantities import route_quantities as _route_quantities
from pyg_routing.envs.tours import cycle_arc_costs
from pyg_routing.errors import UnsupportedProblemError
from pyg_routing.functional._route_graph import RouteGraph, route_graph
from pyg_routing.transforms import EncodingInputs

#: a graph's arcs, or a function computing them when a graph encoding asks (lazy)
Arcs = Tensor | Callable[[], Tensor]


def encoding_inputs(rq: RouteQuantities, depot_mask: Tensor, num_graphs: int,
                    direction_sensitive: bool | Tensor, graph_arcs: Arcs, graph_size: int, *,
                    batch: Tensor | None = None, graph_batch: Tensor | None = None,
                    graph_depot_mask: Tensor | None = None,
                    graph_node: Tensor | None = None, demand: Tensor | None = None,
                    dtype: torch.dtype | None = None,
                    open_routes: Tensor | None = None,
                    cycle_pos: Tensor | None = None) -> EncodingInputs:
    """The node encodings' inputs of ``G = num_graphs`` solutions of ``M`` nodes each.

    Args:
        rq: the solutions' route quantities, flat ``[G * M]``.
        depot_mask: ``[G * M]`` bool, True at depots (and depot copies).
        direction_sensitive: whether the problem tells a route from its reversal
            (IPE's ``direction="auto"``): one bool, or ``[G]`` per solution.
        graph_arcs: the route graph's arcs ``[2, E]`` over ``G * graph_size`` nodes (or a
            function computing them: only the graph encodings read them).
        graph_size: nodes per graph of the route graph (``M``, or fewer when depot
            copies are merged into one depot).
        batch: ``[G * M]`` graph of each node (``None``: derived).
        graph_batch, graph_depot_mask: the route graph's node batch and depot mask
            (``None``: derived by :func:`route_graph`).
        graph_node: ``[G * M]`` route-graph node each node reads its code from.
        demand: ``[G * M]`` node demands, or ``None`` (per-route XPE's weights).
        dtype: floating dtype of the codes.
        cycle_pos: ``[G * M]`` position of each node along its solution's one cycle
            (states that keep one cycle per instance).
    """
    dev = depot_mask.device
    m = depot_mask.numel() // max(num_graphs, 1)
    ptr = torch.arange(num_graphs + 1, device=dev) * graph_size

    def graph(by: str = "") -> RouteGraph:
        arcs = graph_arcs() if callable(graph_arcs) else graph_arcs
        return route_graph(arcs, num_graphs * graph_size, graph_batch, ptr, graph_depot_mask)

    return EncodingInputs(
        depot_angle=rq.depot_angle, depot_mask=depot_mask,
        direction_sensitive=direction_sensitive.to(dev) if isinstance(direction_sensitive, Tensor)
        else torch.full((num_graphs,), direction_sensitive, device=dev),
        batch=torch.arange(num_graphs, device=dev).repeat_interleave(m) if batch is None
        else batch,
        route_pos=rq.route_pos, route_id=rq.route_id, cum_dist=rq.cum_dist,
        route_length=rq.route_length, route_graph=graph, graph_node=graph_node,
        demand=demand, dtype=dtype, open_routes=open_routes, cycle_pos=cycle_pos)


def tour_route_quantities(state: Any) -> RouteQuantities:
    """Route quantities of a cycle state (``order, pos, depot_mask [B, M]``), flat
    ``[B * M]`` (node ``b * M + v``).

    The arcs are listed in cycle order (``order`` starts at depot copy 0), which is
    route order, so :func:`~pyg_routing.data.route_quantities.route_quantities` takes
    its segment-cumsum path with no pointer jumping. Route ids follow the cycle;
    empty routes are skipped. ``depot_angle`` is measured from copy 0. A state with
    ``costs`` (explicit matrices, open routes) accumulates them in ``cum_dist``.
    """
    b, m = state.order.shape
    off = (torch.arange(b, device=state.device) * m).unsqueeze(1)
    edge_index = torch.stack([(state.order + off).reshape(-1),
                              (state.order.roll(-1, dims=1) + off).reshape(-1)])
    batch = torch.arange(b, device=state.device).repeat_interleave(m)
    costs = getattr(state, "costs", None)
    arc_cost = None if costs is None else cycle_arc_costs(costs, state.order).reshape(-1)
    # The instances were checked when the search started; no per-step check.
    return _route_quantities(state.pos.reshape(b * m, 2), edge_index,
                             state.depot_mask.reshape(-1), batch, b, validate=False,
                             arc_cost=arc_cost)


def tour_encoding_inputs(state: Any, rq: RouteQuantities | None = None,
                         dtype: torch.dtype | None = None) -> EncodingInputs:
    """:func:`encoding_inputs` of a cycle state with ``K = state.num_depots`` depot
    copies (nodes ``0 .. K-1``).

    Depot copies are depots for every encoding (within-route position 0, route id
    -1); ``cycle_pos`` is the state's ``rank`` (DACT's CPE over the whole cycle). The
    graph encodings are defined on the route graph in ORIGINAL node ids,
    where all copies are one depot: that merged graph (``N = M - K + 1`` nodes per
    instance) is what they read, and every copy takes the depot's code.
    """
    b, m = state.order.shape
    rq = tour_route_quantities(state) if rq is None else rq
    k = state.num_depots
    n = m - k + 1
    dev = state.device
    # Merged route graph: copy -> 0, customer v -> v - K + 1 (original ids).
    graph_node = (torch.arange(m, device=dev) - (k - 1)).clamp(min=0)
    offsets = (torch.arange(b, device=dev) * n).unsqueeze(1)

    copy_depot = getattr(state, "copy_depot", None)

    def merged_arcs() -> Tensor:
        if copy_depot is not None:       # one merged depot would join every depot's routes
            raise UnsupportedProblemError("the graph encodings are computed on the route "
                                          "graph around one depot; these states have "
                                          "several depots")
        orig = (state.order - (k - 1)).clamp(min=0)
        # Arcs in cycle order = route order (the cycle starts at copy 0); the
        # depot -> depot arcs of empty routes are ignored by the route graph.
        return torch.stack([(orig + offsets).reshape(-1),
                            (orig.roll(-1, dims=1) + offsets).reshape(-1)])

    aware: bool | Tensor = state.problem.direction_sensitive
    if getattr(state, "costs", None) is not None:   # asymmetry, open routes: the direction
        aware = direction_sensitive(torch.full((b,), aware, device=dev), state.asymmetric,
                                    getattr(state, "open_routes", None))
    inputs = encoding_inputs(rq, state.depot_mask.reshape(-1), b, aware, merged_arcs, n,
                             graph_node=(offsets + graph_node).reshape(-1),
                             demand=_flat_demand(state), dtype=dtype,
                             open_routes=getattr(state, "open_routes", None),
                             cycle_pos=state.rank.reshape(-1))
    if copy_depot is None:
        return inputs
    return replace(inputs, **_depot_references(state.order, state.rank, state.pos,
                                                copy_depot, state.instance_depots))


def _depot_references(order: Tensor, rank: Tensor, pos: Tensor, copy_depot: Tensor,
                      num_depots: int) -> dict[str, Tensor]:
    """XPE's other reference points on a multi-depot cycle state: every node's depot
    (the copy opening its route, at its depot's coordinates), and the centroid and
    number of the instance's depots (copies repeat a depot, so not the copies')."""
    b, m = order.shape
    k = copy_depot.size(1)
    t = torch.arange(m, device=order.device)
    opening = torch.cummax(torch.where(order < k, t, 0), 1).values          # by position
    home = order.gather(1, opening).gather(1, rank)                        # by node
    off = (torch.arange(b, device=order.device) * m).unsqueeze(1)
    count = torch.zeros(b, num_depots, dtype=pos.dtype, device=pos.device)
    count.scatter_add_(1, copy_depot, torch.ones_like(copy_depot, dtype=pos.dtype))
    total = torch.zeros(b, count.size(1), 2, dtype=pos.dtype, device=pos.device)
    total.scatter_add_(1, copy_depot.unsqueeze(-1).expand(b, k, 2), pos[:, :k])
    present = count > 0
    each = total / count.clamp(min=1).unsqueeze(-1)                         # [B, D, 2]
    centre = (each * present.unsqueeze(-1)).sum(1) / present.sum(1, keepdim=True)
    return {"pos": pos.reshape(b * m, 2), "home": (home + off).reshape(-1),
            "depot_centre": centre, "depot_count": present.sum(1).to(pos.dtype)}


def _flat_demand(state: Any) -> Tensor | None:
    """``[B * M]`` demands of a cycle state (0 at depot copies), if it keeps them."""
    demand = getattr(state, "demand", None)
    return None if demand is None else demand.reshape(-1)
