"""Numba drivers: prange over solution slots around the per-slot core
(:mod:`._core`, :mod:`._attempt`). The typed, validating entry points are in
:mod:`.repair` and :mod:`.start`; call these only through them.

One compiled driver serves the three set operations (``mode``), the start solutions
(``all_tours``) and the three problems (``kind``), so numba compiles one parallel
kernel (about 20 s) and caches it on disk (``cache=True``; later processes load it in
well under a second).

Caveat of numba's cache: a cached function is invalidated only when ITS OWN source
file changes, not when a function it calls changes in another file. After editing
:mod:`._core` or :mod:`._attempt`, delete this package's ``__pycache__`` (an
installed upgrade replaces every file, so users are not affected).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from pyg_routing.envs.deconstruction._attempt import canonical_cost, commit, repair_set
from pyg_routing.envs.deconstruction._core import depot_of, new_scratch

#: Modes of :func:`sets_kernel`.
MODE_SA, MODE_EVALUATE, MODE_COMMIT = 0, 1, 2


@njit(cache=True, parallel=True)
def sets_kernel(mode, all_tours, kind, dist, dist_in, demand, capacity, prize_of, tw, service,
                fleet, limited, inst,
                succ, pred, tour, first, last, size, load, length, prize, depot, cost,
                b_succ, b_pred, b_tour, b_first, b_last, b_size, b_load, b_length, b_prize,
                b_depot, b_cost, sets, u, temperature, which, recreate_n, out_cost, accepted):
    """Apply (``MODE_SA``), score (``MODE_EVALUATE``) or commit (``MODE_COMMIT``) removal
    sets ``sets [S, R, k]`` with uniforms ``u [S, R, U]``, slots in parallel.

    * SA: the R sets one after the other on the evolving slot; accept iff
      ``Δ < -T ln u_metropolis`` (``Δ < 0`` at ``T = 0``); after an accepted commit,
      snapshot the slot into the ``b_*`` arrays when its cost is strictly below
      ``b_cost``; ``accepted[s]`` counts accepted sets.
    * EVALUATE: ``out_cost[s, r] = cost[s] + Δ_r`` against the unchanged slot.
    * COMMIT: re-run set ``which[s]`` (skip if ``< 0``) and commit it unconditionally
      (unless its repair is over the fleet, ``Δ = +inf``: then the slot is unchanged).

    ``dist [I, N+1, N+1]``: travel costs, ``dist[i, a, b]`` of the arc ``a -> b``
    (possibly asymmetric), and ``dist_in`` its transpose
    (:attr:`~.problem.ProblemArrays.dist_in`); ``tw``:
    :attr:`~.problem.ProblemArrays.schedule_tw` (the
    return deadline ``+inf`` on open-route instances).

    ``depot [S, N]``: each tour slot's depot number; ``fleet [I, K]``: the tours each
    depot may open, read when ``limited`` (:mod:`.depots`).

    ``all_tours`` lets the repair insert into untouched tours too (NDS's
    ``insertInNewToursOnly = False``): the start solutions are SA at ``T = 0`` with
    ``recreate_n = 1`` in this mode, from singleton tours.
    """
    num_slots = succ.shape[0]
    n = succ.shape[1] - 1
    k = sets.shape[2]
    last_u = u.shape[2] - 1
    num_depots = fleet.shape[1]
    for s in prange(num_slots):
        cu, cf, tu, tf, ku, kf, cnt, fs, kc = new_scratch(n, k, num_depots)  # once per slot
        i = inst[s]
        flt = fleet[i]
        d = dist[i]
        d_in = dist_in[i]
        dem = demand[i]
        pz = prize_of[i]
        tws = tw[i]
        svc = service[i]
        cap = capacity[i]
        if mode == MODE_COMMIT:
            r = which[s]
            if r >= 0:
                delta, w = repair_set(kind, d, d_in, dem, cap, pz, tws, svc, succ[s], pred[s],
                                      tour[s], first[s], last[s], size[s], load[s], length[s],
                                      prize[s], depot[s], flt, limited, sets[s, r], u[s, r],
                                      recreate_n, all_tours, cu, cf, tu, tf, ku, kf, cnt, fs, kc)
                if delta < np.inf:
                    cost[s] = commit(w, dem, succ[s], pred[s], tour[s], first[s], last[s],
                                     size[s], load[s], length[s], prize[s], depot[s], cu, ku,
                                     kf, cnt)
        else:
            for r in range(sets.shape[1]):
                delta, w = repair_set(kind, d, d_in, dem, cap, pz, tws, svc, succ[s], pred[s],
                                      tour[s], first[s], last[s], size[s], load[s], length[s],
                                      prize[s], depot[s], flt, limited, sets[s, r], u[s, r],
                                      recreate_n, all_tours, cu, cf, tu, tf, ku, kf, cnt, fs, kc)
                if mode == MODE_EVALUATE:
                    out_cost[s, r] = cost[s] + delta
                    continue
                temp = temperature[s]
                threshold = 0.0
                if temp > 0.0:
                    uu = u[s, r, last_u]
                    threshold = np.inf if uu <= 0.0 else -temp * np.log(uu)
                if delta < threshold:
                    cost[s] = commit(w, dem, succ[s], pred[s], tour[s], first[s], last[s],
                                     size[s], load[s], length[s], prize[s], depot[s], cu, ku, kf,
                                     cnt)
                    accepted[s] += 1
                    if cost[s] < b_cost[s]:
                        b_succ[s] = succ[s]
                        b_pred[s] = pred[s]
                        b_tour[s] = tour[s]
                        b_first[s] = first[s]
                        b_last[s] = last[s]
                        b_size[s] = size[s]
                        b_load[s] = load[s]
                        b_length[s] = length[s]
                        b_prize[s] = prize[s]
                        b_depot[s] = depot[s]
                        b_cost[s] = cost[s]


@njit(cache=True)
def recompute_kernel(dist, demand, prize_of, inst, succ, pred, tour, first, size, load,
                     length, prize, depot, cost):
    """Per-tour load, length and prize summed from the tour's depot in tour order, and the
    cost in :func:`canonical_cost` order, for every slot (walks stop after ``N``
    steps, so a corrupted successor cycle cannot hang)."""
    n = succ.shape[1] - 1
    for s in range(succ.shape[0]):
        i = inst[s]
        for t in range(n):
            total = 0.0
            prz = 0.0
            ld = 0.0
            if size[s, t] > 0:
                dn = depot_of(depot[s, t], n)
                v = first[s, t]
                prev = dn
                steps = 0
                while v != 0 and steps <= n:
                    total += dist[i, prev, v]
                    prz += prize_of[i, v]
                    ld += demand[i, v]
                    prev = v
                    v = succ[s, v]
                    steps += 1
                total += dist[i, prev, dn]
            load[s, t] = ld
            length[s, t] = total
            prize[s, t] = prz
        cost[s] = canonical_cost(tour[s], pred[s], length[s], prize[s])
