"""Validation of user solutions and of :class:`~.state.ToursState` arrays.

Checks are numpy masks over all slots at once; the only loops are over the routes a
user hands in (construction time) and over tour POSITIONS (at most the longest tour)
when walking all tours in lockstep. Errors name the slot, route (tour slot) and
customer of the first violation found.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pyg_routing.data.feasibility import TIME_RTOL
from pyg_routing.envs.deconstruction.depots import depot_node
from pyg_routing.envs.deconstruction.problem import PCVRP, VRPTW, ProblemArrays, capacity_limit
from pyg_routing.errors import InfeasibleSolutionError, InvalidSolutionError

#: a :class:`~.state.ToursState` (its arrays' layout is documented there, their dtypes
#: are :data:`_INTS` / :data:`_FLOATS`), duck-typed so that this module does not import
#: ``state`` back: ``ToursState`` calls these checks, and the import points one way
ToursArrays = Any


_INTS = ("inst", "succ", "pred", "tour", "first", "last", "size", "depot")
_FLOATS = ("load", "length", "prize", "cost")


def at(slot: int, route: int | None = None, customer: int | None = None) -> str:
    """``"slot 2, route 1, customer 7: "``."""
    parts = [f"slot {slot}"]
    if route is not None:
        parts.append(f"route {route}")
    if customer is not None:
        parts.append(f"customer {customer}")
    return ", ".join(parts) + ": "


def _first(mask: np.ndarray) -> tuple[int, ...] | None:
    hits = np.argwhere(mask)
    return None if len(hits) == 0 else tuple(int(x) for x in hits[0])


def check_routes(arrays: ProblemArrays, routes_per_slot: Sequence, inst: np.ndarray) -> None:
    """Structure of user routes: integer ids in 1..N, no depot, no empty route, every
    customer at most once (exactly once unless PCVRP)."""
    n = arrays.num_customers
    bad = (inst < 0) | (inst >= arrays.num_instances)
    if bad.any():
        s = int(np.argmax(bad))
        raise InvalidSolutionError(f"{at(s)}instance row {int(inst[s])} out of range for "
                                   f"{arrays.num_instances} instances")
    for s, routes in enumerate(routes_per_slot):
        seen = np.full(n + 1, -1)
        for r, route in enumerate(routes):
            ids = np.asarray(route)
            if ids.dtype == bool or not (np.issubdtype(ids.dtype, np.integer) or ids.size == 0):
                raise InvalidSolutionError(f"{at(s, r)}customer ids must be integers, got "
                                           f"{route!r}")
            ids = ids.reshape(-1).astype(np.int64)
            if ids.size == 0:
                raise InvalidSolutionError(f"{at(s, r)}empty route (a route must visit at "
                                           f"least one customer)")
            if (ids == 0).any():
                raise InvalidSolutionError(f"{at(s, r, 0)}the depot must not appear inside a "
                                           f"route (routes omit it)")
            out = (ids < 1) | (ids > n)
            if out.any():
                raise InvalidSolutionError(f"{at(s, r, int(ids[out][0]))}customer id out of "
                                           f"range: customers are 1..{n}")
            uniq, counts = np.unique(ids, return_counts=True)
            twice = np.concatenate([uniq[counts > 1], ids[seen[ids] >= 0]])
            if twice.size:
                c = int(twice[0])
                other = f" (already in route {int(seen[c])})" if seen[c] >= 0 else ""
                raise InvalidSolutionError(f"{at(s, r, c)}customer visited twice{other}")
            seen[ids] = r
        missing = np.nonzero(seen[1:] < 0)[0] + 1
        if arrays.kind != PCVRP and missing.size:
            shown = ", ".join(map(str, missing[:10].tolist())) + (" ..." if missing.size > 10
                                                                  else "")
            raise InvalidSolutionError(f"{at(s)}{missing.size} customer(s) not visited: {shown}")


def check_route_depots(arrays: ProblemArrays, routes_per_slot: Sequence,
                       depots: Sequence | None) -> list[np.ndarray]:
    """Each route's depot number per slot, checked: one integer in ``0..K-1`` per route;
    ``None`` is depot 0 everywhere, which only single-depot arrays may leave implicit."""
    k = arrays.num_depots
    if depots is None:
        if k > 1:
            raise InvalidSolutionError(f"the instances have {k} depots: give each route's "
                                       f"depot (`depots`, one list per slot)")
        return [np.zeros(len(routes), np.int32) for routes in routes_per_slot]
    if len(depots) != len(routes_per_slot):
        raise InvalidSolutionError(f"`depots` needs one list per slot ({len(routes_per_slot)}), "
                                   f"got {len(depots)}")
    out = []
    for s, (routes, homes) in enumerate(zip(routes_per_slot, depots)):
        arr = np.asarray(homes).reshape(-1)
        if len(arr) != len(routes):
            raise InvalidSolutionError(f"{at(s)}`depots` needs one depot per route "
                                       f"({len(routes)}), got {len(arr)}")
        if arr.size and (arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer)):
            raise InvalidSolutionError(f"{at(s)}route depots must be integers, got {homes!r}")
        bad = (arr < 0) | (arr >= k)
        if bad.any():
            r = int(np.argmax(bad))
            raise InvalidSolutionError(f"{at(s, r)}depot {int(arr[r])} is not one of the "
                                       f"depots 0..{k - 1}")
        out.append(arr.astype(np.int32))
    return out


def check_layout(state: ToursArrays, arrays: ProblemArrays) -> None:
    """Dtypes, shapes and contiguity the kernels need, and instance rows in range."""
    s = state.succ.shape[0] if isinstance(state.succ, np.ndarray) else -1
    n = arrays.num_customers
    shapes = {"inst": (s,), "succ": (s, n + 1), "pred": (s, n + 1), "tour": (s, n + 1),
              "first": (s, n), "last": (s, n), "size": (s, n), "load": (s, n),
              "length": (s, n), "prize": (s, n), "depot": (s, n), "cost": (s,)}
    for name, shape in shapes.items():
        arr = getattr(state, name)
        dtype = np.int32 if name in _INTS else np.float64
        if not isinstance(arr, np.ndarray) or arr.dtype != dtype or arr.shape != shape:
            got = (f"{arr.dtype} {arr.shape}" if isinstance(arr, np.ndarray)
                   else type(arr).__name__)
            raise InvalidSolutionError(f"ToursState.{name} must be a {np.dtype(dtype)} array "
                                       f"of shape {shape} (N = {n} customers), got {got}")
        if not arr.flags.c_contiguous or not arr.flags.writeable:
            raise InvalidSolutionError(f"ToursState.{name} must be a writeable C-contiguous "
                                       f"array")
    bad = (state.inst < 0) | (state.inst >= arrays.num_instances)
    if bad.any():
        k = int(np.argmax(bad))
        raise InvalidSolutionError(f"{at(k)}instance row {int(state.inst[k])} out of range "
                                   f"for {arrays.num_instances} instances")


def _links(state: ToursArrays, arrays: ProblemArrays) -> None:
    """Ranges, unvisited customers and succ/pred/tour consistency."""
    n = state.num_customers
    tour, succ, pred = state.tour, state.succ, state.pred
    for name, arr, lo, hi in (("tour", tour[:, 1:], -1, n - 1), ("succ", succ, 0, n),
                              ("pred", pred, 0, n), ("first", state.first, 0, n),
                              ("last", state.last, 0, n), ("size", state.size, 0, n),
                              ("depot", state.depot, 0, arrays.num_depots - 1)):
        hit = _first((arr < lo) | (arr > hi))
        if hit is not None:
            raise InvalidSolutionError(f"{at(hit[0])}{name}[{hit[1] + (name == 'tour')}] = "
                                       f"{int(arr[hit])} is out of range {lo}..{hi}")
    hit = _first((tour[:, :1] != -1) | (succ[:, :1] != 0) | (pred[:, :1] != 0))
    if hit is not None:
        raise InvalidSolutionError(f"{at(hit[0])}index 0 (the depot) must hold tour -1, "
                                   f"succ 0 and pred 0")
    cust = tour[:, 1:]
    visited = cust >= 0
    if arrays.kind != PCVRP:
        hit = _first(~visited)
        if hit is not None:
            raise InvalidSolutionError(f"{at(hit[0], customer=hit[1] + 1)}customer not visited")
    hit = _first(~visited & ((succ[:, 1:] != 0) | (pred[:, 1:] != 0)))
    if hit is not None:
        raise InvalidSolutionError(f"{at(hit[0], customer=hit[1] + 1)}an unvisited customer "
                                   f"must have succ 0 and pred 0")
    rows = np.arange(len(state))[:, None]
    for name, nxt, back in (("successor", succ, pred), ("predecessor", pred, succ)):
        other = nxt[:, 1:]
        c = np.arange(1, n + 1)[None, :]
        broken = visited & (other != 0) & ((back[rows, other] != c) | (tour[rows, other] != cust))
        hit = _first(broken)
        if hit is not None:
            s, k = hit
            raise InvalidSolutionError(
                f"{at(s, int(cust[s, k]), k + 1)}its {name} {int(other[s, k])} does not link "
                f"back to it in the same route")


def check_state(state: ToursArrays, arrays: ProblemArrays) -> None:
    """Full validation (see :meth:`ToursState.check`)."""
    check_layout(state, arrays)
    _links(state, arrays)
    n = state.num_customers
    num = len(state)
    tour, succ, pred = state.tour, state.succ, state.pred
    cust = tour[:, 1:]
    visited = cust >= 0
    slot_of = np.broadcast_to(np.arange(num)[:, None], cust.shape)
    heads = visited & (pred[:, 1:] == 0)
    counts = np.zeros((num, n), np.int64)
    np.add.at(counts, (slot_of[visited], cust[visited]), 1)
    nheads = np.zeros((num, n), np.int64)
    np.add.at(nheads, (slot_of[heads], cust[heads]), 1)
    hit = _first(counts != state.size)
    if hit is not None:
        raise InvalidSolutionError(f"{at(*hit)}size {int(state.size[hit])} but "
                                   f"{int(counts[hit])} customers are on this route")
    rows = np.arange(num)[:, None]
    used = state.size > 0
    for name, end, link in (("first", state.first, pred), ("last", state.last, succ)):
        ok = (tour[rows, end] == np.arange(n)[None, :]) & (link[rows, end] == 0) & (end > 0)
        hit = _first(used & ~ok | ~used & (end != 0))
        if hit is not None:
            raise InvalidSolutionError(f"{at(*hit)}{name} customer {int(end[hit])} is not the "
                                       f"{name} customer of this route")
    free = ~used & ((state.load != 0) | (state.length != 0) | (state.prize != 0)
                    | (state.depot != 0))
    hit = _first(free)
    if hit is not None:
        raise InvalidSolutionError(f"{at(*hit)}a free route slot must hold zero load, length, "
                                   f"prize and depot")
    _walk(state, arrays, nheads)
    if arrays.limited:
        _fleet(state, arrays, used)


def _fleet(state: ToursArrays, arrays: ProblemArrays, used: np.ndarray) -> None:
    """Each depot's routes within its vehicles."""
    k = arrays.num_depots
    counts = np.zeros((len(state), k), np.int64)
    ss, tt = np.nonzero(used)
    np.add.at(counts, (ss, state.depot[ss, tt]), 1)
    hit = _first(counts > arrays.fleet[state.inst])
    if hit is not None:
        s, d = hit
        raise InfeasibleSolutionError(f"{at(s)}depot {d} opens {int(counts[s, d])} routes, but "
                                      f"has {int(arrays.fleet[state.inst[s], d])} vehicles")


