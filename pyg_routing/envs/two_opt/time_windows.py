"""Exact segment-based VRPTW time-window mask of all 2-opt moves of a giant cycle.

The state (see :mod:`.state`) is one giant cycle ``order [B, M]`` starting at depot
copy 0; closing it gives the sequence ``closed = order + [order[0]]`` of ``M + 1``
positions. A move with cycle positions ``lo < hi`` turns it into

    ``closed[0 .. lo]  +  reverse(closed[lo+1 .. hi])  +  closed[hi+1 .. M]``

(see :func:`.moves.apply_two_opt`), and the move is time-window feasible iff that
whole closed sequence is (as decided by :func:`.state.time_window_feasible`).

Segment summaries (max-plus maps, cf. the segments of Vidal et al., 2013). A node
``v`` maps the arrival ``x`` at ``v`` to its departure ``max(x, e_v) + s_v`` and
requires ``x <= L_v = l_v + tol``; a depot copy maps every arrival to the constant
``e_0 + s_0`` (the clock reset). A path is summarised by ``(c, a, z, ok)``:

* departure from its last node ``= max(x + c, a)`` for the arrival ``x`` at its first
  node (``c = -inf`` once the path contains a depot copy);
* ``x <= z`` is the condition on ``x`` of all its arrival constraints;
* ``ok``: the constraints that do not depend on ``x`` hold.

Two paths joined by an arc of travel time ``d`` give (associative, exact)::

    (cX + d + cY,  max(aX + d + cY, aY),  min(zX, zY - cX - d),  okX & okY & aX + d <= zY)

Since the cycle starts at a depot copy, the feasibility of ``A + R + C`` needs only
``(a, ok)`` of the prefix ``A``, all of the reversed middle ``R`` and ``(z, ok)`` of
the suffix ``C``. Per instance:

* prefix and suffix summaries of the closed sequence: two Hillis-Steele scans,
  ``O(M log M)``;
* reversed segments: a sparse table ``T_k[t]`` = summary of
  ``reverse(closed[t .. t + 2^k - 1])`` (``T_{k+1}[t] = T_k[t + 2^k] + T_k[t]``),
  ``O(M log M)``; the reversed middle of every pair ``lo < hi`` is the
  concatenation of the blocks of the binary decomposition of ``hi - lo``, taken from
  ``hi`` downwards: ``log M`` rounds over all ``M (M - 1) / 2`` pairs at once,
  ``O(M^2 log M)``;
* two new arcs ``order[lo] -> order[hi]`` and ``order[lo+1] -> closed[hi+1]`` per pair.

Routes untouched by a move thus stay in the prefix / suffix, routes inside the span
are reversed whole, and the routes through the new arcs are prefix + reversed piece
+ suffix, all covered by the same three summaries; the result equals the brute force
for every state, feasible or not, and every pair (``lo == hi`` gives the current
cycle, as in the brute force). Arithmetic is float64 with the travel times computed
exactly like :func:`.state.time_window_feasible` (``hypot`` in ``pos.dtype``), so the
results agree up to rounding-order differences far below the tolerance
``tol = TIME_RTOL * max(1, max |tw|)`` (:func:`pyg_routing.data.feasibility.time_tolerance`).

Layout: positions (and pairs) along dim 0, instances along dim 1, so that every
selection of positions or pairs is one ``index_select`` of contiguous rows. The
pair bookkeeping (which pairs take which block in which round) depends on ``M``
only and is built once per ``M`` on the CPU. The only Python loops are over the
``log2 M`` doubling rounds and over chunks of instances (memory ``O(chunk)``).
"""

from __future__ import annotations

import functools
import math

import torch
from torch import Tensor

from pyg_routing.data.feasibility import time_tolerance
from pyg_routing.envs.two_opt.state import TwoOptState

#: ``(c, a, z, ok)`` of many paths, each field ``[S, B]`` (see the module docstring).
Summary = tuple[Tensor, Tensor, Tensor, Tensor]


