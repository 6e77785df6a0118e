"""Numba core of the NDS repair: one removal set applied to one solution slot.

Used by the prange drivers of :mod:`._kernels`; the rules are documented in
:mod:`.repair`. Everything here works on the rows of ONE slot (1-D views of the
:class:`~.state.ToursState` arrays) plus that slot's scratch, so slots are
independent and the drivers can run them in parallel.

Scratch layout. To keep the argument lists short, the per-slot scratch lives in a
few 2-D arrays whose rows are named by the constants below (``w`` = 0/1 selects one
of the two work buffers: the best attempt so far keeps its buffer, the next attempt
writes the other one, so the winner is never copied):

* ``cu`` int32 ``[5, N+1]`` and ``cf`` float64 ``[12, N+1]``, indexed by customer:
  set marks, the work tours' linked lists and arcs, the VRPTW schedules (departure
  time ``dep`` and latest feasible arrival ``la``, see :func:`_scan`);
* ``tu`` int32 ``[4, N]`` and ``tf`` float64 ``[1, N]``, indexed by tour slot (or a
  flat list of at most ``N`` customers / slots);
* ``ku`` int32 ``[22, C]`` and ``kf`` float64 ``[12, C]`` with ``C = 2k``, indexed by
  candidate tour (or set position): touched tours, base tours after the removal, the
  work tours of both buffers (each with its depot's node, :mod:`.depots`);
* ``cnt`` int64 ``[12]`` counters and stamps, ``fs`` float64 ``[1]``;
* ``kc`` int64 ``[2, K]`` the tours leaving each depot (limited fleets only): after the
  removal, and during the attempt.

Several depots (:mod:`.depots`): the sentinel 0 of the linked tours stands for the
tour's own depot, whose node ``dn`` (0, or ``N + d``) indexes the travel costs.

Stamps (``cnt[SSTAMP]`` per set, ``cnt[ASTAMP]`` per attempt) replace clearing the
mark arrays between sets.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pyg_routing.envs.deconstruction.problem import PCVRP, VRPTW

# Prefixes: B = base tours (the touched tours after the removal, shared by all
# attempts), O = untouched ("old") tours of the all-tours mode, W = work buffers (two
# rows each, + w). ARC = distance from the predecessor, RET = return arc to the depot,
# DEP / LA = VRPTW departure / latest feasible arrival, L / P = length / prize.
# cu rows (per customer, int32); CM = "in the current set" stamp
CM, WSUCC, WPRED = 0, 1, 3
# cf rows (per customer, float64)
BARC, BDEP, BLA, OARC, ODEP, OLA, WARC, WDEP, WLA = 0, 1, 2, 3, 4, 5, 6, 8, 10
# tu rows (per tour slot, int32) and tf rows (float64)
TMARK, TAKEN, BNODES, OLD = 0, 1, 2, 3
ORET = 0
# ku rows (per candidate, int32)
TOUCHED, BOFF, BLEN, BSLOT, ORDER = 0, 1, 2, 3, 4
WHEAD, WTAIL, WLEN, WSRC, WMOD, WLEFT, WTAKEN = 5, 7, 9, 11, 13, 15, 17
BDEPOT, WDEPOT = 19, 20
# kf rows (per candidate, float64)
BRET, BLOAD, BL, BP, WRET, WLOAD, WL, WP = 0, 1, 2, 3, 4, 6, 8, 10
# cnt entries
SSTAMP, ASTAMP, NT, NB, NOLD, NC, NLEFT, NTAKEN = 0, 1, 2, 3, 4, 5, 7, 9
REM = 0
# kc rows
KBASE, KWORK = 0, 1


@njit(cache=True)
def new_scratch(n: int, k: int, num_depots: int):
    """Scratch of one slot for ``n`` customers, sets of width ``k`` and ``num_depots``."""
    c = 2 * max(k, 1)
    return (np.zeros((5, n + 1), np.int32), np.zeros((12, n + 1), np.float64),
            np.zeros((4, max(n, 1)), np.int32), np.zeros((1, max(n, 1)), np.float64),
            np.zeros((22, c), np.int32), np.zeros((12, c), np.float64),
            np.zeros(12, np.int64), np.zeros(1, np.float64),
            np.zeros((2, num_depots), np.int64))


@njit(cache=True)
def depot_of(d, n):
    """Kernel node of depot number ``d`` (:func:`.depots.depot_node`)."""
    return 0 if d == 0 else n + d


@njit(cache=True)
def depot_number(dn, n):
    """Depot number of the kernel node ``dn`` of a depot."""
    return 0 if dn == 0 else dn - n


@njit(cache=True)
def tw_insertion_ok(dep_p, d_pc, d_cn, ec, lc, sc, la_n):
    """VRPTW: whether customer c fits between p and n (O(1) forward-time-slack test).

    ``dep_p``: departure from p (the depot: ``t0``); ``la_n``: latest arrival at n that
    keeps the rest of the tour feasible (the depot return: ``l_0``).
    """
    arrive = dep_p + d_pc
    if arrive > lc:
        return False
    return (max(arrive, ec) + sc) + d_cn <= la_n


@njit(cache=True)
def _scan(kind, dc_col, dc_row, pc, ec, lc, sc, t0, l0, head, nxt, arc, ret, dep, la, best,
          dn):
    """Best insertion of customer c into one tour, given the best cost so far.

    Positions are walked from the depot (``p = 0`` before the first customer) to the
    return (``n = 0``), the tour's depot being node ``dn`` of the costs; the cost is
    ``d(p,c) + d(c,n) - d(p,n)`` (``- p_c`` for PCVRP),
    and only a STRICTLY smaller cost replaces ``best``, so the first position wins ties.
    Direction-correct for asymmetric costs: ``dc_col[p] = d(p, c)`` (column ``c``),
    ``dc_row[n] = d(c, n)`` (row ``c``), ``arc[n] = d(p, n)`` (``ret = d(last, 0)``).

    VRPTW feasibility in O(1) per position (forward time slack): ``dep[v]`` is the
    departure time from ``v`` in the tour's schedule, ``la[v]`` the latest arrival
    at ``v`` that keeps the rest of the tour feasible (``la = min(l_v, la_next -
    d(v, next) - s_v)``, ``l_0`` at the return: ``+inf`` on open-route instances,
    :attr:`~.problem.ProblemArrays.schedule_tw`). Inserting c after p is feasible iff
    ``arrive_c = dep_p + d(p, c) <= l_c`` and ``max(arrive_c, e_c) + s_c + d(c, n)
    <= la[n]``. It is checked only for positions that would beat ``best`` (lazy, as
    in NDS).

    Returns:
        ``(best, p)``: the new best and the predecessor of the best position, or
        ``p = -1`` if no position beat ``best``.
    """
    bp = -1
    p = 0
    n = head
    while True:
        # p = 0 / n = 0 is the tour's depot: its row/column ``dn`` of the costs
        a = arc[n] if n != 0 else ret
        cost = (dc_col[p if p != 0 else dn] + dc_row[n if n != 0 else dn]) - a
        if kind == PCVRP:
            cost = cost - pc
        if cost < best and (kind != VRPTW or tw_insertion_ok(
                t0 if p == 0 else dep[p], dc_col[p if p != 0 else dn],
                dc_row[n if n != 0 else dn], ec, lc, sc, l0 if n == 0 else la[n])):
            best = cost
            bp = p
        if n == 0:
            break
        p = n
        n = nxt[n]
    return best, bp


@njit(cache=True)
def _latest_arrivals(v, la_next, arc_next, pred_row, arc_row, la_row, tw, svc):
    """Backward pass of ``la`` from customer ``v`` towards the depot."""
    while v != 0:
        x = (la_next - arc_next) - svc[v]
        la = tw[v, 1] if tw[v, 1] < x else x
        la_row[v] = la
        la_next = la
        arc_next = arc_row[v]
        v = pred_row[v]


@njit(cache=True)
def _departures(v, dprev, succ_row, arc_row, dep_row, tw, svc):
    """Forward pass of ``dep`` from customer ``v`` to the end of its tour."""
    while v != 0:
        dprev = max(dprev + arc_row[v], tw[v, 0]) + svc[v]
        dep_row[v] = dprev
        v = succ_row[v]


@njit(cache=True)
def remove_set(kind, dist, dem, pz, tw, svc, t0, succ, pred, tour, first, last, length,
               prize, load, depot, limited, ids, m, all_tours, cu, cf, tu, tf, ku, kf, cnt,
               fs, kc):
    """Remove the set ``ids[:m]`` and build the base tours shared by all attempts.

    Touched tours (containing a removed customer) in order of first appearance in
    the set; each is rebuilt without the removed customers, an emptied one is
    dropped. Fills the base tours (nodes, arcs, length, prize and load summed in
    tour order from the depot, VRPTW schedule), the removed value ``fs[REM]`` =
    Σ (length - prize) of the touched tours in order, and for ``all_tours`` the list
    of untouched tours ordered by their first customer (with their arcs/schedules).
    With a ``limited`` fleet, ``kc[KBASE]`` counts the tours left at each depot.
    """
    n = tour.shape[0] - 1
    if limited:
        kc[KBASE, :] = 0
        for t in range(n):
            if first[t] != 0:
                kc[KBASE, depot[t]] += 1
    cnt[SSTAMP] += 1
    st = cnt[SSTAMP]
    for j in range(m):
        cu[CM, ids[j]] = st
    nt = 0
    for j in range(m):
        t = tour[ids[j]]
        if t >= 0 and tu[TMARK, t] != st:
            tu[TMARK, t] = st
            ku[TOUCHED, nt] = t
            nt += 1
    rem = 0.0
    for q in range(nt):
        t = ku[TOUCHED, q]
        rem += length[t] - prize[t]
    l0 = tw[0, 1]
    nb = 0
    used = 0
    for q in range(nt):
        t = ku[TOUCHED, q]
        dn = depot_of(depot[t], n)
        start = used
        v = first[t]
        prev = dn                              # the arcs' origin: the tour's depot first
        total = 0.0
        prz = 0.0
        ld = 0.0
        while v != 0:
            if cu[CM, v] != st:
                tu[BNODES, used] = v
                used += 1
                a = dist[prev, v]
                cf[BARC, v] = a
                total += a
                prz += pz[v]
                ld += dem[v]
                prev = v
            v = succ[v]
        if used == start:                              # emptied: dropped
            if limited:
                kc[KBASE, depot[t]] -= 1
            continue
        ret = dist[prev, dn]
        ku[BDEPOT, nb] = dn
        ku[BOFF, nb] = start
        ku[BLEN, nb] = used - start
        ku[BSLOT, nb] = t
        kf[BRET, nb] = ret
        kf[BL, nb] = total + ret
        kf[BP, nb] = prz
        kf[BLOAD, nb] = ld
        if kind == VRPTW:
            dprev = t0
            for j in range(start, used):
                v = tu[BNODES, j]
                dprev = max(dprev + cf[BARC, v], tw[v, 0]) + svc[v]
                cf[BDEP, v] = dprev
            la_next = l0
            arc_next = ret
            for j in range(used - 1, start - 1, -1):
                v = tu[BNODES, j]
                x = (la_next - arc_next) - svc[v]
                la_next = tw[v, 1] if tw[v, 1] < x else x
                cf[BLA, v] = la_next
                arc_next = cf[BARC, v]
        nb += 1
    cnt[NT] = nt
    cnt[NB] = nb
    fs[REM] = rem
    nold = 0
    if all_tours:
        for v in range(1, n + 1):
            t = tour[v]
            if t >= 0 and pred[v] == 0 and tu[TMARK, t] != st:
                tu[OLD, nold] = t
                nold += 1
        for q in range(nold):
            t = tu[OLD, q]
            dn = depot_of(depot[t], n)
            v = first[t]
            prev = dn
            while v != 0:
                cf[OARC, v] = dist[prev, v]
                prev = v
                v = succ[v]
            tf[ORET, t] = dist[prev, dn]
            if kind == VRPTW:
                _departures(first[t], t0, succ, cf[OARC], cf[ODEP], tw, svc)
                _latest_arrivals(last[t], l0, tf[ORET, t], pred, cf[OARC], cf[OLA], tw, svc)
    cnt[NOLD] = nold


@njit(cache=True)
def _reset_work(kind, w, cu, cf, tu, ku, kf, cnt, kc, limited):
    """Copy the base tours into work buffer ``w`` (candidates 0..nb-1) and, with a
    ``limited`` fleet, the tours per depot after the removal into the attempt's."""
    if limited:
        for d in range(kc.shape[1]):
            kc[KWORK, d] = kc[KBASE, d]
    nb = cnt[NB]
    for i in range(nb):
        off = ku[BOFF, i]
        ln = ku[BLEN, i]
        prev = 0
        for j in range(off, off + ln):
            v = tu[BNODES, j]
            cu[WPRED + w, v] = prev
            if prev != 0:
                cu[WSUCC + w, prev] = v
            cf[WARC + w, v] = cf[BARC, v]
            if kind == VRPTW:
                cf[WDEP + w, v] = cf[BDEP, v]
                cf[WLA + w, v] = cf[BLA, v]
            prev = v
        cu[WSUCC + w, prev] = 0
        ku[WHEAD + w, i] = tu[BNODES, off]
        ku[WTAIL + w, i] = prev
        ku[WDEPOT + w, i] = ku[BDEPOT, i]
        ku[WLEN + w, i] = ln
        ku[WSRC + w, i] = ku[BSLOT, i]
        ku[WMOD + w, i] = 0
        kf[WRET + w, i] = kf[BRET, i]
        kf[WLOAD + w, i] = kf[BLOAD, i]
    cnt[NC + w] = nb
    cnt[NLEFT + w] = 0
    cnt[NTAKEN + w] = 0
