"""Batched cost and feasibility of solutions given as route arcs.

All functions work on flat tensors (a single instance or a PyG ``Batch``) and
are vectorized over nodes, routes and instances. Feasibility is computed in
float64 so that a solution that is exactly on a time-window boundary (common in
benchmark best-known solutions) is not rejected by rounding noise.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.utils import scatter

from pyg_routing.data.route_quantities import pointer_jump

#: Distance rounding conventions (stored per instance as an integer code).
ROUND_NONE, ROUND_NINT, ROUND_TRUNC1 = 0, 1, 2
ROUNDING_CODES = {"none": ROUND_NONE, "nint": ROUND_NINT, "trunc1": ROUND_TRUNC1}


def arc_lengths(pos: Tensor, src: Tensor, dst: Tensor,
                rounding: Tensor | None = None) -> Tensor:
    """Euclidean arc lengths ``[E]``, optionally rounded per arc.

    ``rounding`` (``[E]`` codes) selects TSPLIB ``nint`` (CVRPLib X) or the DIMACS
    convention of truncating to one decimal (Solomon, as in CVRPLib's VRPTW BKS).
    """
    length = (pos[dst] - pos[src]).norm(dim=-1)
    if rounding is None:
        return length
    nint = torch.floor(length + 0.5)
    # The tiny epsilon keeps exact multiples of 0.1 (perfect squares) from dropping.
    trunc1 = torch.floor(length * 10 + 1e-7) / 10
    return torch.where(rounding == ROUND_NINT, nint,
                       torch.where(rounding == ROUND_TRUNC1, trunc1, length))


def solution_cost(length: Tensor, src_graph: Tensor, num_graphs: int,
                  prize: Tensor | None = None, visited: Tensor | None = None,
                  batch: Tensor | None = None) -> Tensor:
    """Objective per instance ``[num_graphs]``: total route length, minus the
    collected prizes when ``prize``/``visited``/``batch`` (``[N]``) are given."""
    cost = scatter(length, src_graph, 0, dim_size=num_graphs, reduce="sum")
    if prize is not None:
        if visited is None or batch is None:
            raise ValueError("prize-collecting cost needs `visited` and `batch`")
        cost = cost - scatter(prize.to(cost.dtype) * visited.to(cost.dtype), batch, 0,
                              dim_size=num_graphs, reduce="sum")
    return cost


def route_loads(demand: Tensor, route_id: Tensor, route_pos: Tensor,
                num_routes: int, prefix: bool) -> Tensor:
    """Largest vehicle load on each route ``[R]``.

    With ``prefix=False`` (CVRP-style: all goods leave the depot) this is the sum
    of the route's demands. With ``prefix=True`` (pickup and delivery: signed
    demands, the vehicle leaves empty) it is the maximum running load.
    """
    on_route = route_id >= 0
    d = demand.to(torch.float64)[on_route]
    rid = route_id[on_route]
    if not prefix:
        return scatter(d, rid, 0, dim_size=num_routes, reduce="sum")
    if rid.numel() == 0:
        return d.new_zeros(num_routes)
    key = rid * (int(route_pos.max()) + 1) + route_pos[on_route]
    order = torch.argsort(key)
    d, rid = d[order], rid[order]
    running = torch.cumsum(d, 0)
    before_route = scatter(d, rid, 0, dim_size=num_routes, reduce="sum")
    offset = torch.cumsum(before_route, 0) - before_route
    load = running - offset[rid]
    return scatter(load, rid, 0, dim_size=num_routes, reduce="max")


def service_start_times(edge_index: Tensor, depot_mask: Tensor, length: Tensor,
                        time_window: Tensor, service_time: Tensor) -> Tensor:
    """Earliest service start time of every node ``[N]`` (float64; waiting allowed).

    ``S_v = max(a_v, S_p + s_p + τ(p, v))`` along each route, with ``S`` at the
    depot equal to its window opening. Computed as a max-plus prefix scan by
    pointer jumping: each arc is the map ``t -> max(A, t + C)`` and two such maps
    compose to another one, so the recurrence needs only ``O(log L)`` rounds.
    Depots and unvisited nodes get ``-inf``.
    """
    n = depot_mask.numel()
    src, dst = edge_index[0], edge_index[1]
    tw = time_window.to(torch.float64)
    st = service_time.to(torch.float64)
    tau = length.to(torch.float64)
    into = ~depot_mask[dst]
    from_dep = depot_mask[src]
    parent = torch.full((n,), -1, dtype=torch.long, device=dst.device)
    inner = into & ~from_dep
    parent[dst[inner]] = src[inner]
    neg_inf = torch.full((n,), float("-inf"), dtype=torch.float64, device=dst.device)
    a = neg_inf.clone()
    c = neg_inf.clone()
    a[dst[into]] = tw[dst[into], 0]
    # Arcs between customers: t_v = max(a_v, t_p + s_p + tau).
    c[dst[inner]] = st[src[inner]] + tau[inner]
    # Route openings: a constant, departure at the depot's window opening.
    opening = into & from_dep
    a[dst[opening]] = torch.maximum(
        tw[dst[opening], 0], tw[src[opening], 0] + st[src[opening]] + tau[opening])

    def compose(mine: list[Tensor], anc: list[Tensor]) -> list[Tensor]:
        (a_v, c_v), (a_p, c_p) = mine, anc
        return [torch.maximum(a_v, a_p + c_v), c_p + c_v]

    start, _ = pointer_jump(parent, [a, c], compose, [float("-inf"), 0.0])
    return start
