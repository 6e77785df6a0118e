"""Several depots in DACT's giant cycle (multi-depot CVRP, ``D`` depots, nodes ``0 .. D-1``).

The state keeps its single-depot layout (``M = K + C`` nodes: ``K`` depot copies, then the
``C`` customers; state node ``m >= K`` is original node ``m - K + D``), and each copy
belongs to one depot (``copy_depot [B, K]``) and sits at its coordinates. A route is the
run of customers between two consecutive copies on the cycle; travel costs come from a
matrix whose copy-to-copy entries are 0, so runs without customers (empty routes, and
the passage from one depot's copies to the next depot's) cost nothing.

**Which moves exist.** Every 2-opt move of the single-depot environment, provided that
every route it creates is bounded by two copies of ONE depot (or has no customer): a
route leaves from and returns to its own depot. A move replaces two arcs and reverses
the path between them; the runs entirely inside or outside that path keep their pair of
bounding copies, so only the two runs through the new arcs need a test
(:func:`depot_move_mask`). Moves that exchange route tails between routes of the same
depot, move customers to an empty route of any depot (a copy pair of that depot), or
reverse a stretch of whole routes are allowed; a move that would let a route end at
another depot than it left is masked.

**Start.** Every customer goes to the depot with the cheapest out-and-back trip; the
customers of each depot are ordered by the initial-solution rule (``sweep``: angle about
their depot; ``first_fit``: index; ``random``) and cut greedily by capacity, or
(``nearest_neighbor``) visited from the depot, each time the nearest customer of that
depot that still fits, back to the depot when none does. The cycle
lists the depots in turn: for each, a copy before each of its routes, then its
``extra`` spare copies (empty routes it can open later); rows with fewer routes than the
batch's largest add spare copies to the first depots with vehicles left. A depot's
copies never outnumber its vehicles (``depot_vehicles``), so no route can open beyond them.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from pyg_routing.data.costs import asymmetric_rows
from pyg_routing.data.feasibility import CAPACITY_RTOL
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.envs.tours import cycle_cost, rank_from_order, succ_from_order
from pyg_routing.envs.two_opt.state import TwoOptState

#: initial-solution rules that order a depot's customers
MULTI_DEPOT_INITS = ("sweep", "nearest_neighbor", "first_fit", "random")


def multi_depot_start(instances: RoutingInstances, costs: Tensor, init: str, extra: int,
                      copies: int | None = None, generator: torch.Generator | None = None,
                      at_least: bool = False) -> tuple[Tensor, Tensor]:
    """``(order [B, M], copy_depot [B, K])`` of the start solutions (module docstring);
    ``costs``: the instances' ``[B, N, N]`` travel costs (``instances.travel.dense()``);
    ``copies``: the number of copies ``K`` asked for (``None``: as many as needed;
    ``at_least``: that many where the instances' vehicles allow, and at least the start's).

    Raises:
        ValueError: ``init`` without a multi-depot rule, ``copies`` below the copies the
            start needs, a start that needs more routes at a depot than its vehicles,
            or ``copies`` beyond the vehicles of an instance (naming it and the depot).
    """
    if init not in MULTI_DEPOT_INITS:
        raise ValueError(f"init={init!r} has no multi-depot rule; choose from "
                         f"{MULTI_DEPOT_INITS}")
    b, n = instances.pos.shape[:2]
    d = instances.num_depots
    c = n - d
    dev = instances.device
    costs = costs.double()
    trip = costs[:, :d, d:] + costs[:, d:, :d].transpose(1, 2)                 # [B, D, C]
    home = trip.argmin(1)                                                      # [B, C]
    limit = instances.capacity.double().reshape(b) * (1 + CAPACITY_RTOL)
    demand = instances.demand[:, d:].double()
    if init == "nearest_neighbor":
        sort, start = _nearest_neighbour(costs, home, demand, limit, d)
    else:
        if init == "sweep":
            rel = instances.pos[:, d:] - instances.pos.gather(
                1, home.unsqueeze(-1).expand(b, c, 2))
            key = (torch.atan2(rel[..., 1], rel[..., 0]).double() + math.pi) / (2 * math.pi + 1)
        elif init == "first_fit":
            key = torch.arange(c, device=dev, dtype=torch.float64).expand(b, c) / c
        else:
            key = torch.rand(b, c, generator=generator, dtype=torch.float64).to(dev)
        sort = torch.argsort(home.double() + key, dim=1, stable=True)          # [B, C]
        start = capacity_cuts(home.gather(1, sort), demand.gather(1, sort), limit)
    depot = home.gather(1, sort)                                               # sorted
    per_depot = torch.zeros(b, d, dtype=torch.long, device=dev)
    customers = per_depot.scatter_add(1, depot, torch.ones_like(depot))
    routes = per_depot.scatter_add(1, depot, start.long())
    vehicles = (torch.full((b, d), 1 << 30, dtype=torch.long, device=dev)     # no limit
                if instances.depot_vehicles is None else instances.depot_vehicles.long())
    if bool((routes > vehicles).any()):
        i, j = (int(x) for x in torch.nonzero(routes > vehicles)[0])
        raise ValueError(f"instance {i}: the start needs {int(routes[i, j])} routes at depot "
                         f"{j}, which has {int(vehicles[i, j])} vehicles")
    spare = torch.minimum(vehicles - routes, torch.full_like(routes, extra))
    needed = int((routes + spare).sum(1).max())
    fleet = int(vehicles.sum(1).min())          # a rate's copies stop at the vehicles
    k_total = needed if copies is None else max(min(int(copies), fleet), needed) \
        if at_least else int(copies)
    if k_total < needed:
        raise ValueError(f"num_depots={k_total} is below the {needed} depot copies the "
                         f"multi-depot start needs ({d} depots, {extra} spare each)")
    # rows with fewer copies fill the depots that have vehicles left, first ones first
    pad = k_total - (routes + spare).sum(1)
    room = vehicles - routes - spare
    take = torch.minimum((pad.unsqueeze(1) - (torch.cumsum(room, 1) - room)).clamp(min=0), room)
    if bool((take.sum(1) < pad).any()):
        raise ValueError(f"{k_total} depot copies exceed the vehicles of some instance's "
                         f"depots; search instances with vehicle limits one at a time")
    block = customers + routes + spare + take                                  # [B, D]
    base = torch.cumsum(block, 1) - block
    first = torch.cumsum(customers, 1) - customers
    opened = torch.cumsum(start.long(), 1)                                     # inclusive
    before = torch.cumsum(routes, 1) - routes
    k_idx = torch.arange(c, device=dev).expand(b, c)
    at = (base.gather(1, depot) + (k_idx - first.gather(1, depot))
          + (opened - before.gather(1, depot)))                                # cycle pos
    m = k_total + c
    # every copy belongs to the depot whose block holds it
    owner = torch.searchsorted(torch.cumsum(block, 1).contiguous(),
                               torch.arange(m, device=dev).expand(b, m).contiguous(),
                               right=True)
    is_copy = torch.ones(b, m, dtype=torch.bool, device=dev).scatter_(
        1, at, torch.zeros_like(at, dtype=torch.bool))
    # copies are numbered in cycle order, so copy r is the r-th copy position of a row
    order = torch.where(is_copy, torch.cumsum(is_copy.long(), 1) - 1, 0)
    order.scatter_(1, at, sort + k_total)                                      # customers
    return order, owner.masked_select(is_copy).view(b, k_total)


def capacity_cuts(depot: Tensor, need: Tensor, limit: Tensor) -> Tensor:
    """``[B, C]`` bool route starts of customers in visiting order: the first, and
    wherever the depot changes (``depot [B, C]``; all equal with one depot) or the
    vehicle would carry more than ``limit [B]``."""
    b, c = need.shape
    starts, load = [], torch.zeros(b, dtype=torch.float64, device=need.device)
    for k in range(c):          # sequential by nature; vectorized over the batch
        total = load + need[:, k]
        cut = (total > limit) | (depot[:, k] != depot[:, k - 1]) if k else \
            torch.ones(b, dtype=torch.bool, device=need.device)
        starts.append(cut)
        load = torch.where(cut, need[:, k], total)
    return torch.stack(starts, 1)


def _nearest_neighbour(costs: Tensor, home: Tensor, need: Tensor, limit: Tensor,
                       d: int) -> tuple[Tensor, Tensor]:
    """``(visit order [B, C] of customer indices, route starts [B, C])``: depot by
    depot, from the depot to the nearest customer of that depot that still fits, back
    to the depot when none does (one customer per step; vectorized over the batch)."""
    b, c = need.shape
    dev = need.device
    left = torch.ones(b, c, dtype=torch.bool, device=dev)
    here = torch.zeros(b, dtype=torch.long, device=dev)          # the node we stand at
    load = torch.zeros(b, dtype=torch.float64, device=dev)
    last_group = torch.full((b,), -1, dtype=torch.long, device=dev)
    mine_of = home.unsqueeze(-1) == torch.arange(d, device=dev)           # [B, C, D]
    rows = torch.arange(b, device=dev)
    order, starts = [], []
    big = torch.finfo(torch.float64).max
    for _ in range(c):
        open_depots = (mine_of & left.unsqueeze(-1)).any(1)         # depots with customers left
        group = torch.where(open_depots.any(1), open_depots.float().argmax(1), 0)
        mine = left & (home == group.unsqueeze(1))
        fits = mine & (load.unsqueeze(1) + need <= limit.unsqueeze(1))
        # a new route from the group's depot: at a new depot, or when nothing fits
        new = ~fits.any(1) | (group != last_group)
        last_group = group
        here = torch.where(new, group, here)
        load = torch.where(new, torch.zeros_like(load), load)
        dist = costs[rows, here][:, d:]
        pick = torch.where(fits & ~new.unsqueeze(1) | mine & new.unsqueeze(1), dist,
                           big).argmin(1)
        order.append(pick)
        starts.append(new)
        left[rows, pick] = False
        load = load + need[rows, pick]
        here = pick + d
    return torch.stack(order, 1), torch.stack(starts, 1)


def state_travel(instances: RoutingInstances, full: Tensor, copy_depot: Tensor
                 ) -> tuple[Tensor, Tensor]:
    """``(pos [B, M, 2], costs [B, M, M])`` of the state's nodes: each copy at its
    depot's coordinates with its depot's row and column of the instances' costs
    ``full [B, N, N]``, copy-to-copy arcs 0."""
    b, n = instances.pos.shape[:2]
    d, k = instances.num_depots, copy_depot.size(1)
    node = torch.cat([copy_depot, torch.arange(d, n, device=copy_depot.device).expand(b, n - d)],
                     1)                                                        # [B, M]
    m = node.size(1)
    pos = instances.pos.gather(1, node.unsqueeze(-1).expand(b, m, 2))
    costs = full.gather(1, node.unsqueeze(-1).expand(b, m, n)).gather(
        2, node.unsqueeze(1).expand(b, m, m)).clone()
    costs[:, :k, :k] = 0.0
    return pos, costs


def depot_move_mask(order: Tensor, rank: Tensor, copy_depot: Tensor) -> Tensor:
    """``[B, M, M]`` bool by node ids: True where the 2-opt move ``(i, j)`` leaves every
    route bounded by copies of one depot (or empty).

    For the move at positions ``lo < hi`` (reversing ``lo+1 .. hi``) the two runs through
    the new arcs are tested: the run ``o_lo -> o_hi``, opened by the last copy at or
    before ``lo`` and closed by the last copy of the path at or before ``hi`` (or, when the
    path has none, the first copy after ``hi``); and the run ``o_lo+1 -> o_hi+1``, opened
    by the first copy of the path at or after ``lo + 1`` (else the copy before ``lo``) and
    closed by the first copy after ``hi``. A run is fine when its customers are none or its
    two copies share a depot. ``O(M^2)`` per instance, no loop."""
    b, m = order.shape
    k = copy_depot.size(1)
    dev = order.device
    t = torch.arange(m + 1, device=dev)
    ext = torch.cat([order, order[:, :1]], 1)                                  # wrap: M -> 0
    copy = ext < k
    dep = torch.where(copy, copy_depot.gather(1, ext.clamp(max=k - 1)), -1)    # [B, M+1]
    last = torch.cummax(torch.where(copy, t, 0), 1).values                     # <= t
    nxt = torch.flip(torch.cummin(torch.flip(torch.where(copy, t, m), [1]), 1).values, [1])
    cnt = torch.cat([torch.zeros(b, 1, dtype=torch.long, device=dev),
                     torch.cumsum((~copy[:, :m]).long(), 1)], 1)              # before t
    lo, hi = t[:m].view(1, m, 1), t[:m].view(1, 1, m)

    def at(x: Tensor, idx: Tensor) -> Tensor:                  # x [B, M+1] at idx [B, M, M]
        return x.gather(1, idx.reshape(b, -1)).view(b, m, m)

    def expand(v: Tensor) -> Tensor:
        return v.expand(b, m, m)

    lo_b, hi_b = expand(lo), expand(hi)
    a = at(last, lo_b)                                         # copy opening o_lo's run
    after = at(nxt, expand(hi + 1).clamp(max=m))               # first copy after hi
    q = at(last, hi_b)                                         # last copy on the path?
    inside_q = q > lo_b
    close_a = torch.where(inside_q, q, after)
    cust_a = (at(cnt, lo_b + 1) - at(cnt, a + 1)) + torch.where(
        inside_q, at(cnt, hi_b + 1) - at(cnt, q + 1),
        at(cnt, after) - at(cnt, lo_b + 1))
    ok_a = (cust_a == 0) | (at(dep, a) == at(dep, close_a))
    p = at(nxt, lo_b + 1)                                      # first copy on the path?
    inside_p = p <= hi_b
    open_b = torch.where(inside_p, p, a)
    cust_b = torch.where(inside_p, at(cnt, p) - at(cnt, lo_b + 1),
                         at(cnt, hi_b + 1) - at(cnt, a + 1)) + (at(cnt, after) - at(cnt, hi_b + 1))
    ok_b = (cust_b == 0) | (at(dep, open_b) == at(dep, after))
    ok = ok_a & ok_b
    ok = torch.where(lo < hi, ok, ok.transpose(1, 2))          # both orders of a pair
    return ok.gather(1, rank.unsqueeze(2).expand(b, m, m)).gather(
        2, rank.unsqueeze(1).expand(b, m, m))


def route_depots(order: Tensor, copy_depot: Tensor) -> list[list[int]]:
    """Each instance's routes' depots (``0 .. D-1``), in the order of
    :func:`~pyg_routing.envs.two_opt.moves.to_routes` (empty routes dropped)."""
    k = copy_depot.size(1)
    out: list[list[int]] = []
    for row, depots in zip(order.tolist(), copy_depot.tolist()):
        homes: list[int] = []
        opened = None
        for v in row:
            if v < k:
                opened = depots[v]
            elif opened is not None:
                homes.append(opened)
                opened = None
        out.append(homes)
    return out


def multi_depot_state(instances: RoutingInstances, init: str, copies: int | None,
                      extra: int, generator: torch.Generator | None = None,
                      at_least: bool = False) -> TwoOptState:
    """The :class:`~pyg_routing.envs.two_opt.state.TwoOptState` of multi-depot CVRP
    start solutions (:func:`multi_depot_start`, :func:`state_travel`)."""
    full = instances.travel.dense()                   # read by the start and the state
    order, copy_depot = multi_depot_start(instances, full, init, extra, copies, generator,
                                          at_least)
    b, k = copy_depot.shape
    d = instances.num_depots
    pos, costs = state_travel(instances, full, copy_depot)
    demand = instances.demand.to(instances.pos.dtype)
    dem = torch.cat([demand.new_zeros(b, k), demand[:, d:]], 1)
    cap = instances.capacity.reshape(b).to(instances.pos.dtype)
    cost = cycle_cost(pos, order, costs)
    return TwoOptState(instances.problem, k, pos, dem, cap, order, succ_from_order(order),
                       rank_from_order(order), cost, cost.clone(), order.clone(),
                       torch.full((b, 2), -1, dtype=torch.long, device=order.device),
                       costs=costs, open_routes=instances.travel.open_routes,
                       asymmetric=asymmetric_rows(costs), copy_depot=copy_depot,
                       instance_depots=d)
