"""Numba kernel of the SISR string-removal destroy (NDS's baseline destroy).

The rules, the uniform layout and the bounds are documented in :mod:`.destroy`
(:class:`~pyg_routing.envs.deconstruction.destroy.SISRDestroy`); the pure-Python
reference :mod:`.destroy_reference` follows them expression for expression, so the
two produce identical sets from the same uniforms. Call this only through
:meth:`SISRDestroy.sets_from_uniforms`, which validates the inputs.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from pyg_routing.envs.deconstruction.problem import PCVRP

#: Uniforms a set reads before its strings: ``[0]`` number of strings, ``[1]`` seed.
HEAD_UNIFORMS = 2
#: Uniforms of each string: length, string-or-split coin, preserved length, start.
STRING_UNIFORMS = 4


@njit(cache=True)
def sisr_one_set(kind, order, tour, succ, first, size, ls_max, c_bar, alpha, strict, u, out,
                 ruined, ruined_list, nodes):
    """Write one SISR removal set into ``out`` and return its size.

    Args:
        order: ``int32 [N+1, N]`` neighbour table of the slot's instance (row ``c``:
            ``c`` first, then the other customers by increasing distance).
        tour, succ: ``int32 [N+1]``; first, size: ``int32 [N]`` (one slot).
        ls_max: the slot's maximum string length ``min(L_max, ⌊avg tour size⌋)``.
        u: ``float64 [U]`` this set's uniforms.
        out: ``int32 [k_max]`` (pre-filled with -1).
        ruined: ``bool [N]`` all False on entry and on exit; ruined_list, nodes:
            ``int32 [N]`` scratch.
    """
    n = tour.shape[0] - 1
    ks_max = 4.0 * c_bar / (1.0 + ls_max) - 1.0
    ks = int(1.0 + u[0] * ((ks_max + 0.9999) - 1.0))
    if ks < 1:          # tiny c_bar: NDS's range would be reversed; ruin at least one tour
        ks = 1
    seed = 1 + min(int(u[1] * n), n - 1)
    walk = order[seed]
    count = 0
    nr = 0
    pc_cap = 2.0 * c_bar
    for j in range(n):
        if nr >= ks:
            break
        if kind == PCVRP and count > pc_cap:
            break
        c = walk[j]
        t = tour[c]
        if t < 0:
            # PCVRP: an unvisited customer is removed on its own (a no-op that
            # nominates it for insertion); it ruins no tour.
            out[count] = c
            count += 1
            continue
        if ruined[t]:
            continue
        # The tour as a list, and the position of the customer that triggered it.
        length = size[t]
        v = first[t]
        pos = 0
        for q in range(length):
            nodes[q] = v
            if v == c:
                pos = q
            v = succ[v]
        lt_max = min(length, ls_max)
        b = HEAD_UNIFORMS + STRING_UNIFORMS * nr
        lt = int(1.0 + u[b] * ((lt_max + 0.9999) - 1.0))
        m = 0
        span = lt
        if not (lt < 2 or lt == lt_max or u[b + 1] < 0.5):
            # Split string: keep m >= 1 customers inside a window of lt + m. NDS loops
            # `while rand > alpha and m < m_max: m += 1`; one uniform gives the same
            # law: m > j  iff  u < (1 - alpha)^j (for j < m_max).
            m_max = length - lt
            m = 1
            thr = 1.0 - alpha
            while m < m_max and u[b + 2] < thr:
                m += 1
                thr *= 1.0 - alpha
            span = lt + m
        lo = pos - span + 1 if strict else pos - span
        if lo < 0:
            lo = 0
        hi = min(pos, length - span)
        start = lo + min(int(u[b + 3] * (hi - lo + 1)), hi - lo)
        if m == 0:
            for q in range(start, start + lt):
                out[count] = nodes[q]
                count += 1
        else:
            keep = start + lt // 2
            for q in range(start, keep):
                out[count] = nodes[q]
                count += 1
            for q in range(keep + m, start + span):
                out[count] = nodes[q]
                count += 1
        ruined[t] = True
        ruined_list[nr] = t
        nr += 1
    for q in range(nr):
        ruined[ruined_list[q]] = False
    return count


@njit(cache=True)
def slot_ls_max(size, l_max):
    """``min(L_max, ⌊visited customers / non-empty tours⌋)`` of one slot (1 if it has no
    tour: PCVRP with nothing visited)."""
    total = 0
    tours = 0
    for t in range(size.shape[0]):
        if size[t] > 0:
            total += size[t]
            tours += 1
    if tours == 0:
        return 1
    return min(l_max, total // tours)


@njit(cache=True, parallel=True)
def sisr_kernel(kind, table, inst, tour, succ, first, size, c_bar, l_max, alpha, strict, u,
                out):
    """SISR sets for every slot (prange) and set: ``out [S, R, k_max]`` (pre-filled
    with -1) from ``u [S, R, U]``; ``table [I, N+1, N]`` neighbour tables."""
    num_slots = u.shape[0]
    num_sets = u.shape[1]
    n = tour.shape[1] - 1
    for s in prange(num_slots):
        ruined = np.zeros(n, np.bool_)
        ruined_list = np.empty(n, np.int32)
        nodes = np.empty(n, np.int32)
        ls_max = slot_ls_max(size[s], l_max)
        order = table[inst[s]]
        for r in range(num_sets):
            sisr_one_set(kind, order, tour[s], succ[s], first[s], size[s], ls_max, c_bar,
                         alpha, strict, u[s, r], out[s, r], ruined, ruined_list, nodes)
