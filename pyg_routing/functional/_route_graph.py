"""The structure of route graphs, for the graph encodings (Laplacian PE, RWSE).

The *route graph* of a solution is the undirected simple graph of its route arcs:
every route with ``m >= 2`` customers is a cycle ``0 - v_1 - ... - v_m - 0``
through the depot, a single-customer route is one pendant edge ``v - 0`` (the arcs
``0 -> v`` and ``v -> 0`` collapse), and unvisited customers (PCVRP) are isolated.
So each route graph is a "flower": cycles (petals) and pendant edges sharing the
depot, plus isolated nodes. Its whole structure is captured by the position of
each customer along its route and the size of every route, which is all that
:class:`RouteGraph` stores; the encodings never build an adjacency matrix.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch
from torch import Tensor
from torch_geometric.data import Batch, Data

from pyg_routing.data.route_quantities import _in_route_order, _route_order, _take
from pyg_routing.errors import NoSolutionError


class RouteGraph(NamedTuple):
    """Per-node and per-route structure of ``B`` route graphs with ``N`` nodes and
    ``R`` routes in all (nodes grouped by graph, as in a PyG ``Batch``).

    Route ids are grouped by graph (``route_batch`` is non-decreasing), so the
    ``q``-th route of graph ``b`` has id ``route_ptr[b] + q``.
    """

    batch: Tensor        # [N] long, graph of each node
    ptr: Tensor          # [B + 1] long, first node of each graph and N
    depot: Tensor        # [B] long, the depot node of each graph
    route_pos: Tensor    # [N] long, 1..m along the route; 0 depot; -1 unvisited
    route_id: Tensor     # [N] long, route of each visited customer; -1 otherwise
    route_size: Tensor   # [R] long, customers on each route (m >= 1)
    route_batch: Tensor  # [R] long, graph of each route
    route_ptr: Tensor    # [B + 1] long, first route id of each graph and R

    @property
    def num_graphs(self) -> int:
        return self.ptr.numel() - 1

    @property
    def num_nodes(self) -> int:
        return self.batch.numel()

    def depot_degree(self) -> Tensor:
        """``[B]`` degree of each depot: 2 per cycle route, 1 per pendant route."""
        per_route = torch.where(self.route_size >= 2, 2, 1)
        return torch.zeros(self.num_graphs, dtype=torch.long, device=self.batch.device
                           ).index_add_(0, self.route_batch, per_route)

    def node_route_size(self) -> Tensor:
        """``[N]`` size ``m`` of each customer's route (0 for depots and unvisited)."""
        sizes = torch.cat([self.route_size, self.route_size.new_zeros(1)])
        rid = torch.where(self.route_id >= 0, self.route_id, self.route_size.numel())
        return _take(sizes, rid)


def _ptr_of(batch: Tensor | None, num_nodes: int, num_graphs: int | None) -> Tensor:
    device = batch.device if batch is not None else None
    if batch is None:
        return torch.tensor([0, num_nodes], device=device)
    if num_graphs is None:
        num_graphs = int(batch.max()) + 1 if batch.numel() else 0
    counts = torch.bincount(batch, minlength=num_graphs)
    return torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])


def _finish(batch: Tensor, ptr: Tensor, depot: Tensor, route_pos: Tensor, route_id: Tensor,
            route_size: Tensor, route_batch: Tensor) -> RouteGraph:
    """Renumber routes graph by graph (when needed) and add ``route_ptr``."""
    num_graphs = ptr.numel() - 1
    r = route_size.numel()
    if r > 1 and not bool((route_batch[1:] >= route_batch[:-1]).all()):
        perm = torch.argsort(route_batch, stable=True)
        new_id = torch.empty_like(perm).index_copy_(0, perm, torch.arange(r, device=perm.device))
        route_id = torch.where(route_id >= 0, _take(new_id, route_id.clamp(min=0)), -1)
        route_size, route_batch = _take(route_size, perm), _take(route_batch, perm)
    counts = torch.bincount(route_batch, minlength=num_graphs)
    route_ptr = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
    return RouteGraph(batch, ptr, depot, route_pos, route_id, route_size, route_batch,
                      route_ptr)


