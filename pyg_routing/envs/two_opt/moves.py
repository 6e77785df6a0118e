"""DACT-style 2-opt improvement environment for TSP, CVRP, VRPTW and PDTSP.

Formulation (Ma et al., DACT, NeurIPS 2021): a CVRP solution is ONE giant cycle
through the customers and ``K`` depot copies ("dummy depots"); each copy opens a
route, consecutive copies are an empty route. A 2-opt move ``(i, j)`` on the cycle
replaces the arcs ``i -> succ[i]`` and ``j -> succ[j]`` by ``i -> j`` and
``succ[i] -> succ[j]``, reversing the path ``succ[i] .. j``; it is an intra-route
2-opt when no depot copy lies on that path, otherwise an inter-route 2-opt*
exchange of route tails (see :func:`action_mask` for the capacity test).

Everything per step is a fixed number of ``[B, M]`` (``[B, M, M]`` for the mask)
tensor ops: no Python loop over nodes or instances. ``M = K + N - 1``.

VRPTW: the capacity mask plus an exact segment-based time-window mask
(:func:`pyg_routing.envs.two_opt.time_windows.two_opt_time_window_mask`: max-plus segment
summaries of prefixes, suffixes and, by a sparse table, of every reversed segment),
``O(M^2 log M)`` per instance with no size limit. PDTSP: one tour (``K = 1``) and the
precedence mask of :mod:`.precedence` (no request with both ends in the reversed
segment), ``O(M^2)``. The brute force it replaces (every
move applied, arrival times scanned; ``O(M^3 log M)``, only for
``M <= TW_MAX_NODES``) is kept as ``_time_window_mask_brute_force``, the reference of
the tests.

Choice of ``K`` (same for the whole batch): at least the number of routes of the
initial solutions (with the constructive tours: the number of depot slots of the
padded giant tours) and at least ``ceil(max_b total_demand_b / capacity_b) +
extra_depots``, so a search can always open new routes. TSP: ``K = 1``.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch
from torch import Tensor

from pyg_routing.data.costs import asymmetric_rows, euclidean_matrix
from pyg_routing.data.feasibility import CAPACITY_RTOL
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.data.route_quantities import RouteQuantities
from pyg_routing.envs.observation import tour_route_quantities
from pyg_routing.envs.tours import cycle_cost, rank_from_order, succ_from_order
from pyg_routing.envs.two_opt.depots import capacity_cuts, depot_move_mask, multi_depot_state
from pyg_routing.envs.two_opt.first_fit import first_fit_order
from pyg_routing.envs.two_opt.precedence import precedence_mask
from pyg_routing.envs.two_opt.state import TwoOptState, time_window_feasible
from pyg_routing.envs.two_opt.time_windows import two_opt_time_window_mask
from pyg_routing.functional.chunks import batch_slices, chunk_budget, instances_per_chunk
from pyg_routing.functional.pickup_delivery import random_feasible_orders
from pyg_routing.functional.route_pe import ipexpe

INITS = ("sweep", "nearest_neighbor", "random", "first_fit")


# ------------------------------------------------------------------------ reset
def reset(instances: RoutingInstances, init: str = "sweep", num_depots: int | None = None,
          extra_depots: int = 2, generator: torch.Generator | None = None,
          at_least: bool = False) -> TwoOptState:
    """Initial state from ``B`` instances of ``N`` nodes (node 0 = depot).

    Args:
        instances: TSP, CVRP, VRPTW or PDTSP instances.
        init: ``"sweep"`` (CVRP only; the others use nearest neighbour),
            ``"nearest_neighbor"``, ``"random"`` (random customer order, cut
            greedily by capacity; PDTSP: a uniformly random feasible tour) or
            ``"first_fit"`` (TSP, CVRP: VRP-DACT's start, :mod:`.first_fit`).
        num_depots: ``K``; default see the module docstring.
        at_least: ``num_depots`` is a floor (DACT's ``depot_rate``), not a demand: a
            multi-depot start that needs more copies gets them.
        extra_depots: spare route slots above the capacity lower bound (CVRP).
        generator: RNG of ``init="random"``.

    Raises:
        NotImplementedError: problems other than TSP, CVRP, VRPTW and PDTSP.
        ValueError: unknown ``init``, ``init="random"`` for VRPTW, ``"first_fit"`` for
            VRPTW or PDTSP, or ``num_depots`` below the initial routes.
    """
    from pyg_routing.data.solvers.constructive import nearest_neighbor, sweep

    prob = instances.problem
    if prob not in (Problem.TSP, Problem.CVRP, Problem.VRPTW, Problem.PDTSP):
        raise NotImplementedError(
            f"the 2-opt environment supports tsp, cvrp, vrptw and pdtsp, not {prob.value!r}")
    if init not in INITS:
        raise ValueError(f"unknown init {init!r}; choose from {INITS}")
    if init == "random" and prob is Problem.VRPTW:
        raise ValueError("init='random' would violate time windows; use 'nearest_neighbor'")
    if init == "first_fit" and prob in (Problem.VRPTW, Problem.PDTSP):
        raise ValueError(f"init='first_fit' (customers in index order, cut by capacity) "
                         f"would violate the {prob.value} constraints; use "
                         f"'nearest_neighbor' or 'random'")
    if instances.num_depots > 1:           # several depots: copies per depot (.depots)
        return multi_depot_state(instances, init, num_depots, extra_depots, generator,
                                 at_least)
    b, n = instances.pos.shape[:2]
    dev = instances.device
    single = prob.single_route
    if single:
        demand = instances.pos.new_zeros(b, n)
        cap = torch.full((b,), math.inf, dtype=instances.pos.dtype, device=dev)
    else:
        demand, cap = instances.demand.to(instances.pos.dtype), instances.capacity.reshape(b)
        cap = cap.to(instances.pos.dtype)
    pairs = None
    if prob is Problem.PDTSP:
        pairs = instances.pickup_delivery_index.to(dev).expand(b, 2, -1).clone()
    if init == "random" and pairs is not None:
        # Uniform over the feasible tours, drawn in the standard layout (pickup r,
        # delivery r + P) and relabelled into the instances' own ids.
        label = torch.cat([pairs.new_zeros(1), pairs[0, 0], pairs[0, 1]])
        order, routes = label[random_feasible_orders(b, pairs.size(2), generator, dev)], 1
    elif init == "random":
        order, routes = _random_order(demand, cap, generator)
    elif init == "first_fit":
        order, routes = first_fit_order(demand, cap)
    else:
        # sweep is CVRP-only; TSP and VRPTW start from nearest neighbour instead.
        tours = sweep(instances) if init == "sweep" and prob is Problem.CVRP \
            else nearest_neighbor(instances)
        order, routes = _order_from_tours(tours, n)
    if single:
        k = 1
    else:
        bound = int(torch.ceil((demand.double().sum(1) / cap.double()).max()).item())
        k = max(routes, bound + extra_depots) if num_depots is None else num_depots
    if k < routes:
        raise ValueError(f"num_depots={k} is below the {routes} route slots of the "
                         f"initial solutions")
    # Relabel: depot slots r -> copy r, customers c -> c + K - 1; unused copies
    # are appended as empty routes (depot -> depot arcs cost 0).
    order = torch.where(order < routes, order, order + k - routes)
    extra = torch.arange(routes, k, device=dev).expand(b, k - routes)
    order = torch.cat([order, extra], 1)
    pos = torch.cat([instances.pos[:, :1].expand(b, k, 2), instances.pos[:, 1:]], 1)
    dem = torch.cat([demand.new_zeros(b, k), demand[:, 1:]], 1)
    costs = _state_costs(instances, k)
    cost = cycle_cost(pos, order, costs)
    tw = st = None
    if prob is Problem.VRPTW:
        tw = torch.cat([instances.time_window[:, :1].expand(b, k, 2),
                        instances.time_window[:, 1:]], 1)
        st = torch.cat([instances.service_time[:, :1].expand(b, k),
                        instances.service_time[:, 1:]], 1)
    return TwoOptState(prob, k, pos, dem, cap, order, succ_from_order(order),
                       rank_from_order(order), cost, cost.clone(), order.clone(),
                       torch.full((b, 2), -1, dtype=torch.long, device=dev),
                       time_window=tw, service_time=st, pairs=pairs, costs=costs,
                       open_routes=instances.travel.open_routes,
                       asymmetric=None if costs is None else asymmetric_rows(costs))


def _state_costs(instances: RoutingInstances, k: int) -> Tensor | None:
    """``[B, M, M]`` travel costs of the state's nodes (the ``K`` depot copies share
    the depot's row and column), for instances with an explicit matrix or open
    routes; ``None`` keeps the Euclidean arithmetic of ``pos``."""
    costs = instances.travel.matrix_or_none()
    if costs is None:
        return None
    n = instances.num_nodes
    node = torch.cat([torch.zeros(k, dtype=torch.long, device=instances.device),
                      torch.arange(1, n, device=instances.device)])
    return costs.index_select(1, node).index_select(2, node)


def _order_from_tours(tours: Tensor, n: int) -> tuple[Tensor, int]:
    """Giant tours ``[B, L]`` (0 separates routes, ends with 0) to cycles with depot
    slots labelled ``0 .. R-1`` and customers kept as ``1 .. N-1``; returns ``R``."""
    if not bool((tours[:, -1] == 0).all() & (tours[:, 0] == 0).all()):
        raise ValueError("giant tours must start and end with the depot 0")
    seq = tours[:, :-1]           # the closing 0 is the opening 0 again on a cycle
    is_dep = seq == 0
    if not bool(((~is_dep).sum(1) == n - 1).all()):
        raise ValueError("every customer must be visited exactly once")
    slots = int(is_dep[0].sum())  # same for every row: L - 1 - (N - 1)
    order = torch.where(is_dep, torch.cumsum(is_dep.long(), 1) - 1, seq + slots - 1)
    return order, slots


def _random_order(demand: Tensor, cap: Tensor, generator: torch.Generator | None
                  ) -> tuple[Tensor, int]:
    """Random customer order cut greedily by capacity; labels as in _order_from_tours."""
    b, n = demand.shape
    c = n - 1
    perm = torch.argsort(torch.rand(b, c, generator=generator).to(demand.device), 1) + 1
    d = demand.double().gather(1, perm)
    cut_mask = capacity_cuts(torch.zeros_like(perm), d, cap.double() * (1 + CAPACITY_RTOL))
    cut_mask[:, 0] = False                   # the first route opens at depot copy 0
    cum = torch.cumsum(cut_mask.long(), 1)                              # [B, c]
    routes = int(cum[:, -1].max()) + 1
    k_idx = torch.arange(c, device=demand.device)
    cust_at = 1 + k_idx + cum                                           # cycle position
    order = torch.zeros(b, c + routes, dtype=torch.long, device=demand.device)
    order.scatter_(1, cust_at, perm + routes - 1)
    # Depot slot r (r >= 1) right before the customer that opens route r; rows
    # with fewer routes put their spare slots at the end.
    dep_pos = torch.where(cut_mask, cust_at - 1, 0)
    order.scatter_(1, dep_pos, torch.where(cut_mask, cum, 0))
    used = cum[:, -1] + 1
    spare = torch.arange(routes, device=demand.device).expand(b, routes)
    spare_pos = c + spare                                               # tail positions
    keep = spare >= used.unsqueeze(1)
    order.scatter_(1, torch.where(keep, spare_pos, 0), torch.where(keep, spare, 0))
    return order, routes


# ------------------------------------------------------------------------ moves
def apply_two_opt(order: Tensor, lo: Tensor, hi: Tensor) -> Tensor:
    """Reverse ``order[b, lo[b]+1 .. hi[b]]`` for every row: ``[B, M]``.

    With ``lo < hi`` the reversed segment never contains position 0, so the cycle
    keeps starting at depot copy 0. One gather, no loop over instances.
    """
    t = torch.arange(order.size(1), device=order.device)
    lo, hi = lo.unsqueeze(1), hi.unsqueeze(1)
    inside = (t > lo) & (t <= hi)
    return order.gather(1, torch.where(inside, lo + 1 + hi - t, t))


def step(state: TwoOptState, action: Tensor) -> tuple[TwoOptState, Tensor]:
    """Apply the 2-opt moves ``action [B, 2]`` (node ids ``(i, j)``, unordered).

    The move replaces ``i -> succ[i]``, ``j -> succ[j]`` by ``i -> j``,
    ``succ[i] -> succ[j]`` for the ``i`` earlier on the cycle (both orientations
    give the same undirected solution). Validity is not checked: sample from
    :func:`action_mask`.

    Returns:
        The new state (a new object; ``state`` is not modified) and the reward
        ``[B] = max(best_cost - new_cost, 0)``, the improvement of the best-so-far.
    """
    m = state.num_nodes
    r = state.rank.gather(1, action)
    lo, hi = r.min(1).values, r.max(1).values
    order = apply_two_opt(state.order, lo, hi)
    cost = cycle_cost(state.pos, order, state.costs)
    reward = (state.best_cost - cost).clamp(min=0)
    better = cost < state.best_cost
    # Undo of (i, j) is (i, old succ[i]): it restores both removed arcs.
    undo = torch.stack([state.order.gather(1, lo.unsqueeze(1)).squeeze(1),
                        state.order.gather(1, ((lo + 1) % m).unsqueeze(1)).squeeze(1)], 1)
    new = replace(state, order=order, succ=succ_from_order(order),
                  rank=rank_from_order(order), cost=cost,
                  best_cost=torch.where(better, cost, state.best_cost),
                  best_order=torch.where(better.unsqueeze(1), order, state.best_order),
                  last_action=undo, steps=state.steps + 1)
    return new, reward


def move_deltas(state: TwoOptState) -> Tensor:
    """``[B, M, M]`` exact cost change of every 2-opt move ``(i, j)`` (node ids), in
    ``O(M^2)`` tensor work with no loop: what a best-improvement 2-opt or a
    cost-aware policy reads.

    The move at positions ``lo < hi`` swaps the arcs ``o_lo -> o_lo+1`` and
    ``o_hi -> o_hi+1`` for ``o_lo -> o_hi`` and ``o_lo+1 -> o_hi+1`` and reverses the
    path between. With asymmetric costs every arc inside that path changes
    direction, so its cost becomes ``B[hi] - B[lo+1]`` instead of ``F[hi] - F[lo+1]``
    (prefix sums of the forward arcs ``c(o_t, o_t+1)`` and the backward arcs
    ``c(o_t+1, o_t)``); symmetric costs cancel that term. Float64.
    """
    b, m = state.order.shape
    order = state.order
    if state.costs is None:
        xy = state.pos.gather(1, order.unsqueeze(-1).expand(b, m, 2))
        cost = euclidean_matrix(xy).double()                    # by position, [B, M, M]
    else:
        flat = (order.unsqueeze(2) * m + order.unsqueeze(1)).reshape(b, m * m)
        cost = state.costs.reshape(b, m * m).gather(1, flat).view(b, m, m).double()
    t = torch.arange(m, device=order.device)
    nxt = ((t + 1) % m).view(1, m, 1).expand(b, m, 1)
    fwd = cost.gather(2, nxt).squeeze(2)                        # [B, M]: c(o_t, o_t+1)
    bwd = cost.gather(1, nxt.transpose(1, 2)).squeeze(1)        # [B, M]: c(o_t+1, o_t)
    zero = fwd.new_zeros(b, 1)
    f = torch.cat([zero, fwd.cumsum(1)], 1)                     # F[t]: arcs before t
    r = torch.cat([zero, bwd.cumsum(1)], 1)
    # Broadcasts over positions (lo rows, hi columns; lo < hi used): F[hi], F[lo + 1], ...
    # and the arc o_lo+1 -> o_hi+1 as the matrix shifted by one position both ways.
    inner = (r[:, None, :m] - r[:, 1:, None]) - (f[:, None, :m] - f[:, 1:, None])
    delta = (cost + cost.roll((-1, -1), dims=(1, 2))
             - fwd[:, :, None] - fwd[:, None, :] + inner)       # [B, lo, hi]
    lo, hi = t.view(m, 1), t.view(1, m)
    delta = torch.where(lo < hi, delta, delta.transpose(1, 2)).masked_fill(lo == hi, 0.0)
    # by node ids: (i, j) is the move at positions (rank i, rank j)
    rank = state.rank
    return delta.gather(1, rank.unsqueeze(2).expand(b, m, m)).gather(
        2, rank.unsqueeze(1).expand(b, m, m))


# ------------------------------------------------------------------------ loads
def route_loads(state: TwoOptState) -> tuple[Tensor, Tensor, Tensor]:
    """Per-node route loads along the cycle, node-indexed, float64 ``[B, M]`` each.

    Returns:
        ``(route, upto, after)``: route slot of the node (``cumsum`` of depot copies
        along the cycle, minus 1; a depot copy belongs to the route it opens), load
        from the route start up to and including the node, and load of the rest of
        its route after the node.
    """
    order, k = state.order, state.num_depots
    dem = state.demand.double().gather(1, order)
    is_dep = order < k
    ridx = torch.cumsum(is_dep.long(), 1) - 1
    csum = torch.cumsum(dem, 1)
    t = torch.arange(order.size(1), device=order.device)
    start = torch.cummax(torch.where(is_dep, t, 0), 1).values
    upto = csum - csum.gather(1, start)          # depot copies have demand 0
    total = dem.new_zeros(order.size(0), k).scatter_add_(1, ridx, dem)
    after = total.gather(1, ridx) - upto
    rank = state.rank
    return ridx.gather(1, rank), upto.gather(1, rank), after.gather(1, rank)


def capacity_mask(state: TwoOptState) -> Tensor:
    """``[B, M, M]`` bool, True where the move ``(i, j)`` keeps both routes within the
    capacity (see :func:`action_mask`).

    Written slice by slice of the batch into the one output, so the three ``[B, M, M]``
    comparisons never exist whole (at CVRP-100, B = 512, each is 6.6 MB: the passes
    stay in the cache and nothing is faulted)."""
    ridx, upto, after = route_loads(state)
    b, m = upto.shape
    cap = state.capacity.double().unsqueeze(1) * (1 + CAPACITY_RTOL)
    # ``upto_j <= cap - upto_i`` instead of ``upto_i + upto_j <= cap``: the
    # subtraction is [B, M] instead of [B, M, M] (the mask dominates the step).
    room_upto, room_after = (cap - upto).unsqueeze(2), (cap - after).unsqueeze(2)
    upto, after = upto.unsqueeze(1), after.unsqueeze(1)
    ok = torch.empty(b, m, m, dtype=torch.bool, device=upto.device)
    for sl in batch_slices(b, instances_per_chunk(m * m, chunk_budget(upto.device))):
        out = ok[sl]
        torch.ge(room_upto[sl], upto[sl], out=out)
        out &= room_after[sl] >= after[sl]
        out |= ridx[sl].unsqueeze(2) == ridx[sl].unsqueeze(1)
    return ok


def action_mask(state: TwoOptState) -> Tensor:
    """``[B, M, M]`` bool, True where the move ``(i, j)`` is allowed.

    Forbidden: ``i == j``, ``j == succ[i]``, ``i == succ[j]`` (no-op moves), the
    immediate undo ``last_action`` (both orders) and, for CVRP, capacity
    violations. With ``p(i) < p(j)``, if no depot copy lies on ``succ[i] .. j``
    (same route slot) the move reverses part of one route: loads unchanged.
    Otherwise the two routes through the new arcs carry

    * ``upto(i) + upto(j)``: start of ``i``'s route to ``i``, then ``j`` back to the
      start of ``j``'s route (reversed);
    * ``after(i) + after(j)``: the rest of ``i``'s route (reversed) followed by the
      rest of ``j``'s route,

    and every route strictly between is merely reversed. Both sums are symmetric
    in ``i, j``, so the mask needs no positions. Depot copies as ``i`` or ``j``
    have ``upto = 0`` (they open their route), which makes the formula cover them.
    """
    b, m = state.order.shape
    dev = state.device
    if state.problem in (Problem.CVRP, Problem.VRPTW):
        ok = capacity_mask(state)
        if state.problem is Problem.VRPTW:
            ok &= two_opt_time_window_mask(state)
    elif state.problem is Problem.PDTSP:
        ok = precedence_mask(state)
    else:
        ok = torch.ones(b, m, m, dtype=torch.bool, device=dev)
    if state.copy_depot is not None:       # several depots: every route stays home
        ok &= depot_move_mask(state.order, state.rank, state.copy_depot)
    # No-op moves and the undo are O(B * M) entries: write them into the flat mask.
    base = (torch.arange(b, device=dev) * m * m).unsqueeze(1)
    node = torch.arange(m, device=dev).expand(b, m)
    succ = state.succ
    flat = [base + node * (m + 1), base + node * m + succ, base + succ * m + node]
    la = state.last_action
    has = (la[:, 0] >= 0).unsqueeze(1)
    a, s = la[:, :1].clamp(min=0), la[:, 1:].clamp(min=0)
    # Rows without a last action write the (already forbidden) diagonal (0, 0).
    flat += [base + torch.where(has, a * m + s, 0), base + torch.where(has, s * m + a, 0)]
    ok = ok.reshape(-1).index_fill_(0, torch.cat(flat, 1).reshape(-1), False)
    return ok.view(b, m, m)


TW_MAX_NODES = 64   # limit of the brute-force reference only (O(B M^3 log M));
                    # action_mask uses the segment-based mask, no size limit


def _time_window_mask_brute_force(state: TwoOptState, chunk: int = 1 << 22) -> Tensor:
    """``[B, M, M]`` time-window feasibility of every move, by brute force: apply all
    ``M^2`` moves (one gather) and scan the arrival times of every result. Exact,
    but ``O(M^3 log M)`` per instance, so limited to ``M <= TW_MAX_NODES``;
    instances are processed in chunks of about ``chunk`` cycle positions."""
    b, m = state.order.shape
    if m > TW_MAX_NODES:
        raise NotImplementedError(
            f"the VRPTW 2-opt mask is a brute-force check of all moves, limited to "
            f"{TW_MAX_NODES} nodes incl. dummy depots (got {m}); use the segment-based "
            f"pyg_routing.envs.two_opt.time_windows.two_opt_time_window_mask")
    dev = state.device
    lo = torch.arange(m, device=dev).view(m, 1).expand(m, m)
    hi = lo.t()
    lo, hi = torch.minimum(lo, hi).reshape(-1), torch.maximum(lo, hi).reshape(-1)
    per = max(1, chunk // (m ** 3))
    out = []
    for start in range(0, b, per):       # loop over chunks of instances, not instances
        sl = slice(start, start + per)
        order = state.order[sl]
        bb = order.size(0)
        # Moves by positions (lo, hi); rank maps the node pairs (i, j) onto them.
        moved = apply_two_opt(order.repeat_interleave(m * m, 0), lo.repeat(bb), hi.repeat(bb))
        ok = time_window_feasible(state.pos[sl], state.time_window[sl],
                                  state.service_time[sl], moved.view(bb, m * m, m),
                                  state.num_depots,
                                  None if state.costs is None else state.costs[sl],
                                  None if state.open_routes is None
                                  else state.open_routes[sl]).view(bb, m, m)
        rank = state.rank[sl]
        out.append(ok.gather(1, rank.unsqueeze(2).expand(bb, m, m))
                   .gather(2, rank.unsqueeze(1).expand(bb, m, m)))
    return torch.cat(out, 0)


def random_action(state: TwoOptState, mask: Tensor | None = None,
                  generator: torch.Generator | None = None) -> Tensor:
    """``[B, 2]`` uniformly random allowed moves (``(0, 0)`` where none is)."""
    mask = action_mask(state) if mask is None else mask
    b, m, _ = mask.shape
    noise = torch.rand(b, m * m, generator=generator).to(mask.device)
    flat = torch.where(mask.view(b, -1), noise, -1.0).argmax(1)
    flat = torch.where(mask.view(b, -1).any(1), flat, 0)
    return torch.stack([flat // m, flat % m], 1)


# ------------------------------------------------------------------- encodings
def route_quantities(state: TwoOptState) -> RouteQuantities:
    """Route quantities of the current solutions, flat ``[B * M]`` (node ``b * M + v``;
    see :func:`pyg_routing.envs.observation.tour_route_quantities`)."""
    return tour_route_quantities(state)


def positional_encoding(state: TwoOptState, dim: int = 64, num_bands: int = 4,
                        rq: RouteQuantities | None = None) -> Tensor:
    """IPE+XPE of the current solutions, ``[B, M, dim + 2 * num_bands]``."""
    rq = route_quantities(state) if rq is None else rq
    b, m = state.order.shape
    opened = None if state.open_routes is None else \
        state.open_routes.unsqueeze(1).expand(b, m).reshape(-1)
    pe = ipexpe(rq.cum_dist, rq.route_length, rq.depot_angle, dim, num_bands,
                route_pos=rq.route_pos, depot_mask=state.depot_mask.reshape(-1),
                open_route=opened)
    return pe.view(b, m, -1)


# ------------------------------------------------------------------- solutions
def to_routes(state: TwoOptState, best: bool = True) -> list[list[list[int]]]:
    """Routes per instance in ORIGINAL node ids (customers ``1 .. N-1``, depot
    omitted, empty routes dropped), for ``RoutingData.from_routes``."""
    k = state.num_depots
    out: list[list[list[int]]] = []
    for row in (state.best_order if best else state.order).tolist():
        routes: list[list[int]] = []
        for v in row:
            if v < k:
                routes.append([])
            else:
                routes[-1].append(v - k + state.instance_depots)
        out.append([r for r in routes if r])
    return out
