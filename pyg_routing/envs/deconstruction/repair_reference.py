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
"""

from __future__ import annotations

import math

import numpy as np

from pyg_routing.envs.deconstruction.problem import PCVRP, VRPTW, ProblemArrays, capacity_limit

Tours = list[list[int]]


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

    # -------------------------------------------------------------- tour values
    def length(self, tour: list[int]) -> float:
        total = 0.0
        prev = 0
        for v in tour:
            total += self.d[prev][v]
            prev = v
        return total + self.d[prev][0]

    def collected(self, tour: list[int]) -> float:
        total = 0.0
        for v in tour:
            total += self.prize[v]
        return total

    def value(self, tour: list[int]) -> float:
        return self.length(tour) - self.collected(tour)

    def cost(self, tours: Tours) -> float:
        total = 0.0
        for tour in sorted(tours, key=lambda t: t[0]):
            total += self.value(tour)
        return total

    def load(self, tour: list[int]) -> float:
        total = 0.0
        for v in tour:
            total += self.demand[v]
        return total

    def on_time(self, tour: list[int]) -> bool:
        """Simulate the schedule: leave the depot at t0, wait for windows to open."""
        t = self.t0
        prev = 0
        for v in tour:
            arrive = t + self.d[prev][v]
            if arrive > self.late[v]:
                return False
            t = max(arrive, self.early[v]) + self.service[v]
            prev = v
        return t + self.d[prev][0] <= self.late[0]

    # -------------------------------------------------------------- insertion
    def best_in_tour(self, tour: list[int], c: int, best: float) -> tuple[float, int | None]:
        """Strictly best feasible position of ``c`` in ``tour`` beating ``best``."""
        if self.load(tour) + self.demand[c] > self.cap_tol:
            return best, None
        where = None
        for pos in range(len(tour) + 1):
            p = tour[pos - 1] if pos > 0 else 0
            n = tour[pos] if pos < len(tour) else 0
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


def repair(inst: ReferenceInstance, tours: Tours, row: list[int], urow: list[float],
           recreate_n: int, all_tours: bool = False) -> tuple[float, Tours]:
    """Best-of-``recreate_n`` repair of removal set ``row`` (padded with -1).

    Returns ``(Δ, new solution)``: the tours not replaced (in their order), then the
    candidate tours of the winning attempt.
    """
    k = len(row)
    ids = [c for c in row if c >= 0]
    removed = set(ids)
    tour_of = {v: j for j, tour in enumerate(tours) for v in tour}
    touched: list[int] = []
    for c in ids:
        if c in tour_of and tour_of[c] not in touched:
            touched.append(tour_of[c])
    rem_touched = 0.0
    for j in touched:
        rem_touched += inst.value(tours[j])
    base = [[v for v in tours[j] if v not in removed] for j in touched]
    base = [tour for tour in base if tour]
    old = [] if not all_tours else sorted(
        (j for j in range(len(tours)) if j not in touched), key=lambda j: tours[j][0])
    coin0 = (recreate_n - 1) * max(k - 1, 0)
    best_delta, best_result = math.inf, None
    for a in range(recreate_n):
        order = ids if a == 0 else _shuffled(ids, urow, a, k)
        cands = [list(tour) for tour in base]
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
                cands.append([c])
            # else: c stays unvisited (PCVRP)
        modified = 0.0
        for tour in cands:
            modified += inst.value(tour)
        replaced = rem_touched
        for j in taken:
            replaced += inst.value(tours[j])
        delta = modified - replaced
        if delta < best_delta:
            best_delta = delta
            gone = set(touched) | set(taken)
            best_result = [t for j, t in enumerate(tours) if j not in gone] + cands
    return best_delta, best_result


def canonical(tours: Tours) -> Tours:
    """Tours ordered by their first customer (the order of ``ToursState.to_routes``)."""
    return sorted((list(t) for t in tours), key=lambda t: t[0])


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
        cur, cost = [list(t) for t in tours], ri.cost(tours)
        top, top_cost = [list(t) for t in best[s]], ri.cost(best[s])
        accepted = 0
        for r, row in enumerate(sets[s]):
            delta, new = repair(ri, cur, row, u[s][r], recreate_n)
            if _metropolis(delta, float(temps[s]), u[s][r][-1]):
                cur, cost = new, ri.cost(new)
                accepted += 1
                if cost < top_cost:
                    top, top_cost = [list(t) for t in cur], cost
        for lst, val in zip(out, (canonical(cur), cost, canonical(top), top_cost, accepted)):
            lst.append(val)
    return out


def evaluate_sets(arrays: ProblemArrays, solutions: list[Tours], inst, sets, u,
                  recreate_n: int = 5) -> np.ndarray:
    """Reference of :func:`.repair.evaluate_sets`: ``[S, K]`` costs."""
    sets, u = np.asarray(sets).tolist(), np.asarray(u).tolist()
    out = np.empty((len(solutions), len(sets[0]) if sets else 0))
    for s, tours in enumerate(solutions):
        ri = ReferenceInstance(arrays, int(inst[s]))
        cost = ri.cost(tours)
        for r, row in enumerate(sets[s]):
            out[s, r] = cost + repair(ri, tours, row, u[s][r], recreate_n)[0]
    return out


def commit_sets(arrays: ProblemArrays, solutions: list[Tours], inst, sets, u, which,
                recreate_n: int = 5) -> list[Tours]:
    """Reference of :func:`.repair.commit_sets` (returns new canonical solutions)."""
    sets, u = np.asarray(sets).tolist(), np.asarray(u).tolist()
    out = []
    for s, tours in enumerate(solutions):
        r = int(which[s])
        if r < 0:
            out.append(canonical(tours))
            continue
        ri = ReferenceInstance(arrays, int(inst[s]))
        out.append(canonical(repair(ri, tours, sets[s][r], u[s][r], recreate_n)[1]))
    return out


def start_solutions(arrays: ProblemArrays, inst, removal, u) -> list[Tours]:
    """Reference of :func:`.start.start_solutions` with pre-drawn ``removal`` and ``u``."""
    removal, u = np.asarray(removal).tolist(), np.asarray(u).tolist()
    out = []
    for s, i in enumerate(inst):
        ri = ReferenceInstance(arrays, int(i))
        tours = [[c] for c in range(1, ri.n + 1)]
        for r, row in enumerate(removal[s]):
            delta, new = repair(ri, tours, row, u[s][r], 1, all_tours=True)
            if delta < 0.0:
                tours = new
        out.append(canonical(tours))
    return out


def cost(arrays: ProblemArrays, i: int, tours: Tours) -> float:
    """Canonical cost of one solution of instance ``i``."""
    return ReferenceInstance(arrays, i).cost(tours)