def route_graph(edge_index: Tensor, num_nodes: int | None = None, batch: Tensor | None = None,
                ptr: Tensor | None = None, depot_mask: Tensor | None = None) -> RouteGraph:
    """The route-graph structure of route arcs.

    Args:
        edge_index: ``[2, E]`` route arcs, every route as ``depot -> v_1 -> ... ->
            v_m -> depot`` (a ``RoutingData``'s or ``Batch``'s ``edge_index``).
            Any arc order is accepted (it is recovered by list ranking if needed);
            ``depot -> depot`` arcs are ignored.
        num_nodes: ``N`` (default: ``batch.numel()``, ``ptr[-1]`` or ``max + 1``).
        batch: ``[N]`` graph of each node, sorted (PyG convention).
        ptr: ``[B + 1]`` graph boundaries (alternative to ``batch``).
        depot_mask: ``[N]`` bool, True at the depots, exactly one per graph
            (default: the first node of each graph).

    Raises:
        ValueError: ``depot_mask`` does not mark exactly one node per graph.
    """
    device = edge_index.device
    if num_nodes is None:
        num_nodes = (batch.numel() if batch is not None else int(ptr[-1]) if ptr is not None
                     else int(edge_index.max()) + 1 if edge_index.numel() else 1)
    if ptr is None:
        ptr = _ptr_of(batch, num_nodes, None).to(device)
    if batch is None:
        batch = torch.repeat_interleave(torch.arange(ptr.numel() - 1, device=device),
                                        ptr.diff(), output_size=num_nodes)
    if depot_mask is None:
        depot = ptr[:-1]
        depot_mask = torch.zeros(num_nodes, dtype=torch.bool, device=device)
        depot_mask[depot] = True
    else:
        depot = torch.nonzero(depot_mask).flatten()
        if depot.numel() != ptr.numel() - 1 or not torch.equal(
                _take(batch, depot), torch.arange(depot.numel(), device=device)):
            raise ValueError("depot_mask must mark exactly one depot per graph")
    src, dst = edge_index[0], edge_index[1]
    from_depot, to_depot = _take(depot_mask, src), _take(depot_mask, dst)
    if not _in_route_order(src, dst, to_depot):
        order = _route_order(src, dst, from_depot, to_depot, num_nodes)
        src, dst = _take(src, order), _take(dst, order)
        from_depot, to_depot = _take(from_depot, order), _take(to_depot, order)
    # Arcs now come route by route: the q-th closing arc closes the q-th route,
    # and a customer's position is its arc's offset from the route's opening arc.
    into = ~to_depot
    opening = torch.nonzero(from_depot & into).flatten()                       # [R]
    closing = torch.nonzero(to_depot & ~from_depot).flatten()
    route_size = closing - opening
    route_batch = _take(batch, _take(dst, opening))
    route_no = torch.cumsum((from_depot & into).long(), 0).sub_(1)
    hops = torch.arange(1, src.numel() + 1, device=device).sub_(
        _take(opening, route_no.clamp(min=0)))
    # One scatter of (route << 32 | position) to the customers; depot-bound arcs
    # go to the trash slot N.
    packed = torch.full((num_nodes + 1,), -1, dtype=torch.long, device=device).index_copy_(
        0, torch.where(into, dst, num_nodes), route_no.bitwise_left_shift_(32).add_(hops))
    packed = packed[:num_nodes]
    route_id = packed >> 32                                                     # -1 stays -1
    route_pos = torch.where(packed >= 0, packed & 0xFFFFFFFF, depot_mask.long() - 1)
    return _finish(batch, ptr, depot, route_pos, route_id, route_size, route_batch)


def as_route_graph(graph: Tensor | RouteGraph, num_nodes: int | None = None,
                   batch: Tensor | None = None, ptr: Tensor | None = None,
                   depot_mask: Tensor | None = None) -> RouteGraph:
    """``graph`` itself when it is a :class:`RouteGraph`, else :func:`route_graph`
    of the ``[2, E]`` arcs (what the public graph encodings accept)."""
    if isinstance(graph, RouteGraph):
        return graph
    return route_graph(graph, num_nodes, batch, ptr, depot_mask)