def _walk(state: ToursArrays, arrays: ProblemArrays, nheads: np.ndarray) -> None:
    """Walk all tours in lockstep: reachability, stored values, capacity, windows."""
    n = state.num_customers
    ss, tt = np.nonzero(state.size > 0)
    inst = state.inst[ss]
    cur = state.first[ss, tt].astype(np.int64)
    home = depot_node(state.depot[ss, tt].astype(np.int64), n)
    prev = home.copy()
    total = np.zeros(len(ss))
    prz = np.zeros(len(ss))
    ld = np.zeros(len(ss))
    steps = np.zeros(len(ss), np.int64)
    dep = arrays.tw[inst, 0, 0] + arrays.service[inst, 0]
    # the data layer's tolerance, per instance (NDS's C++ starts are late by ~5e-8)
    scale = np.abs(arrays.tw).reshape(len(arrays.tw), -1).max(axis=1, initial=0.0)
    tol = (TIME_RTOL * np.maximum(1.0, scale))[inst]
    late_at = np.zeros(len(ss), np.int64)
    alive = cur != 0
    while alive.any():
        a = np.nonzero(alive)[0]
        i, v = inst[a], cur[a]
        arc = arrays.dist[i, prev[a], v]
        total[a] += arc
        prz[a] += arrays.prize[i, v]
        ld[a] += arrays.demand[i, v]
        if arrays.kind == VRPTW:
            arrive = dep[a] + arc
            late = (arrive > arrays.tw[i, v, 1] + tol[a]) & (late_at[a] == 0)
            late_at[a[late]] = v[late]
            dep[a] = np.maximum(arrive, arrays.tw[i, v, 0]) + arrays.service[i, v]
        prev[a] = v
        cur[a] = state.succ[ss[a], v]
        steps[a] += 1
        alive = (cur != 0) & (steps <= n)
    ret = arrays.dist[inst, prev, home]
    total += ret
    short = (steps != state.size[ss, tt]) | (nheads[ss, tt] != 1)
    if short.any():
        k = int(np.argmax(short))
        on = np.nonzero(state.tour[ss[k], 1:] == tt[k])[0] + 1
        reached, v = set(), int(state.first[ss[k], tt[k]])
        while v != 0 and len(reached) <= n:
            reached.add(v)
            v = int(state.succ[ss[k], v])
        lost = [int(c) for c in on if int(c) not in reached]
        c = lost[0] if lost else int(state.first[ss[k], tt[k]])
        raise InvalidSolutionError(f"{at(int(ss[k]), int(tt[k]), c)}the customer is not on the "
                                   f"path from the route's first customer (a cycle or a second "
                                   f"path)")
    for name, got in (("length", total), ("prize", prz), ("load", ld)):
        stored = getattr(state, name)[ss, tt]
        off = np.abs(stored - got) > 1e-9 * np.maximum(1.0, np.abs(got))
        if off.any():
            k = int(np.argmax(off))
            raise InvalidSolutionError(
                f"{at(int(ss[k]), int(tt[k]))}stored {name} {stored[k]:.12g} differs from the "
                f"route's {got[k]:.12g} (call recompute_costs after editing the arrays)")
    cost = np.zeros(len(state))
    np.add.at(cost, ss, total - prz)
    off = np.abs(state.cost - cost) > 1e-9 * np.maximum(1.0, np.abs(cost))
    if off.any():
        k = int(np.argmax(off))
        raise InvalidSolutionError(f"{at(k)}stored cost {state.cost[k]:.12g} differs from the "
                                   f"routes' {cost[k]:.12g}")
    over = ld > capacity_limit(arrays.capacity[inst])
    if over.any():
        k = int(np.argmax(over))
        raise InfeasibleSolutionError(
            f"{at(int(ss[k]), int(tt[k]), int(state.first[ss[k], tt[k]]))}route demand "
            f"{ld[k]:g} exceeds the capacity {arrays.capacity[inst[k]]:g} (customer = first "
            f"of the route)")
    if arrays.kind == VRPTW:
        if (late_at > 0).any():
            k = int(np.argmax(late_at > 0))
            c = int(late_at[k])
            raise InfeasibleSolutionError(
                f"{at(int(ss[k]), int(tt[k]), c)}the vehicle arrives after the time window "
                f"closes at {arrays.tw[inst[k], c, 1]:g}")
        back = dep + ret > arrays.schedule_tw[inst, 0, 1] + tol    # +inf: open routes
        if back.any():
            k = int(np.argmax(back))
            raise InfeasibleSolutionError(
                f"{at(int(ss[k]), int(tt[k]), int(prev[k]))}the vehicle returns to the depot "
                f"after it closes at {arrays.tw[inst[k], 0, 1]:g} (customer = last of the route)")
