"""A slow pure-Python reference of :class:`~.destroy.SISRDestroy`, for tests.

It works on route lists and a plain distance matrix (its own neighbour order, a
brute-force sort) and reads the same uniform layout, so it returns the same sets as
the numba kernel (:mod:`._sisr_kernel`). Rules: see the ``SISRDestroy`` docstring.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pyg_routing.envs.deconstruction.problem import PCVRP


def walk_order(dist: np.ndarray, seed: int) -> list[int]:
    """The seed, then the other customers by ``(dist[seed, c], c)``."""
    n = dist.shape[0] - 1
    others = sorted((c for c in range(1, n + 1) if c != seed),
                    key=lambda c: (float(dist[seed, c]), c))
    return [seed, *others]


def sisr_set(kind: int, dist: np.ndarray, routes: Sequence[Sequence[int]], u: Sequence[float],
             c_bar: float, l_max: int, alpha: float, strict: bool = False) -> list[int]:
    """One SISR removal set of the solution ``routes`` (customers not in a route are
    unvisited) from the uniform row ``u``; ``dist [N+1, N+1]``."""
    n = dist.shape[0] - 1
    routes = [list(r) for r in routes if len(r)]
    where = {c: i for i, r in enumerate(routes) for c in r}
    ls_max = min(l_max, sum(map(len, routes)) // len(routes)) if routes else 1
    ks_max = 4.0 * c_bar / (1.0 + ls_max) - 1.0
    ks = max(1, int(1.0 + u[0] * ((ks_max + 0.9999) - 1.0)))
    seed = 1 + min(int(u[1] * n), n - 1)
    removed: list[int] = []
    ruined: list[int] = []
    for c in walk_order(dist, seed):
        if len(ruined) >= ks or (kind == PCVRP and len(removed) > 2.0 * c_bar):
            break
        if c not in where:
            removed.append(c)
            continue
        t = where[c]
        if t in ruined:
            continue
        nodes = routes[t]
        pos = nodes.index(c)
        lt_max = min(len(nodes), ls_max)
        b = 2 + 4 * len(ruined)
        lt = int(1.0 + u[b] * ((lt_max + 0.9999) - 1.0))
        split = not (lt < 2 or lt == lt_max or u[b + 1] < 0.5)
        m = 0
        if split:
            # NDS: m = 1; while rand > alpha and m < |t| - lt: m += 1 — with one uniform.
            # (1 - alpha)^j by repeated products, exactly as the kernel computes it.
            m, thr = 1, 1.0 - alpha
            while m < len(nodes) - lt and u[b + 2] < thr:
                m, thr = m + 1, thr * (1.0 - alpha)
        w = lt + m
        lo = max(0, pos - w + (1 if strict else 0))
        hi = min(pos, len(nodes) - w)
        start = lo + min(int(u[b + 3] * (hi - lo + 1)), hi - lo)
        window = nodes[start:start + w]
        if split:
            half = lt // 2
            removed += window[:half] + window[half + m:]
        else:
            removed += window
        ruined.append(t)
    return removed


def sisr_sets(kind: int, dist: np.ndarray, routes: Sequence[Sequence[int]], u: np.ndarray,
              c_bar: float, l_max: int, alpha: float, strict: bool = False) -> list[list[int]]:
    """Sets for every uniform row of ``u [R, U]``, all for the same solution."""
    return [sisr_set(kind, dist, routes, row, c_bar, l_max, alpha, strict) for row in u]