def two_opt_time_window_mask(state: TwoOptState, chunk: int = 1 << 21) -> Tensor:
    """``[B, M, M]`` bool: the time windows hold after the move ``(i, j)`` (node ids).

    Exact (equals the brute force of :func:`.moves._time_window_mask_brute_force`)
    for every pair, including ``i == j`` and the other no-op pairs, which give the
    feasibility of the resulting cycle like every other pair. ``O(M^2 log M)`` work
    and ``O(M^2)`` memory per instance; instances are processed in chunks of about
    ``chunk`` ``(instance, i, j)`` entries.

    Args:
        state: a VRPTW state (``time_window`` and ``service_time`` set).
    """
    if state.time_window is None or state.service_time is None:
        raise ValueError("the time-window mask needs a state with time windows (VRPTW)")
    b, m = state.order.shape
    dev = state.device
    plan = [t.to(dev) for t in _plan(m)]
    per = max(1, chunk // max(1, m * m))
    out = []
    for start in range(0, b, per):       # loop over chunks of instances, not instances
        sl = slice(start, start + per)
        costs = None if state.costs is None else state.costs[sl]
        opened = None if state.open_routes is None else state.open_routes[sl]
        out.append(_chunk_mask(state.order[sl], state.pos[sl], state.time_window[sl],
                               state.service_time[sl], state.num_depots, plan, costs,
                               opened))
    return torch.cat(out, 0)


@functools.lru_cache(maxsize=32)
def _plan(m: int) -> tuple[Tensor, ...]:
    """Position pairs ``lo < hi`` and, per bit ``k`` of ``hi - lo`` (low to high), the
    pairs whose reversed middle starts with (``first``) or is extended by (``join``)
    the block of ``2^k`` positions ending at ``end``: ``(lo, hi, first_k, start_k,
    join_k, start_k, end_k, ...)``, CPU long tensors depending on ``m`` only."""
    lo, hi = torch.triu_indices(m, m, offset=1)
    length, end = hi - lo, hi.clone()
    empty = torch.ones_like(lo, dtype=torch.bool)
    plan = [lo, hi]
    for k in range(max(1, (m - 1).bit_length())):
        bit = ((length >> k) & 1).bool()
        first, join = torch.nonzero(bit & empty)[:, 0], torch.nonzero(bit & ~empty)[:, 0]
        plan += [first, end[first] - (1 << k) + 1, join, end[join] - (1 << k) + 1, end[join]]
        empty &= ~bit
        end = torch.where(bit, end - (1 << k), end)
    return tuple(plan)


def _concat(x: Summary, y: Summary, d: Tensor) -> Summary:
    """Summary of path ``x``, an arc of travel time ``d``, then path ``y``."""
    cx, ax, zx, okx = x
    cy, ay, zy, oky = y
    arrive = ax + d                      # earliest arrival at y's first node
    return (cx + d + cy, torch.maximum(arrive + cy, ay), torch.minimum(zx, zy - cx - d),
            okx & oky & (arrive <= zy))


def _take(x: Summary, idx: Tensor) -> Summary:
    """Rows ``idx`` (positions or pairs, the same for every instance) of ``x``."""
    return tuple(f.index_select(0, idx) for f in x)  # type: ignore[return-value]


def _where(cond: Tensor, x: Summary, y: Summary) -> Summary:
    return tuple(torch.where(cond, u, v) for u, v in zip(x, y))  # type: ignore[return-value]


def _hypot(diff: Tensor) -> Tensor:
    """Euclidean travel times in ``pos.dtype``, then float64 (as the brute force)."""
    return torch.hypot(diff[..., 0], diff[..., 1]).double()


def _chunk_mask(order: Tensor, pos: Tensor, time_window: Tensor, service_time: Tensor,
                num_depots: int, plan: list[Tensor], costs: Tensor | None = None,
                open_routes: Tensor | None = None) -> Tensor:
    """Node-indexed ``[B, M, M]`` mask of one chunk of instances; ``costs [B, M, M]``:
    asymmetric travel times (reversed paths use the backward arcs)."""
    b, m = order.shape
    dev = order.device
    lo, hi = plan[0], plan[1]
    closed = torch.cat([order, order[:, :1]], 1).t()                      # [M+1, B]
    if costs is None:
        xy = pos.gather(1, closed.t().unsqueeze(-1).expand(b, m + 1, 2)).transpose(0, 1)

        def travel(u: Tensor, v: Tensor) -> Tensor:           # rows of positions [S]
            return _hypot(xy.index_select(0, v) - xy.index_select(0, u))
    else:
        flat = costs.reshape(b, m * m)

        def travel(u: Tensor, v: Tensor) -> Tensor:
            entry = closed.index_select(0, u) * m + closed.index_select(0, v)   # [S, B]
            return flat.gather(1, entry.t()).t().double()
    ahead = torch.arange(m, device=dev)
    dist = travel(ahead, ahead + 1)                          # [M, B]: closed[t] -> t+1
    # back[t]: closed[t + 1] -> closed[t], the arcs of reversed paths
    back = dist if costs is None else travel(ahead + 1, ahead)
    tw = time_window.double().gather(1, closed.t().unsqueeze(-1).expand(b, m + 1, 2))
    tw = tw.transpose(0, 1)
    svc = service_time.double().gather(1, closed.t()).t()
    tol = time_tolerance(time_window.abs().amax(dim=(1, 2)))                    # [B]
    # Node summaries: arrival x -> max(x + s, e + s), x <= l + tol; depots: constant.
    due = tw[..., 1] + tol
    if open_routes is not None:                 # open routes: no deadline back home
        due = torch.where((closed < num_depots) & open_routes, math.inf, due)
    elem: Summary = (torch.where(closed < num_depots, -math.inf, svc), tw[..., 0] + svc,
                     due, torch.ones_like(closed, dtype=torch.bool))
    ar = torch.arange(m + 1, device=dev).unsqueeze(1)

    # Prefix summaries pre[t] of closed[0 .. t] and suffix summaries suf[t] of
    # closed[t .. M]: inclusive Hillis-Steele scans (the arc between closed[t] and
    # closed[t + 1] is dist[t]).
    pre, suf, shift = elem, elem, 1
    while shift <= m:
        left = (ar[:, 0] - shift).clamp(min=0)
        pre = _where(ar >= shift, _concat(_take(pre, left), pre, dist[left]), pre)
        right = (ar[:, 0] + shift).clamp(max=m)
        suf = _where(ar + shift <= m,
                     _concat(suf, _take(suf, right), dist[(right - 1).clamp(min=0)]), suf)
        shift *= 2

    # Sparse table: table[k][t] summarises reverse(closed[t .. t + 2^k - 1]); rows
    # running past position M are garbage and never read.
    table = [elem]
    for k in range((len(plan) - 2) // 5 - 1):   # one level per round of _plan
        upper = (ar[:, 0] + (1 << k)).clamp(max=m)
        table.append(_concat(_take(table[k], upper), table[k],
                             back[(upper - 1).clamp(max=m - 1)]))

    # Reversed middle reverse(closed[lo+1 .. hi]) of every pair [P, B]: the blocks of
    # the binary decomposition of hi - lo, from hi downwards (see _plan).
    mid = tuple(torch.empty(lo.numel(), b, dtype=f.dtype, device=dev) for f in elem)
    for k, level in enumerate(table):
        first, f_start, join, j_start, j_end = plan[2 + 5 * k: 7 + 5 * k]
        for field, value in zip(mid, _take(level, f_start)):
            field.index_copy_(0, first, value)
        joined = _concat(_take(mid, join), _take(level, j_start), back.index_select(0, j_end))
        for field, value in zip(mid, joined):
            field.index_copy_(0, join, value)

    # prefix closed[0 .. lo] -> order[hi] ... order[lo+1] -> suffix closed[hi+1 .. M].
    _, a_pre, _, ok_pre = _take(pre, lo)
    _, _, z_suf, ok_suf = _take(suf, hi + 1)
    c_mid, a_mid, z_mid, ok_mid = mid
    arrive = a_pre + travel(lo, hi)
    leave = torch.maximum(arrive + c_mid, a_mid)
    leave = leave + travel(lo + 1, hi + 1)
    ok = ok_pre & ok_mid & ok_suf & (arrive <= z_mid) & (leave <= z_suf)      # [P, B]

    # Node-indexed: the current cycle everywhere (lo == hi), then both orders of
    # every pair (the same move).
    out = pre[3][m].view(b, 1, 1).expand(b, m, m).clone()
    base = (torch.arange(b, device=dev) * m * m).unsqueeze(0)
    u, v = closed.index_select(0, lo), closed.index_select(0, hi)       # node ids [P, B]
    flat = out.view(-1)
    flat[base + u * m + v] = ok
    flat[base + v * m + u] = ok
    return out