def route_graph_from_data(data: Data, name: str = "this encoding") -> RouteGraph:
    """The route graph of a ``RoutingData`` or a ``Batch`` of them.

    Uses the stored ``route_pos`` / ``route_index`` when present (no arc
    traversal at all), else the route arcs ``edge_index``.

    Raises:
        NoSolutionError: ``data`` has no solution (no ``edge_index``).
    """
    if "edge_index" not in data or data.edge_index is None:
        raise NoSolutionError(
            f"{name} needs a solution (route arcs); build one with "
            f"RoutingData.from_routes(instance, routes)")
    n = data.num_nodes
    device = data.edge_index.device
    if isinstance(data, Batch):
        batch, ptr = data.batch, data.ptr
    else:
        batch = torch.zeros(n, dtype=torch.long, device=device)
        ptr = torch.tensor([0, n], device=device)
    if "route_pos" not in data or "route_index" not in data or "num_routes" not in data:
        return route_graph(data.edge_index, n, batch, ptr)
    nodes, rid = data.route_index[0], data.route_index[1]
    r = int(data.num_routes.sum())
    route_size = torch.bincount(rid, minlength=r)
    route_id = torch.full((n,), -1, dtype=torch.long, device=device).index_copy_(0, nodes, rid)
    # Every customer of a route writes the same graph id, so duplicates are harmless.
    route_batch = torch.zeros(r, dtype=torch.long, device=device).index_copy_(
        0, rid, _take(batch, nodes))
    return _finish(batch, ptr, ptr[:-1], data.route_pos, route_id, route_size, route_batch)


# ----------------------------------------------------------------------------- RWSE
@functools.lru_cache(maxsize=8)
def _walk_tables(walk_length: int) -> tuple[Tensor, Tensor]:
    """Killed simple random walks on a path, ``[C + 1, C + 1, K + 1]`` float64 each
    (``K = walk_length``, ``C = K + 1``; index 0 unused).

    Start at distance ``a`` from one end and ``b`` from the other (both ends are
    the depot, absorbing). ``ret[a, b, t]``: at the start again after ``t`` steps
    without touching an end; ``hit[a, b, t]``: first touches an end at step ``t``.
    Distances ``>= C`` are out of reach within ``K`` steps, so clipping at ``C`` is
    exact.
    """
    c = walk_length + 1
    a = torch.arange(c + 1, dtype=torch.float64).view(-1, 1, 1)
    b = torch.arange(c + 1, dtype=torch.float64).view(1, -1, 1)
    x = torch.arange(2 * c + 1, dtype=torch.float64).view(1, 1, -1)
    end = a + b
    interior = ((x > 0) & (x < end)).double()
    at_end = ((x == 0) | (x == end)).double()
    start = (x == a).double()
    prob = start * interior
    ret = torch.zeros(c + 1, c + 1, walk_length + 1, dtype=torch.float64)
    hit = torch.zeros_like(ret)
    for t in range(1, walk_length + 1):
        nxt = torch.zeros_like(prob)
        nxt[..., 1:] += 0.5 * prob[..., :-1]
        nxt[..., :-1] += 0.5 * prob[..., 1:]
        hit[..., t] = (nxt * at_end).sum(-1)
        prob = nxt * interior
        ret[..., t] = (prob * start).sum(-1)
    return ret, hit


