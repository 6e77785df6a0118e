"""Numba core, part 2: the best-of-``recreate_n`` greedy repair of one removal set
and the commit of its winner into a slot (scratch layout in :mod:`._core`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from pyg_routing.envs.deconstruction._core import (
    ASTAMP,
    BL,
    BP,
    KWORK,
    NC,
    NLEFT,
    NOLD,
    NT,
    NTAKEN,
    OARC,
    ODEP,
    OLA,
    OLD,
    ORDER,
    ORET,
    REM,
    TAKEN,
    TOUCHED,
    WARC,
    WDEP,
    WDEPOT,
    WHEAD,
    WL,
    WLA,
    WLEFT,
    WLEN,
    WLOAD,
    WMOD,
    WP,
    WPRED,
    WRET,
    WSRC,
    WSUCC,
    WTAIL,
    WTAKEN,
    _departures,
    _latest_arrivals,
    _reset_work,
    _scan,
    depot_number,
    depot_of,
    remove_set,
)
from pyg_routing.envs.deconstruction.problem import CAPACITY_RTOL, PCVRP, VRPTW


@njit(cache=True)
def _insert(kind, w, i, c, p, dist, dem, tw, svc, t0, cu, cf, ku, kf):
    """Insert customer ``c`` into work tour ``i`` right after ``p`` (0 = the tour's depot)."""
    dn = ku[WDEPOT + w, i]
    n = ku[WHEAD + w, i] if p == 0 else cu[WSUCC + w, p]
    cu[WSUCC + w, c] = n
    cu[WPRED + w, c] = p
    if p == 0:
        ku[WHEAD + w, i] = c
    else:
        cu[WSUCC + w, p] = c
    if n == 0:
        ku[WTAIL + w, i] = c
        kf[WRET + w, i] = dist[c, dn]
    else:
        cu[WPRED + w, n] = c
        cf[WARC + w, n] = dist[c, n]
    cf[WARC + w, c] = dist[p if p != 0 else dn, c]
    ku[WLEN + w, i] += 1
    kf[WLOAD + w, i] += dem[c]
    ku[WMOD + w, i] = 1
    if kind == VRPTW:
        # c and everything after it depart later; c and everything before it
        # see a new latest arrival.
        _departures(c, t0 if p == 0 else cf[WDEP + w, p], cu[WSUCC + w], cf[WARC + w],
                    cf[WDEP + w], tw, svc)
        la_n = tw[0, 1] if n == 0 else cf[WLA + w, n]
        arc_n = kf[WRET + w, i] if n == 0 else cf[WARC + w, n]
        _latest_arrivals(c, la_n, arc_n, cu[WPRED + w], cf[WARC + w], cf[WLA + w], tw, svc)


@njit(cache=True)
def _new_tour(w, src, dn, cnt, ku, kf):
    """Append an empty work tour at depot node ``dn`` to buffer ``w`` (``src``: the slot
    it replaces, -1 if it is a tour opened by this repair); returns its candidate index."""
    i = cnt[NC + w]
    cnt[NC + w] = i + 1
    ku[WDEPOT + w, i] = dn
    ku[WHEAD + w, i] = 0
    ku[WTAIL + w, i] = 0
    ku[WLEN + w, i] = 0
    ku[WSRC + w, i] = src
    ku[WMOD + w, i] = 1
    kf[WLOAD + w, i] = 0.0
    return i


@njit(cache=True)
def _take_old(kind, w, t, succ, first, last, size, load, depot, cnt, cu, cf, tu, tf, ku, kf):
    """All-tours mode: move the untouched tour of slot ``t`` into a new work tour (it
    becomes a replaced tour, as in NDS's ``removedToursId``)."""
    i = _new_tour(w, t, depot_of(depot[t], succ.shape[0] - 1), cnt, ku, kf)
    v = first[t]
    prev = 0
    while v != 0:
        cu[WSUCC + w, v] = succ[v]
        cu[WPRED + w, v] = prev
        cf[WARC + w, v] = cf[OARC, v]
        if kind == VRPTW:
            cf[WDEP + w, v] = cf[ODEP, v]
            cf[WLA + w, v] = cf[OLA, v]
        prev = v
        v = succ[v]
    ku[WHEAD + w, i] = first[t]
    ku[WTAIL + w, i] = last[t]
    ku[WLEN + w, i] = size[t]
    kf[WRET + w, i] = tf[ORET, t]
    kf[WLOAD + w, i] = load[t]
    tu[TAKEN, t] = cnt[ASTAMP]
    ku[WTAKEN + w, cnt[NTAKEN + w]] = t
    cnt[NTAKEN + w] += 1
    return i


@njit(cache=True)
def _open_depot(dc_col, dc_row, n, num_depots, limited, fleet, kc):
    """The depot node where a new tour of ``c`` opens (:mod:`.depots`): the cheapest
    out-and-back trip ``d(D, c) + d(c, D)`` among the depots with a vehicle to spare,
    lowest number on ties; ``-1 - D`` (``D`` the cheapest of all) if none has one."""
    if num_depots == 1 and not limited:
        return 0
    best = np.inf
    bd = -1
    any_d = -1
    any_best = np.inf
    for d in range(num_depots):
        dn = depot_of(d, n)
        trip = dc_col[dn] + dc_row[dn]
        if trip < any_best:
            any_best = trip
            any_d = dn
        if trip < best and (not limited or kc[KWORK, d] < fleet[d]):
            best = trip
            bd = dn
    return bd if bd >= 0 else -1 - any_d


@njit(cache=True)
def _attempt(kind, w, a, dist, dist_in, dem, cap_tol, pz, tw, svc, t0, succ, first, last, size,
             load, length, prize, depot, fleet, limited, m, k, urow, recreate_n, all_tours, cu, cf,
             tu, tf, ku, kf, cnt, fs, kc):
    """Greedy reinsertion of ``ku[ORDER, :m]`` (attempt ``a``) into work buffer ``w``.

    Returns Δ = Σ (length - prize) of the candidate tours in candidate order minus
    Σ (length - prize) of the tours they replace (touched, then taken) in order;
    ``+inf`` when a new tour found no depot with a vehicle to spare (:mod:`.depots`).
    """
    _reset_work(kind, w, cu, cf, tu, ku, kf, cnt, kc, limited)
    n = succ.shape[0] - 1
    num_depots = fleet.shape[0]
    over = False
    cnt[ASTAMP] += 1
    ast = cnt[ASTAMP]
    l0 = tw[0, 1]
    coin0 = (recreate_n - 1) * max(k - 1, 0) + a * k
    # Row views once per attempt, not per scanned tour (each view costs a refcount).
    wsucc, warc, wdep, wla = cu[WSUCC + w], cf[WARC + w], cf[WDEP + w], cf[WLA + w]
    oarc, odep, ola = cf[OARC], cf[ODEP], cf[OLA]
    for q in range(m):
        c = ku[ORDER, q]
        dc_row = dist[c]                  # d(c, .): arcs out of c
        dc_col = dist_in[c]               # d(., c): arcs into c, a contiguous row
        dcst = dem[c]
        pc = pz[c]
        best = np.inf
        bi = -1
        bold = -1
        bp = -1
        if all_tours:
            # Untouched tours first (ordered by first customer), as NDS scans them.
            for qq in range(cnt[NOLD]):
                t = tu[OLD, qq]
                if tu[TAKEN, t] == ast or load[t] + dcst > cap_tol:
                    continue
                nb_, p_ = _scan(kind, dc_col, dc_row, pc, tw[c, 0], tw[c, 1], svc[c], t0, l0,
                                first[t], succ, oarc, tf[ORET, t], odep, ola, best,
                                depot_of(depot[t], n))
                if p_ >= 0:
                    best, bold, bi, bp = nb_, t, -1, p_
        for i in range(cnt[NC + w]):
            if kf[WLOAD + w, i] + dcst > cap_tol:
                continue
            nb_, p_ = _scan(kind, dc_col, dc_row, pc, tw[c, 0], tw[c, 1], svc[c], t0, l0,
                            ku[WHEAD + w, i], wsucc, warc, kf[WRET + w, i], wdep, wla, best,
                            ku[WDEPOT + w, i])
            if p_ >= 0:
                best, bold, bi, bp = nb_, -1, i, p_
        found = bp >= 0
        if kind == PCVRP:
            found = found and best < 0.0
        if found:
            if bold >= 0:
                bi = _take_old(kind, w, bold, succ, first, last, size, load, depot, cnt, cu, cf,
                               tu, tf, ku, kf)
            _insert(kind, w, bi, c, bp, dist, dem, tw, svc, t0, cu, cf, ku, kf)
        elif kind != PCVRP or (dist[0, c] + dist[c, 0]) - pc < 0.0 or urow[coin0 + q] < 0.5:
            dn = _open_depot(dc_col, dc_row, n, num_depots, limited, fleet, kc)
            if dn < 0:                     # no depot has a vehicle left: infeasible
                over = True
                dn = -1 - dn
            if limited:
                kc[KWORK, depot_number(dn, n)] += 1
            i = _new_tour(w, -1, dn, cnt, ku, kf)
            _insert(kind, w, i, c, 0, dist, dem, tw, svc, t0, cu, cf, ku, kf)
        else:
            ku[WLEFT + w, cnt[NLEFT + w]] = c
            cnt[NLEFT + w] += 1
    mod = 0.0
    for i in range(cnt[NC + w]):
        if ku[WMOD + w, i] == 0:               # untouched by this attempt: base values
            kf[WL + w, i] = kf[BL, i]
            kf[WP + w, i] = kf[BP, i]
        else:
            total = 0.0
            prz = 0.0
            v = ku[WHEAD + w, i]
            while v != 0:
                total += cf[WARC + w, v]
                prz += pz[v]
                v = cu[WSUCC + w, v]
            kf[WL + w, i] = total + kf[WRET + w, i]
            kf[WP + w, i] = prz
        mod += kf[WL + w, i] - kf[WP + w, i]
    rem = fs[REM]
    for q in range(cnt[NTAKEN + w]):
        t = ku[WTAKEN + w, q]
        rem += length[t] - prize[t]
    return np.inf if over else mod - rem


@njit(cache=True)
def repair_set(kind, dist, dist_in, dem, capacity, pz, tw, svc, succ, pred, tour, first, last,
               size, load, length, prize, depot, fleet, limited, ids, urow, recreate_n,
               all_tours, cu, cf, tu, tf, ku, kf, cnt, fs, kc):
    """Best of ``recreate_n`` greedy repairs of the removal set ``ids`` (padded with -1).

    Returns ``(Δ, w)``: the lowest Δ (earliest attempt on ties) and the work buffer
    holding that attempt. Attempt 0 inserts in the given order, attempt ``a >= 1`` in a
    Fisher-Yates shuffle of the given order driven by ``urow`` (layout in
    :func:`pyg_routing.envs.deconstruction.repair.uniforms_per_set`). ``dist_in`` is
    ``dist`` transposed (arcs into a node as a contiguous row), ``dist`` itself when
    symmetric (:attr:`~.problem.ProblemArrays.dist_in`). ``depot``: the slot's depot
    number per tour slot; ``fleet``: the tours each depot may open (read when
    ``limited``). An attempt over the fleet has ``Δ = +inf`` and never wins.
    """
    k = ids.shape[0]
    m = 0
    while m < k and ids[m] >= 0:
        m += 1
    t0 = tw[0, 0] + svc[0]
    cap_tol = capacity * (1.0 + CAPACITY_RTOL)
    remove_set(kind, dist, dem, pz, tw, svc, t0, succ, pred, tour, first, last, length, prize,
               load, depot, limited, ids, m, all_tours, cu, cf, tu, tf, ku, kf, cnt, fs, kc)
    best = np.inf
    best_w = 0
    w = 0
    for a in range(recreate_n):
        for j in range(m):
            ku[ORDER, j] = ids[j]
        if a > 0:
            base = (a - 1) * (k - 1)
            for i in range(m - 1, 0, -1):
                j = min(int(urow[base + (m - 1 - i)] * (i + 1)), i)
                x = ku[ORDER, i]
                ku[ORDER, i] = ku[ORDER, j]
                ku[ORDER, j] = x
        delta = _attempt(kind, w, a, dist, dist_in, dem, cap_tol, pz, tw, svc, t0, succ, first,
                         last, size, load, length, prize, depot, fleet, limited, m, k, urow,
                         recreate_n, all_tours, cu, cf, tu, tf, ku, kf, cnt, fs, kc)
        if delta < best:
            best = delta
            best_w = w
            w = 1 - w                     # keep the winner's buffer, write the other one
    return best, best_w


@njit(cache=True)
def canonical_cost(tour, pred, length, prize):
    """Σ (length - prize) over the tours ordered by their first customer's id: the
    summation order the pure-Python reference uses too, so costs agree bit for bit."""
    total = 0.0
    for v in range(1, tour.shape[0]):
        t = tour[v]
        if t >= 0 and pred[v] == 0:
            total += length[t] - prize[t]
    return total


@njit(cache=True)
def _clear(t, first, last, size, load, length, prize, depot):
    depot[t] = 0
    first[t] = 0
    last[t] = 0
    size[t] = 0
    load[t] = 0.0
    length[t] = 0.0
    prize[t] = 0.0


@njit(cache=True)
def _write(w, i, t, dem, succ, pred, tour, first, last, size, load, length, prize, depot, cu,
           ku, kf):
    """Write work tour ``i`` of buffer ``w`` into tour slot ``t``."""
    depot[t] = depot_number(ku[WDEPOT + w, i], tour.shape[0] - 1)
    v = ku[WHEAD + w, i]
    ld = 0.0
    while v != 0:
        tour[v] = t
        succ[v] = cu[WSUCC + w, v]
        pred[v] = cu[WPRED + w, v]
        ld += dem[v]
        v = succ[v]
    first[t] = ku[WHEAD + w, i]
    last[t] = ku[WTAIL + w, i]
    size[t] = ku[WLEN + w, i]
    load[t] = ld
    length[t] = kf[WL + w, i]
    prize[t] = kf[WP + w, i]


@njit(cache=True)
def commit(w, dem, succ, pred, tour, first, last, size, load, length, prize, depot, cu, ku, kf,
           cnt):
    """Replace the touched and taken tours by the work tours of buffer ``w``; returns the
    new cost, recomputed from the per-tour values (:func:`canonical_cost`).

    A rebuilt or taken tour keeps its slot; a dropped tour frees its slot; an opened
    tour takes the lowest free slot (slot labels never influence a decision).
    """
    for q in range(cnt[NT]):
        _clear(ku[TOUCHED, q], first, last, size, load, length, prize, depot)
    for q in range(cnt[NTAKEN + w]):
        _clear(ku[WTAKEN + w, q], first, last, size, load, length, prize, depot)
    nc = cnt[NC + w]
    for i in range(nc):                   # slots of replaced tours first: they are reserved
        t = ku[WSRC + w, i]
        if t >= 0:
            _write(w, i, t, dem, succ, pred, tour, first, last, size, load, length, prize, depot,
                   cu, ku, kf)
    free = 0
    for i in range(nc):
        if ku[WSRC + w, i] < 0:
            while first[free] != 0:
                free += 1
            _write(w, i, free, dem, succ, pred, tour, first, last, size, load, length, prize,
                   depot, cu, ku, kf)
    for q in range(cnt[NLEFT + w]):
        c = ku[WLEFT + w, q]
        tour[c] = -1
        succ[c] = 0
        pred[c] = 0
    return canonical_cost(tour, pred, length, prize)
