"""A slow, plain pure-Python reference of NDS's repair, for TESTS ONLY.

It follows the rules of :mod:`.repair` and the start solutions of :mod:`.start`
with the same uniform layout, but is written independently of the numba kernels: a
solution is a list of tours (lists of customer ids), candidate positions are list
indices, loads are summed afresh, and VRPTW feasibility is decided by simulating
the whole schedule of the candidate tour with the customer inserted (the kernels
use an O(1) forward-time-slack test). Given the same inputs both must produce the
same tours, and the same costs (every per-tour value is summed from the depot in
tour order and the tours in order of their first customer, so costs agree bit for
bit).

Floating-point sums are explicit loops (never ``sum``/``math.fsum``), so their order
is the documented one. One knowing difference: a tour's load is summed afresh here but
updated by ``+= d_c`` in the kernels; both are exact for integral demands (every
generator's); fractional demands could only disagree if a load landed within rounding
error of ``C (1 + 1e-9)``. Likewise the kernels' O(1) time-window test and the
simulation here can only disagree when an arrival lands within rounding error of a
window's end.

Several depots (:mod:`.depots`): a tour is given as ``(d, [c1, c2, ...])`` with its depot
number ``d`` (a plain list is a tour of depot 0), and returned that way on multi-depot
arrays. Internally a tour is the list ``[D, c1, c2, ...]`` headed by its depot's node
``D`` in the costs, so every walk starts and ends there.
"""

from __future__ import annotations

import math

import numpy as np

from pyg_routing.envs.deconstruction.problem import PCVRP, VRPTW, ProblemArrays, capacity_limit

Tours = list  # of tours: [c1, c2, ...] (depot 0) or (d, [c1, c2, ...])


class ReferenceInstance:
    """One instance as Python lists (distance rows, demands, windows, ...).

    ``d[a][b]`` is the cost of the arc ``a -> b`` (possibly asymmetric; zero into the
    depot with open routes): every expression below reads the arcs in the direction
    the vehicle drives them.
    """

    def __init__(self, arrays: ProblemArrays, i: int) -> None:
        self.kind = arrays.kind
        self.n = arrays.num_customers
        self.d = arrays.dist[i].tolist()
        self.demand = arrays.demand[i].tolist()
        self.cap_tol = float(capacity_limit(float(arrays.capacity[i])))
        self.early = arrays.tw[i, :, 0].tolist()
        # the depot's closing time is +inf on open-route instances (no return deadline)
        self.late = arrays.schedule_tw[i, :, 1].tolist()
        self.service = arrays.service[i].tolist()
        self.prize = arrays.prize[i].tolist()
        self.t0 = self.early[0] + self.service[0]
        self.num_depots = arrays.num_depots
        self.fleet = arrays.fleet[i].tolist()
        self.limited = arrays.limited
        self.depot_nodes = [0] + [self.n + d for d in range(1, self.num_depots)]

    # -------------------------------------------------------------- tours
    def internal(self, tours: Tours) -> list[list[int]]:
        """``[D, c1, ...]`` per tour (``D``: the depot's node)."""
        return [[0, *t] if isinstance(t, list) else [self.depot_nodes[t[0]], *t[1]]
                for t in tours]

    def external(self, tours: list[list[int]]) -> Tours:
        """The given form: plain lists on single-depot arrays, else ``(d, list)``."""
        if self.num_depots == 1:
            return [list(t[1:]) for t in tours]
        return [(self.depot_nodes.index(t[0]), list(t[1:])) for t in tours]

    # -------------------------------------------------------------- tour values
    def length(self, tour: list[int]) -> float:
        total = 0.0
        prev = tour[0]
        for v in tour[1:]:
            total += self.d[prev][v]
            prev = v
        return total + self.d[prev][tour[0]]

    def collected(self, tour: list[int]) -> float:
        total = 0.0
        for v in tour[1:]:
            total += self.prize[v]
        return total

    def value(self, tour: list[int]) -> float:
        return self.length(tour) - self.collected(tour)

    def cost(self, tours: list[list[int]]) -> float:
        total = 0.0
        for tour in sorted(tours, key=lambda t: t[1]):
            total += self.value(tour)
        return total

    def load(self, tour: list[int]) -> float:
        total = 0.0
        for v in tour[1:]:
            total += self.demand[v]
        return total

    def on_time(self, tour: list[int]) -> bool:
        """Simulate the schedule: leave the depot at t0, wait for windows to open."""
        t = self.t0
        prev = tour[0]
        for v in tour[1:]:
            arrive = t + self.d[prev][v]
            if arrive > self.late[v]:
                return False
            t = max(arrive, self.early[v]) + self.service[v]
            prev = v
        return t + self.d[prev][tour[0]] <= self.late[0]

    def open_at(self, c: int, used: list[int]) -> tuple[int, bool]:
        """``(D, spare)``: the depot node of a new tour of ``c`` (the cheapest out-and-back
        trip among the depots with a vehicle to spare, lowest number on ties) and
        whether one had a vehicle to spare (else the cheapest of all)."""
        trips = [self.d[dn][c] + self.d[c][dn] for dn in self.depot_nodes]
        free = [d for d in range(self.num_depots) if not self.limited or used[d] < self.fleet[d]]
        pool = free if free else list(range(self.num_depots))
        best = min(pool, key=lambda d: (trips[d], d))
        return self.depot_nodes[best], bool(free)

    # -------------------------------------------------------------- insertion
    def best_in_tour(self, tour: list[int], c: int, best: float) -> tuple[float, int | None]:
        """Strictly best feasible position of ``c`` in ``tour`` (``[D, c1, ...]``; the
        positions are list indices 1..len) beating ``best``."""
        if self.load(tour) + self.demand[c] > self.cap_tol:
            return best, None
        where = None
        for pos in range(1, len(tour) + 1):
            p = tour[pos - 1]
            n = tour[pos] if pos < len(tour) else tour[0]
            cost = (self.d[p][c] + self.d[c][n]) - self.d[p][n]
            if self.kind == PCVRP:
                cost = cost - self.prize[c]
            if cost < best:
                if self.kind == VRPTW and not self.on_time(tour[:pos] + [c] + tour[pos:]):
                    continue
                best, where = cost, pos
        return best, where


