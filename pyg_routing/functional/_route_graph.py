"""The structure of route graphs, for the graph encodings (Laplacian PE, RWSE).

The *route graph* of a solution is the undirected simple graph of its route arcs:
every route with ``m >= 2`` customers is a cycle ``0 - v_1 - ... - v_m - 0``
through the depot, a single-customer route is one pendant edge ``v - 0`` (the arcs
``0 -> v`` and ``v -> 0`` collapse), and unvisited customers (PCVRP) are isolated.
So each route graph is a "flower": cycles (petals) and pendant edges sharing the
depot, plus isolated nodes. Its whole structure is captured by the position of
each customer along its route and the size of every route, which is all that
:class:`RouteGraph` stores; the encodings never build an adjacency matrix.

On an instance with *open routes* (CVRP/VRPTW where the vehicle does not return) the
closing arc ``v_m -> 0`` is not travelled, so the route graph of an open route of
``m`` customers is the path ``0 - v_1 - ... - v_m`` (a "spider" of paths around the
depot). :attr:`RouteGraph.open_graph` marks such graphs; the structure stored is the
same (positions and sizes), only the closing edge is read as absent.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch
from torch import Tensor
from torch_geometric.data import Batch, Data

from pyg_routing.data.route_quantities import _in_route_order, _route_order, _take
from pyg_routing.errors import NoSolutionError, UnsupportedProblemError


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
    #: [B] bool, graphs of open routes (each route a path hanging from the depot, its
    #: closing arc dropped); ``None``: every route is closed
    open_graph: Tensor | None = None

    def with_open(self, open_routes: Tensor | bool | None) -> RouteGraph:
        """This graph with its routes open where ``open_routes`` (``[B]`` or one bool)
        says so; ``None`` or all False leaves it closed (the paper's route graph)."""
        if open_routes is None:
            return self._replace(open_graph=None)
        flags = torch.as_tensor(open_routes, dtype=torch.bool, device=self.batch.device)
        flags = flags.reshape(-1).expand(self.num_graphs) if flags.numel() == 1 \
            else flags.reshape(-1)
        if flags.numel() != self.num_graphs:
            raise ValueError(f"open_routes needs one flag per graph ({self.num_graphs}), "
                             f"got {flags.numel()}")
        return self._replace(open_graph=flags.clone() if bool(flags.any()) else None)

    def route_open(self) -> Tensor:
        """``[R]`` bool, True for the routes of open graphs."""
        if self.open_graph is None:
            return torch.zeros_like(self.route_size, dtype=torch.bool)
        return _take(self.open_graph, self.route_batch)

    def node_open(self) -> Tensor:
        """``[N]`` bool, True for the nodes of open graphs."""
        if self.open_graph is None:
            return torch.zeros_like(self.batch, dtype=torch.bool)
        return _take(self.open_graph, self.batch)

    @property
    def num_graphs(self) -> int:
        return self.ptr.numel() - 1

    @property
    def num_nodes(self) -> int:
        return self.batch.numel()

    def depot_degree(self) -> Tensor:
        """``[B]`` degree of each depot: 2 per cycle route, 1 per pendant or open route."""
        per_route = torch.where((self.route_size >= 2) & ~self.route_open(), 2, 1)
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
    if "num_depots" in data and bool((data.num_depots > 1).any()):
        # the graph of a multi-depot solution is one spider per depot: the closed forms
        # of the graph encodings are built for one
        raise UnsupportedProblemError(
            f"{name} is computed on the route graph around one depot; this solution has "
            f"{int(data.num_depots.max())} depots (several depots are not supported by "
            f"the graph encodings)")
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
@functools.lru_cache(maxsize=16)
def _walk_tables(walk_length: int, reflect: bool = False) -> tuple[Tensor, Tensor]:
    """Killed simple random walks on a path, ``[C + 1, C + 1, K + 1]`` float64 each
    (``K = walk_length``, ``C = K + 1``; index 0 unused).

    Start at distance ``a`` from one end and ``b`` from the other. The first end is
    the depot (absorbing); the other is the depot too (a cycle route cut open at
    the depot) or, with ``reflect``, the free end of an open route (a node of degree
    one, which the walk leaves towards the depot with probability 1). ``ret[a, b,
    t]``: at the start again after ``t`` steps without touching the depot;
    ``hit[a, b, t]``: first touches the depot at step ``t``. Distances ``>= C`` are
    out of reach within ``K`` steps (there and back for the free end), so clipping
    at ``C`` is exact.
    """
    c = walk_length + 1
    a = torch.arange(c + 1, dtype=torch.float64).view(-1, 1, 1)
    b = torch.arange(c + 1, dtype=torch.float64).view(1, -1, 1)
    x = torch.arange(2 * c + 1, dtype=torch.float64).view(1, 1, -1)
    end = a + b
    depot = ((x == 0) | ((x == end) & (not reflect))).double()
    interior = ((x > 0) & ((x < end) | ((x == end) & reflect))).double()
    # Mass leaving a node to each side: 1/2, except 1 towards the depot at a free end.
    free_end = ((x == end) & reflect & (end > 0)).double()
    left_share = 0.5 + 0.5 * free_end
    right_share = 0.5 * (1 - free_end)
    start = (x == a).double()
    prob = start * interior
    ret = torch.zeros(c + 1, c + 1, walk_length + 1, dtype=torch.float64)
    hit = torch.zeros_like(ret)
    for t in range(1, walk_length + 1):
        nxt = torch.zeros_like(prob)
        nxt[..., 1:] += (right_share * prob)[..., :-1]
        nxt[..., :-1] += (left_share * prob)[..., 1:]
        hit[..., t] = (nxt * depot).sum(-1)
        prob = nxt * interior
        ret[..., t] = (prob * start).sum(-1)
    return ret, hit


def _route_walk_tables(walk_length: int, reflect: bool) -> tuple[Tensor, Tensor, Tensor]:
    """``stay [T, K]``, ``through [T, K + 1]`` and ``excursion [C + 1, K + 1]`` of
    one route kind (cycles, or open paths with ``reflect``), see :func:`_rwse_tables`."""
    k, c = walk_length, walk_length + 1
    ret, hit = _walk_tables(walk_length, reflect)
    conv = torch.zeros_like(hit)
    for s in range(2, k + 1):
        conv[..., s] = (hit[..., 1:s] * hit[..., 1:s].flip(-1)).sum(-1)
    excursion = torch.zeros(c + 1, k + 1, dtype=torch.float64)
    if reflect:
        # d_v / d_0 is 1 / d_0 at the free end (b = 0); an excursion enters the
        # path's one end: route of m customers = start 1, free end at m - 1.
        conv[:, 0] *= 0.5
        excursion[1:, 1:] = hit[1, :c, :k]
    else:
        conv[1, 1] *= 0.5
        excursion[1:, 1:] = 2 * hit[1, 1:, :k]   # enter at either end, back at step l
        excursion[1] = conv[1, 1] * 2            # pendant: 0 -> v -> 0 (one entry)
    return ret[..., 1:].reshape(-1, k), conv.reshape(-1, k + 1), excursion


@functools.lru_cache(maxsize=8)
def _rwse_tables(walk_length: int, with_open: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    """Tables indexed by node type: ``a (C + 1) + b`` on cycle routes and
    ``T + a (C + 1) + b`` on open routes (``T = (C + 1)^2``), ``a, b <= C = K + 1``:

    * ``stay [2T, K]``: closed walks that never touch the depot;
    * ``through [2T, K + 1]``: ``Σ_{t1 + t3 = s}`` first hit at ``t1`` times first
      hit at ``t3`` (the last entry, reversed), still to be convolved with the
      depot returns and scaled by ``d_v / d_0``;
    * ``excursion [2 (C + 1), K + 1]``: law of a depot-to-depot excursion into a
      cycle (first ``C + 1`` rows) or an open route (last ``C + 1``) of ``min(m, C)``
      customers, before the ``1 / d_0`` of choosing its entry.

    A cycle customer at position ``j`` of ``m`` has type ``(j, m + 1 - j)``
    (clipped). Type ``(1, 1)``, impossible for a cycle, is the pendant customer
    (``0 -> v -> 0``, with ``d_v / d_0 = 1 / d_0``: half the cycle scale); types
    with ``a = 0`` (depot, isolated) are all zero. An open-route customer has type
    ``(j, m - j)``: distance to the depot and to the free end (a single-customer
    open route is the pendant, ``(1, 0)``). Without ``with_open`` only the cycle
    tables are built (the paper's route graphs keep their exact arithmetic).
    """
    parts = [_route_walk_tables(walk_length, reflect)
             for reflect in ((False, True) if with_open else (False,))]
    return tuple(torch.cat(tables) for tables in zip(*parts, strict=True))


def rwse(rg: RouteGraph, walk_length: int, dtype: torch.dtype) -> Tensor:
    """``[N, walk_length]`` return probabilities ``(R^t)_{vv}``, ``t = 1..K``.

    Closed walks from a customer at position ``j`` of a cycle route (``M = m + 1``)
    either stay on the route (``stay``, a function of ``(j, M - j)`` clipped at
    ``C``) or first hit the depot at ``t_1``, loop depot-to-depot for ``t_2`` and
    come back at ``t_3``: by reversibility the last part is the first part
    reversed times ``d_v / d_0 = 2 / d_0`` (``1 / d_0`` at a pendant or an open
    route's free end). An open route's walks reflect at its free end. The depot
    loops ``P_0(t)`` follow from the excursion law ``E(l)`` of each graph:
    ``P_0 = 1 / (1 - E)`` as power series. Isolated nodes get 0 (as ``R`` has a zero row there).
    """
    device = rg.batch.device
    k, c, b = walk_length, walk_length + 1, rg.num_graphs
    kinds = 1 if rg.open_graph is None else 2
    stay, through, excursion = (t.to(device, dtype)
                                for t in _rwse_tables(walk_length, kinds == 2))
    d0 = rg.depot_degree().clamp(min=1).to(dtype)
    # Depot excursions: histogram of clipped route sizes (open routes apart) per graph.
    rows = kinds * (c + 1)
    hist = torch.zeros(b * rows, dtype=dtype, device=device).index_add_(
        0, rg.route_batch * rows + rg.route_open().long() * (c + 1)
        + rg.route_size.clamp(max=c),
        torch.ones(rg.route_size.numel(), dtype=dtype, device=device)).view(b, rows)
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
    # Node type a (C + 1) + b with a = min(j, C), b = min(m + 1 - j, C) (open routes:
    # T + a (C + 1) + min(m - j, C)); row type B + g.
    j = rg.route_pos
    opened = rg.node_open().long()
    row = torch.sub(rg.node_route_size(), j).add_(1 - opened).clamp_(max=c)
    row.add_(j.clamp(0, c), alpha=c + 1).add_(opened, alpha=(c + 1) ** 2).mul_(b).add_(rg.batch)
    out = _take(per_type.view(-1, k), row)
    out[rg.depot] = ret0[:, k + 1:]
    return out
