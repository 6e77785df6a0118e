"""Batched per-node route quantities: the inputs of every positional encoding.

A solution is given as its *route arcs* (``edge_index``): ``depot -> first``,
consecutive customers, ``last -> depot``, for every route, in route order. The
same format describes a single instance, a PyG ``Batch`` (node indices already
shifted) or a dense batch of tours flattened with :func:`edge_index_from_tours`
or :func:`edge_index_from_successors`.

Everything here is ``O(log L)`` rounds of ``O(N)`` tensor ops (pointer jumping
along predecessor pointers, Wyllie's list ranking), with no Python loop over
nodes, routes or instances, so it can run inside a search loop on any device.

Sentinels (documented, never NaN):

=================  =========  ===========  ==========
quantity           depot      unvisited    customer
=================  =========  ===========  ==========
``route_id``       -1         -1           0..R-1
``route_pos``      0          -1           1..L_r
``cum_dist``       0          0            d_i
``route_length``   0          0            d_L
``depot_angle``    0          θ            θ
=================  =========  ===========  ==========
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch
from torch import Tensor
from torch_geometric.utils import scatter

from pyg_routing.errors import InvalidSolutionError


class RouteQuantities(NamedTuple):
    """Per-node route quantities of a (batch of) solution(s); all shaped ``[N]``
    except ``num_routes`` (``[num_graphs]``)."""

    route_id: Tensor      # long, unique over the whole batch, in route order
    route_pos: Tensor     # long, 1-based position of the customer in its route
    cum_dist: Tensor      # float, distance from the depot along the route (d_i)
    route_length: Tensor  # float, total length of the node's route (d_L)
    depot_angle: Tensor   # float, atan2(y - y0, x - x0) in [-pi, pi]
    num_routes: Tensor    # long [num_graphs]


def first_node_of_graph(batch: Tensor | None, num_nodes: int,
                        num_graphs: int | None = None) -> Tensor:
    """Index of the first node (the depot) of each node's graph, ``[N]``."""
    if batch is None:
        return torch.zeros(num_nodes, dtype=torch.long)
    if num_graphs is None:
        num_graphs = int(batch.max()) + 1 if batch.numel() else 0
    counts = torch.bincount(batch, minlength=num_graphs)
    ptr = torch.cumsum(counts, 0) - counts
    return ptr[batch]


def depot_angle(pos: Tensor, depot_index: Tensor, depot_mask: Tensor) -> Tensor:
    """θ_v = atan2(y_v - y_0, x_v - x_0); ``0`` for depots and for customers that
    sit exactly on their depot (atan2(0, 0) is defined as 0). Shape ``[N]``."""
    rel = pos - pos[depot_index]
    theta = torch.atan2(rel[:, 1], rel[:, 0])
    return torch.where(depot_mask, torch.zeros_like(theta), theta)


def pointer_jump(parent: Tensor, values: Sequence[Tensor],
                 combine: Callable[[list[Tensor], list[Tensor]], list[Tensor]],
                 identity: Sequence[float]) -> list[Tensor]:
    """Inclusive prefix scan along predecessor chains.

    ``parent[v]`` is the predecessor of ``v`` or ``-1`` for a chain start.
    ``combine(mine, ancestor)`` must be associative in the chain direction
    (``ancestor`` comes *before* ``mine``). Returns the scanned values, ``[N]`` each.
    Raises :class:`InvalidSolutionError` if the pointers contain a cycle.
    """
    n = parent.numel()
    dummy = torch.full((1,), n, dtype=torch.long, device=parent.device)
    par = torch.cat([torch.where(parent < 0, dummy.expand(n), parent), dummy])
    vals = [torch.cat([v, v.new_full((1,), ident)])
            for v, ident in zip(values, identity, strict=True)]
    max_rounds = math.ceil(math.log2(n + 1)) + 1
    for _ in range(max_rounds + 1):
        if bool((par[:n] == n).all()):
            return [v[:n] for v in vals]
        vals = combine(vals, [v[par] for v in vals])
        par = par[par]
    stuck = torch.nonzero(par[:n] != n).flatten()[:5].tolist()
    raise InvalidSolutionError(
        f"the route arcs contain a cycle that never reaches a depot (nodes {stuck} ...)")