def _shuffled(ids: list[int], urow: list[float], a: int, k: int) -> list[int]:
    order = list(ids)
    m = len(order)
    for i in range(m - 1, 0, -1):
        u = urow[(a - 1) * (k - 1) + (m - 1 - i)]
        j = min(int(u * (i + 1)), i)
        order[i], order[j] = order[j], order[i]
    return order


def repair(inst: ReferenceInstance, tours: list[list[int]], row: list[int], urow: list[float],
           recreate_n: int, all_tours: bool = False) -> tuple[float, list[list[int]]]:
    """Best-of-``recreate_n`` repair of removal set ``row`` (padded with -1) of the
    internal ``tours`` (``[D, c1, ...]`` each).

    Returns ``(Δ, new solution)``: the tours not replaced (in their order), then the
    candidate tours of the winning attempt; ``Δ = +inf`` (and the solution unchanged)
    when every attempt needed a vehicle no depot had left.
    """
    k = len(row)
    ids = [c for c in row if c >= 0]
    removed = set(ids)
    tour_of = {v: j for j, tour in enumerate(tours) for v in tour[1:]}
    touched: list[int] = []
    for c in ids:
        if c in tour_of and tour_of[c] not in touched:
            touched.append(tour_of[c])
    rem_touched = 0.0
    for j in touched:
        rem_touched += inst.value(tours[j])
    base = [[v for v in tours[j] if v not in removed] for j in touched]
    base = [tour for tour in base if len(tour) > 1]
    kept = [j for j in range(len(tours)) if j not in touched]
    old = [] if not all_tours else sorted(kept, key=lambda j: tours[j][1])
    coin0 = (recreate_n - 1) * max(k - 1, 0)
    best_delta, best_result = math.inf, list(tours)
    for a in range(recreate_n):
        order = ids if a == 0 else _shuffled(ids, urow, a, k)
        cands = [list(tour) for tour in base]
        used = [0] * inst.num_depots                  # tours per depot: kept, then cands
        for tour in [tours[j] for j in kept] + cands:
            used[inst.depot_nodes.index(tour[0])] += 1
        over = False
        available = list(old)
        taken: list[int] = []
        for q, c in enumerate(order):
            best, where, target = math.inf, None, None
            for j in available:
                best, pos = inst.best_in_tour(tours[j], c, best)
                if pos is not None:
                    where, target = pos, ("old", j)
            for i, tour in enumerate(cands):
                best, pos = inst.best_in_tour(tour, c, best)
                if pos is not None:
                    where, target = pos, ("cand", i)
            insert = target is not None and (inst.kind != PCVRP or best < 0.0)
            if insert:
                if target[0] == "old":
                    available.remove(target[1])
                    taken.append(target[1])
                    cands.append(list(tours[target[1]]))
                    tour = cands[-1]
                else:
                    tour = cands[target[1]]
                tour.insert(where, c)
            elif (inst.kind != PCVRP or (inst.d[0][c] + inst.d[c][0]) - inst.prize[c] < 0.0
                  or urow[coin0 + a * k + q] < 0.5):
                home, spare = inst.open_at(c, used)
                over = over or not spare
                used[inst.depot_nodes.index(home)] += 1
                cands.append([home, c])
            # else: c stays unvisited (PCVRP)
        modified = 0.0
        for tour in cands:
            modified += inst.value(tour)
        replaced = rem_touched
        for j in taken:
            replaced += inst.value(tours[j])
        delta = math.inf if over else modified - replaced
        if delta < best_delta:
            best_delta = delta
            gone = set(touched) | set(taken)
            best_result = [t for j, t in enumerate(tours) if j not in gone] + cands
    return best_delta, best_result


def canonical(tours: list) -> list:
    """Tours ordered by their first customer (the order of ``ToursState.to_routes``);
    internal tours (``[D, c1, ...]``) by ``c1``, given ones in their own form."""
    def first(t):
        return t[1][0] if isinstance(t, tuple) else t[0]
    return sorted((t if isinstance(t, tuple) else list(t) for t in tours), key=first)


