"""Batched constructive heuristics: starting solutions for improvement methods.

Every heuristic takes a dense :class:`RoutingInstances` (``B`` instances of ``N``
nodes) and returns *giant tours* ``[B, L]`` (long node ids): ``0`` (the depot)
separates routes, every tour starts and ends with ``0`` and is padded with
trailing zeros to the batch's common length ``L``. This is the format of
:func:`~pyg_routing.data.route_quantities.edge_index_from_tours`.

The heuristics are vectorized over the batch: the only Python loops run over
construction *steps* (one node, or one pickup-delivery pair, per step), which
are inherently sequential. Each first validates its input
(:meth:`RoutingInstances.check`) and raises :class:`InvalidInstanceError` for a
malformed batch or an unsupported problem.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from pyg_routing.data.dense_rows import take_rows
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.errors import InfeasibleSolutionError, InvalidInstanceError


def _check_problem(name: str, instances: RoutingInstances, allowed: Sequence[Problem]) -> None:
    """The heuristic supports the problem, and the instances are valid
    (:meth:`RoutingInstances.check`); else :class:`InvalidInstanceError`."""
    if instances.problem not in allowed:
        raise InvalidInstanceError(
            f"{name} does not support problem {Problem.parse(instances.problem).value!r}; "
            f"supported: {', '.join(p.value for p in allowed)}")
    instances.check()


def _dist_from(pos: Tensor, cur: Tensor) -> Tensor:
    """``[B, N]`` distance from node ``cur[b]`` to every node.

    Computed as ``norm(pos[v] - pos[cur])`` in ``pos``'s dtype, exactly like
    :meth:`RoutingData.check`, so time-window decisions taken here agree with it.
    """
    return (pos - take_rows(pos, cur).unsqueeze(1)).norm(dim=-1)


def _from(pos: Tensor, cur: Tensor, costs: Tensor | None) -> Tensor:
    """``[B, N]`` travel cost from ``cur[b]`` to every node."""
    return _dist_from(pos, cur) if costs is None else take_rows(costs, cur)


def _trim(tours: Tensor) -> Tensor:
    """Drop the all-padding columns: keep one closing ``0`` after the last customer."""
    cols = torch.arange(tours.size(1), device=tours.device)
    last = torch.where(tours != 0, cols, torch.zeros_like(cols)).amax(dim=1)
    length = int(last.max()) + 2 if tours.numel() else 2
    if length > tours.size(1):
        tours = torch.cat([tours, tours.new_zeros(tours.size(0), length - tours.size(1))], 1)
    return tours[:, :length].contiguous()


NN_PROBLEMS = (Problem.TSP, Problem.CVRP, Problem.VRPTW, Problem.PCVRP, Problem.PDTSP)


def nearest_neighbor(instances: RoutingInstances) -> Tensor:
    """Nearest-neighbour tours: always drive to the nearest *admissible* customer,
    back to the depot when there is none.

    A customer is admissible when it is unvisited and

    * fits the remaining capacity (CVRP, VRPTW, PCVRP);
    * VRPTW: service can start before its window closes and the depot can still
      be reached before it closes afterwards;
    * PCVRP: its prize exceeds the detour ``c(cur, i) + c(i, 0) - c(cur, 0)``
      (so PCVRP tours may skip customers, or be empty: ``[0, 0]``);
    * PDTSP: it is a pickup, or a delivery whose pickup is already visited.

    TSP and PDTSP build one route (there is always an admissible customer).

    Args:
        instances: ``B`` instances with ``N`` nodes.

    Returns:
        ``[B, L]`` long giant tours.

    Raises:
        InfeasibleSolutionError: a customer that no route from the depot can serve
            (VRPTW with a window that cannot be met).
    """
    _check_problem("nearest_neighbor", instances, NN_PROBLEMS)
    prob = instances.problem
    pos = instances.pos
    b, n = pos.shape[:2]
    device = pos.device
    rows = torch.arange(b, device=device)
    f64 = torch.float64
    visited = torch.zeros(b, n, dtype=torch.bool, device=device)
    visited[:, 0] = True
    done = torch.zeros(b, dtype=torch.bool, device=device)
    cur = torch.zeros(b, dtype=torch.long, device=device)
    costs = instances.travel.matrix_or_none()
    # Return to the depot from each node (Euclidean: |pos[0] - pos[i]|, both ways).
    d0 = (_dist_from(pos, cur) if costs is None else costs[:, :, 0]).to(f64)  # [B, N]
    # Open routes never return: the depot's closing time does not bind.
    returns = None if instances.open_routes is None else ~instances.open_routes
    inf = torch.tensor(float("inf"), dtype=pos.dtype, device=device)

    capacitated = prob.has_capacity and instances.demand is not None
    if capacitated:
        demand = instances.demand.to(f64)
        cap = instances.capacity.to(f64).reshape(b, 1)
        load = torch.zeros(b, dtype=f64, device=device)
    timed = prob.has_time_windows
    if timed:
        tw = instances.time_window.to(f64)
        st = instances.service_time.to(f64)
        depot_open, depot_close = tw[:, 0, 0], tw[:, 0, 1:]
        time = depot_open.clone()                       # service start at `cur`
    if prob.has_prizes:
        prize = instances.prize.to(f64)
    pickup_of = None                                   # [N]: pickup of each delivery, or -1
    if prob.has_pairs:
        pairs = instances.pickup_delivery_index.to(device)
        pickup_of = torch.full((n,), -1, dtype=torch.long, device=device)
        pickup_of[pairs[1]] = pairs[0]

    steps = [cur]
    # <= N - 1 visits, <= N - 1 returns and one padding step that ends each row.
    for _ in range(2 * n + 1):
        dcur = _from(pos, cur, costs)
        admissible = ~visited & ~done.unsqueeze(1)
        if capacitated:
            admissible &= load.unsqueeze(1) + demand <= cap
        if timed:
            depart = time + st[rows, cur]
            arrival = torch.maximum(tw[..., 0], depart.unsqueeze(1) + dcur.to(f64))
            back_ok = arrival + st + d0 <= depot_close
            if returns is not None:
                back_ok |= ~returns.unsqueeze(1)
            admissible &= (arrival <= tw[..., 1]) & back_ok
        if prob.has_prizes:
            detour = dcur.to(f64) + d0 - d0[rows, cur].unsqueeze(1)
            admissible &= prize > detour
        if pickup_of is not None:
            pickup_done = visited.index_select(1, pickup_of.clamp(min=0))      # [B, N]
            admissible &= (pickup_of < 0) | pickup_done
        has = admissible.any(dim=1)
        nxt = torch.where(admissible, dcur, inf).argmin(dim=1)
        nxt = torch.where(has, nxt, torch.zeros_like(nxt))                   # else: depot
        # At the depot with nothing admissible, the row is finished.
        done = done | (~has & (cur == 0))
        visited[rows, nxt] = True
        if capacitated:
            load = torch.where(has, load + demand[rows, nxt], torch.zeros_like(load))
        if timed:
            time = torch.where(has, arrival[rows, nxt], depot_open)
        cur = nxt
        steps.append(nxt)
        if bool(done.all()):
            break

    if not prob.has_prizes and not bool(visited.all()):
        bad = torch.nonzero(~visited.all(dim=1)).flatten().tolist()
        node = int(torch.nonzero(~visited[bad[0]])[0])
        raise InfeasibleSolutionError(
            f"instance(s) {bad[:10]}: no route from the depot can serve some customers "
            f"(first: instance {bad[0]}, node {node})")
    return _trim(torch.stack(steps, dim=1))


SWEEP_ORDERS = ("nearest", "angle")


def sweep(instances: RoutingInstances, order: str = "nearest") -> Tensor:
    """Sweep heuristic (CVRP): customers in increasing depot angle
    ``atan2(y - y0, x - x0)`` are cut into routes, a new route starting whenever
    the next customer would exceed the capacity.

    Args:
        instances: ``B`` CVRP instances.
        order: how each route visits its customers: ``"nearest"`` (nearest
            neighbour from the depot within the route's cluster; much shorter) or
            ``"angle"`` (the sweep order itself).

    Returns:
        ``[B, L]`` long giant tours.
    """
    _check_problem("sweep", instances, (Problem.CVRP,))
    if order not in SWEEP_ORDERS:
        raise ValueError(f"unknown sweep order {order!r}; choose from {SWEEP_ORDERS}")
    pos = instances.pos
    b, n = pos.shape[:2]
    rel = pos[:, 1:] - pos[:, :1]
    theta = torch.atan2(rel[..., 1], rel[..., 0])                           # [B, n]
    by_angle = torch.argsort(theta, dim=1, stable=True) + 1                 # customer ids
    demand = instances.demand.to(torch.float64).gather(1, by_angle)
    cap = instances.capacity.to(torch.float64).reshape(b)
    load = torch.zeros(b, dtype=torch.float64, device=pos.device)
    cuts = []
    for k in range(n - 1):
        # Greedy cut with reset: sequential by nature, vectorized over the batch.
        total = load + demand[:, k]
        cut = total > cap
        cuts.append(cut)
        load = torch.where(cut, demand[:, k], total)
    cut = torch.stack(cuts, dim=1) if cuts else by_angle.new_zeros(b, 0, dtype=torch.bool)
    cluster = torch.full((b, n), -1, dtype=torch.long, device=pos.device)
    cluster.scatter_(1, by_angle, torch.cumsum(cut.long(), dim=1))
    rank = None
    if order == "angle":
        rank = torch.zeros(b, n, dtype=pos.dtype, device=pos.device)
        rank.scatter_(1, by_angle, torch.arange(1, n, dtype=pos.dtype,
                                                device=pos.device).expand(b, -1))
    return _route_clusters(pos, cluster, rank, instances.travel.matrix_or_none())


def _route_clusters(pos: Tensor, cluster: Tensor, rank: Tensor | None = None,
                    costs: Tensor | None = None) -> Tensor:
    """Giant tours serving clusters ``0, 1, ...`` in turn, one route each.
    ``cluster [B, N]`` (-1 at the depot) must number each instance's non-empty
    clusters consecutively. A route visits its cluster in increasing ``rank``
    ``[B, N]`` or, without one, in nearest-neighbour order from the depot."""
    b, n = cluster.shape
    rows = torch.arange(b, device=pos.device)
    num_clusters = cluster.amax(dim=1) + 1
    visited = cluster < 0
    current = torch.zeros(b, dtype=torch.long, device=pos.device)
    cur = torch.zeros(b, dtype=torch.long, device=pos.device)
    steps = [cur]
    for _ in range(2 * n):
        admissible = ~visited & (cluster == current.unsqueeze(1))
        has = admissible.any(dim=1)
        key = _from(pos, cur, costs) if rank is None else rank
        nxt = key.masked_fill(~admissible, float("inf")).argmin(dim=1)
        nxt = torch.where(has, nxt, torch.zeros_like(nxt))
        visited[rows, nxt] = True
        # An exhausted cluster sends the vehicle home; the next route serves the next.
        current = current + (~has).long()
        cur = nxt
        steps.append(nxt)
        if bool((current >= num_clusters).all()):
            break
    return _trim(torch.stack(steps, dim=1))


def tours_to_routes(tours: Tensor) -> list[list[list[int]]]:
    """Giant tours ``[B, L]`` to one list of routes (customer ids) per instance."""
    out: list[list[list[int]]] = []
    for row in tours.tolist():
        routes: list[list[int]] = []
        route: list[int] = []
        for v in [*row, 0]:
            if v:
                route.append(v)
            elif route:
                routes.append(route)
                route = []
        out.append(routes)
    return out


def routes_to_tours(routes: Sequence[Sequence[Sequence[int]]], length: int | None = None,
                    device: torch.device | str | None = None) -> Tensor:
    """One list of routes per instance to giant tours ``[B, L]``.

    Args:
        routes: e.g. ``[[[1, 3], [2]], [[2, 1]]]`` (depot omitted).
        length: pad to this ``L`` (default: the longest tour).
        device: device of the result.

    Raises:
        ValueError: ``length`` is shorter than a tour.
    """
    rows = []
    for inst_routes in routes:
        row = [0]
        for route in inst_routes:
            row.extend(int(v) for v in route)
            row.append(0)
        rows.append(row if len(row) > 1 else [0, 0])
    longest = max((len(r) for r in rows), default=2)
    size = longest if length is None else int(length)
    if size < longest:
        raise ValueError(f"length {size} is shorter than the longest tour ({longest})")
    return torch.tensor([r + [0] * (size - len(r)) for r in rows], dtype=torch.long,
                        device=device).reshape(len(rows), size)