def route_quantities(pos: Tensor, edge_index: Tensor, depot_mask: Tensor,
                     batch: Tensor | None = None,
                     num_graphs: int | None = None) -> RouteQuantities:
    """Route quantities from route arcs.

    Args:
        pos: ``[N, 2]`` coordinates.
        edge_index: ``[2, E]`` route arcs, every route as ``depot -> v_1 -> ... ->
            v_L -> depot`` and routes listed in order (their ids follow the order
            of their ``depot -> v_1`` arcs; the arcs may otherwise come in any
            order). ``depot -> depot`` arcs (empty routes, padding, unused dummy
            depots) are ignored.
        depot_mask: ``[N]`` bool, True for depot nodes (dummy depot copies too).
        batch: ``[N]`` graph index of each node; the first node of each graph is
            the depot its angles are measured from.
        num_graphs: number of graphs (inferred from ``batch`` when omitted).

    Masked writes go to a trash slot ``N`` instead of through boolean indexing, so
    no step needs ``nonzero`` (a host sync on GPUs); the only syncs are the
    pointer-jumping convergence test and the route count.
    """
    n = pos.size(0)
    device = pos.device
    if batch is not None and num_graphs is None:
        num_graphs = int(batch.max()) + 1 if n else 0
    src, dst = edge_index[0], edge_index[1]
    from_depot, to_depot = depot_mask[src], depot_mask[dst]
    arc_len = (pos[dst] - pos[src]).norm(dim=-1)
    trash = torch.full_like(dst, n)

    # Predecessor pointers; route starts point to themselves.
    parent = torch.arange(n + 1, device=device)
    parent[torch.where(from_depot | to_depot, trash, dst)] = src
    parent[n] = n
    into = torch.where(to_depot, trash, dst)
    incoming = pos.new_zeros(n + 1)
    incoming[into] = arc_len
    visited = torch.zeros(n + 1, dtype=torch.bool, device=device)
    visited[into] = True
    visited = visited[:n]

    # Wyllie list ranking: after the loop parent[v] is v's route start (its root),
    # acc[v] the distance from the root to v, rank[v] the hops from the root.
    is_root = parent == torch.arange(n + 1, device=device)
    acc = torch.where(is_root, torch.zeros_like(incoming), incoming)
    rank = (~is_root).to(torch.long)
    for _ in range(math.ceil(math.log2(n + 1)) + 2):
        grand = parent[parent]
        if torch.equal(grand, parent):
            break
        acc = acc + acc[parent]
        rank = rank + rank[parent]
        parent = grand
    root = parent[:n]
    # A cycle of customers that never reaches a depot collapses onto a node that
    # was not a route start (or never converges): report it instead of inventing ids.
    reached = is_root[root] & torch.equal(parent[parent], parent)
    if not bool((reached | ~visited).all()):
        stuck = torch.nonzero(visited & ~reached).flatten()[:5].tolist()
        raise InvalidSolutionError(
            f"the route arcs contain a cycle that never reaches a depot (nodes {stuck} ...)")
    cum_dist = torch.where(visited, acc[:n] + incoming[root], pos.new_zeros(n))

    # Route ids follow the order of the route-opening arcs.
    opening = from_depot & ~to_depot
    route_no = torch.cumsum(opening.long(), 0) - 1
    num_total_routes = int(route_no[-1]) + 1 if route_no.numel() else 0
    start_route = torch.full((n + 1,), -1, dtype=torch.long, device=device)
    start_route[torch.where(opening, dst, trash)] = route_no
    route_id = torch.where(visited, start_route[root], -1)
    route_pos = torch.where(visited, rank[:n] + 1,
                            torch.where(depot_mask, 0, -1))

    # d_L = d_last + |last -> depot|, broadcast back to the route's nodes.
    closing = ~from_depot & to_depot
    length_of_route = pos.new_zeros(num_total_routes + 1)
    slot = torch.where(closing, route_id[src], num_total_routes)
    length_of_route[slot] = cum_dist[src] + arc_len
    route_length = torch.where(visited, length_of_route[route_id.clamp(min=0)],
                               pos.new_zeros(n))

    if batch is None:
        num_routes = opening.sum().reshape(1)
        depot_index = torch.zeros(n, dtype=torch.long, device=device)
    else:
        num_routes = scatter(opening.long(), batch[src], 0, dim_size=num_graphs, reduce="sum")
        depot_index = first_node_of_graph(batch, n, num_graphs)
    theta = depot_angle(pos, depot_index, depot_mask)
    return RouteQuantities(route_id, route_pos, cum_dist, route_length, theta, num_routes)


def edge_index_from_tours(tours: Tensor, num_nodes: int, drop_padding: bool = True) -> Tensor:
    """Flat route arcs from dense giant tours.

    Args:
        tours: ``[B, L]`` node ids with ``0`` (the depot) separating routes; leading,
            trailing and repeated zeros (padding) are allowed.
        num_nodes: nodes per instance ``N`` (node ``b * N + v`` is node ``v`` of
            instance ``b`` in the returned indices).

        drop_padding: drop ``depot -> depot`` arcs. :func:`route_quantities`
            ignores them anyway, and keeping them avoids a data-dependent shape.

    Returns:
        ``[2, E]`` route arcs in route order, for :func:`route_quantities` with
        ``batch = arange(B).repeat_interleave(N)``.
    """
    b = tours.size(0)
    zero = tours.new_zeros(b, 1)
    closed = torch.cat([zero, tours, zero], dim=1)
    src, dst = closed[:, :-1], closed[:, 1:]
    offset = (torch.arange(b, device=tours.device) * num_nodes).unsqueeze(1)
    edge_index = torch.stack([(src + offset).reshape(-1), (dst + offset).reshape(-1)])
    if drop_padding:
        edge_index = edge_index[:, ~((src == 0) & (dst == 0)).reshape(-1)]
    return edge_index


def edge_index_from_successors(succ: Tensor) -> Tensor:
    """Flat route arcs from dense successor arrays (DACT-style, with dummy depots).

    Args:
        succ: ``[B, M]`` successor of every node; depots (and dummy depot copies)
            have one successor each, so the arrays describe one giant cycle per
            instance. Routes are ordered by the index of the depot opening them.
    """
    b, m = succ.shape
    offset = (torch.arange(b, device=succ.device) * m).unsqueeze(1)
    src = torch.arange(m, device=succ.device).expand(b, m) + offset
    return torch.stack([src.reshape(-1), (succ + offset).reshape(-1)])


def dense_route_quantities(pos: Tensor, tours: Tensor) -> RouteQuantities:
    """Route quantities for a dense batch: ``pos [B, N, 2]`` and giant ``tours [B, L]``.

    Returns flat ``[B * N]`` tensors (reshape with ``.view(B, N)``); route ids are
    unique over the batch.
    """
    b, n, _ = pos.shape
    edge_index = edge_index_from_tours(tours, n, drop_padding=False)
    batch = torch.arange(b, device=pos.device).repeat_interleave(n)
    depot_mask = torch.zeros(b, n, dtype=torch.bool, device=pos.device)
    depot_mask[:, 0] = True
    return route_quantities(pos.reshape(b * n, 2), edge_index, depot_mask.view(-1),
                            batch, b)