def _metropolis(delta: float, temperature: float, u: float) -> bool:
    if temperature > 0.0:
        threshold = math.inf if u <= 0.0 else -temperature * math.log(u)
    else:
        threshold = 0.0
    return delta < threshold


def apply_sets_sa(arrays: ProblemArrays, solutions: list[Tours], inst, sets, u, temperature,
                  recreate_n: int = 5, best: list[Tours] | None = None):
    """Reference of :func:`.repair.apply_sets_sa`.

    Returns:
        ``(solutions, costs, best_solutions, best_costs, accepted)`` (tours canonical).
    """
    sets, u = np.asarray(sets).tolist(), np.asarray(u).tolist()
    temps = np.broadcast_to(np.asarray(temperature, dtype=np.float64), (len(solutions),))
    best = solutions if best is None else best
    out = ([], [], [], [], [])
    for s, tours in enumerate(solutions):
        ri = ReferenceInstance(arrays, int(inst[s]))
        cur = ri.internal(tours)
        cost = ri.cost(cur)
        top = ri.internal(best[s])
        top_cost = ri.cost(top)
        accepted = 0
        for r, row in enumerate(sets[s]):
            delta, new = repair(ri, cur, row, u[s][r], recreate_n)
            if _metropolis(delta, float(temps[s]), u[s][r][-1]):
                cur, cost = new, ri.cost(new)
                accepted += 1
                if cost < top_cost:
                    top, top_cost = [list(t) for t in cur], cost
        for lst, val in zip(out, (canonical(ri.external(cur)), cost,
                                  canonical(ri.external(top)), top_cost, accepted)):
            lst.append(val)
    return out


def evaluate_sets(arrays: ProblemArrays, solutions: list[Tours], inst, sets, u,
                  recreate_n: int = 5) -> np.ndarray:
    """Reference of :func:`.repair.evaluate_sets`: ``[S, K]`` costs."""
    sets, u = np.asarray(sets).tolist(), np.asarray(u).tolist()
    out = np.empty((len(solutions), len(sets[0]) if sets else 0))
    for s, tours in enumerate(solutions):
        ri = ReferenceInstance(arrays, int(inst[s]))
        cur = ri.internal(tours)
        cost = ri.cost(cur)
        for r, row in enumerate(sets[s]):
            out[s, r] = cost + repair(ri, cur, row, u[s][r], recreate_n)[0]
    return out


def commit_sets(arrays: ProblemArrays, solutions: list[Tours], inst, sets, u, which,
                recreate_n: int = 5) -> list[Tours]:
    """Reference of :func:`.repair.commit_sets` (returns new canonical solutions; a
    repair over the fleet leaves its solution unchanged)."""
    sets, u = np.asarray(sets).tolist(), np.asarray(u).tolist()
    out = []
    for s, tours in enumerate(solutions):
        r = int(which[s])
        if r < 0:
            out.append(canonical(tours))
            continue
        ri = ReferenceInstance(arrays, int(inst[s]))
        out.append(canonical(ri.external(
            repair(ri, ri.internal(tours), sets[s][r], u[s][r], recreate_n)[1])))
    return out


def start_solutions(arrays: ProblemArrays, inst, removal, u) -> list[Tours]:
    """Reference of :func:`.start.start_solutions` with pre-drawn ``removal`` and ``u``."""
    removal, u = np.asarray(removal).tolist(), np.asarray(u).tolist()
    out = []
    for s, i in enumerate(inst):
        ri = ReferenceInstance(arrays, int(i))
        if ri.limited:
            tours = _construction(ri)
        else:
            tours = [[min(ri.depot_nodes, key=lambda dn: (ri.d[dn][c] + ri.d[c][dn],
                                                          ri.depot_nodes.index(dn))), c]
                     for c in range(1, ri.n + 1)]
        for r, row in enumerate(removal[s]):
            delta, new = repair(ri, tours, row, u[s][r], 1, all_tours=True)
            if delta < 0.0:
                tours = new
        out.append(canonical(ri.external(tours)))
    return out


def _construction(ri: ReferenceInstance) -> list[list[int]]:
    """The limited-fleet start: every customer repaired into the empty solution,
    farthest first by its cheapest out-and-back trip (ties by id)."""
    trip = [min(ri.d[dn][c] + ri.d[c][dn] for dn in ri.depot_nodes) for c in range(ri.n + 1)]
    order = sorted(range(1, ri.n + 1), key=lambda c: (-trip[c], c))
    delta, tours = repair(ri, [], order, [0.0] * (2 * len(order) + 1), 1, all_tours=True)
    if delta == math.inf:
        raise ValueError("the construction cannot fit every customer within the vehicles")
    return tours


def cost(arrays: ProblemArrays, i: int, tours: Tours) -> float:
    """Canonical cost of one solution of instance ``i``."""
    ri = ReferenceInstance(arrays, i)
    return ri.cost(ri.internal(tours))