@functools.lru_cache(maxsize=8)
def _rwse_tables(walk_length: int) -> tuple[Tensor, Tensor, Tensor]:
    """Tables indexed by node type ``a (C + 1) + b``, ``a, b <= C = K + 1``:

    * ``stay [T, K]``: closed walks that never touch the depot;
    * ``through [T, K + 1]``: ``Σ_{t1 + t3 = s}`` first hit at ``t1`` times first
      hit at ``t3`` (the last entry, reversed), still to be convolved with the
      depot returns and scaled by ``d_v / d_0``;
    * ``excursion [C + 1, K + 1]``: law of a depot-to-depot excursion into a route
      of ``min(m, C)`` customers, before the ``1 / d_0`` of choosing its entry.

    A cycle customer at position ``j`` of ``m`` has type ``(j, m + 1 - j)``
    (clipped). Type ``(1, 1)``, impossible for a cycle, is the pendant customer
    (``0 -> v -> 0``, with ``d_v / d_0 = 1 / d_0``: half the cycle scale); types
    with ``a = 0`` (depot, isolated) are all zero.
    """
    k, c = walk_length, walk_length + 1
    ret, hit = _walk_tables(walk_length)
    conv = torch.zeros_like(hit)
    for s in range(2, k + 1):
        conv[..., s] = (hit[..., 1:s] * hit[..., 1:s].flip(-1)).sum(-1)
    conv[1, 1] *= 0.5
    excursion = torch.zeros(c + 1, k + 1, dtype=torch.float64)
    excursion[1:, 1:] = 2 * hit[1, 1:, :k]       # enter at either end, back at step l
    excursion[1] = conv[1, 1] * 2                # pendant: 0 -> v -> 0 (one entry)
    return ret[..., 1:].reshape(-1, k), conv.reshape(-1, k + 1), excursion


def rwse(rg: RouteGraph, walk_length: int, dtype: torch.dtype) -> Tensor:
    """``[N, walk_length]`` return probabilities ``(R^t)_{vv}``, ``t = 1..K``.

    Closed walks from a customer at position ``j`` of a cycle route (``M = m + 1``)
    either stay on the route (``stay``, a function of ``(j, M - j)`` clipped at
    ``C``) or first hit the depot at ``t_1``, loop depot-to-depot for ``t_2`` and
    come back at ``t_3``: by reversibility the last part is the first part
    reversed times ``d_v / d_0 = 2 / d_0``. The depot loops ``P_0(t)`` follow
    from the excursion law ``E(l)`` of each graph: ``P_0 = 1 / (1 - E)`` as power
    series. Isolated nodes get 0 (as ``R`` has a zero row there).
    """
    device = rg.batch.device
    k, c, b = walk_length, walk_length + 1, rg.num_graphs
    stay, through, excursion = (t.to(device, dtype) for t in _rwse_tables(walk_length))
    d0 = rg.depot_degree().clamp(min=1).to(dtype)
    # Depot excursions: histogram of clipped route sizes per graph.
    hist = torch.zeros(b * (c + 1), dtype=dtype, device=device).index_add_(
        0, rg.route_batch * (c + 1) + rg.route_size.clamp(max=c),
        torch.ones(rg.route_size.numel(), dtype=dtype, device=device)).view(b, c + 1)
    exc = hist @ excursion / d0.unsqueeze(1)                                    # [B, K + 1]
    ret0 = torch.zeros(b, 2 * k + 1, dtype=dtype, device=device)               # K zeros, P_0
    ret0[:, k] = 1
    for t in range(1, k + 1):
        ret0[:, k + t] = (exc[:, 1:t + 1] * ret0[:, k:k + t].flip(1)).sum(1)
    # toeplitz[s, b, t - 1] = P_0(t - s) * 2 / d_0 (0 for s > t): windows of the
    # padded series. One GEMM gives every (type, graph) row: [T, K+1+K] @ [K+1+K, B K]
    # (the identity block adds the graph-independent ``stay``).
    toeplitz = ret0[:, 1:].unfold(1, k, 1).flip(1) * (2 / d0).view(-1, 1, 1)  # [B, K+1, K]
    rhs = torch.cat([toeplitz.transpose(0, 1).reshape(k + 1, b * k),
                     torch.eye(k, dtype=dtype, device=device).repeat(1, b)])
    per_type = torch.cat([through, stay], 1) @ rhs                              # [T, B K]
    # Node type a (C + 1) + b with a = min(j, C), b = min(m + 1 - j, C); row type B + g.
    j = rg.route_pos
    row = torch.sub(rg.node_route_size(), j).add_(1).clamp_(max=c)
    row.add_(j.clamp(0, c), alpha=c + 1).mul_(b).add_(rg.batch)
    out = _take(per_type.view(-1, k), row)
    out[rg.depot] = ret0[:, k + 1:]
    return out
