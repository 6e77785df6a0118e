"""Batched cheapest insertion (TSP, PDTSP): a starting solution for improvement methods.

The same contract as the other constructive heuristics
(:mod:`pyg_routing.data.solvers.constructive`): dense :class:`RoutingInstances` in,
giant tours out, vectorized over the batch, with the only Python loop over insertion
steps. Asymmetric costs are inserted direction-correctly (``d(i, v) + d(v, j) - d(i, j)``).
"""

from __future__ import annotations

import torch
from torch import Tensor

from pyg_routing.data.costs import euclidean_matrix
from pyg_routing.data.dense_rows import take_rows
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.data.solvers.constructive import _check_problem
from pyg_routing.errors import InvalidInstanceError


def _insert_after(tour: Tensor, after: Tensor, node: Tensor) -> Tensor:
    """Insert ``node[b]`` after position ``after[b]`` of ``tour [B, L]`` (the last
    entry falls off, so ``L`` must exceed the tour's size)."""
    cols = torch.arange(tour.size(1), device=tour.device).unsqueeze(0)
    a = after.unsqueeze(1)
    return torch.where(cols <= a, tour,
                       torch.where(cols == a + 1, node.unsqueeze(1), tour.roll(1, dims=1)))


def cheapest_insertion(instances: RoutingInstances) -> Tensor:
    """Cheapest insertion (TSP, PDTSP), starting from the depot alone.

    Each step inserts the node (PDTSP: the pickup-delivery pair) whose insertion
    increases the tour length least, at its best position (PDTSP: pickup before
    delivery, either adjacent or with the delivery anywhere later in the tour).
    Per step this costs ``O(B N^2)`` (TSP) or ``O(B N P)`` (PDTSP, ``P`` pairs)
    tensor work: the best delivery position after each pickup position is a
    suffix minimum, not a search over all position pairs.

    Returns:
        ``[B, N + 1]`` long giant tours (one route).
    """
    _check_problem("cheapest_insertion", instances, (Problem.TSP, Problem.PDTSP))
    costs = instances.travel.matrix_or_none()
    dist = euclidean_matrix(instances.pos) if costs is None else costs     # [B, N, N]
    # ``dist_t[b, j, i] = dist[b, i, j]``: arcs INTO a node as rows. A Euclidean
    # matrix is exactly symmetric (hypot of negated differences), so it is its own.
    dist_t = dist if costs is None else dist.transpose(1, 2).contiguous()
    if instances.problem is Problem.TSP:
        tour = _insertion_tsp(dist, dist_t)
    else:
        tour = _insertion_pdtsp(dist, dist_t,
                                instances.pickup_delivery_index.to(dist.device))
    return torch.cat([tour, tour.new_zeros(tour.size(0), 1)], dim=1)


def _insertion_tsp(dist: Tensor, dist_t: Tensor) -> Tensor:
    """``[B, N]`` cheapest-insertion tour from distances ``[B, N, N]`` (and their
    transpose ``dist_t``: asymmetric costs insert ``v`` on ``i -> j`` at
    ``d(i, v) + d(v, j) - d(i, j)``).

    Keeps ``cost[b, i, v]``, the cost of inserting ``v`` on the arc leaving tour
    node ``i`` (``inf`` for ``i`` not yet in the tour), so a step only refreshes
    the two arcs it creates instead of recomputing all of them.
    """
    b, n, _ = dist.shape
    rows = torch.arange(b, device=dist.device)
    inf = float("inf")
    succ = torch.zeros(b, n, dtype=torch.long, device=dist.device)
    cost = torch.full_like(dist, inf)
    cost[:, 0] = 2 * dist[:, 0] if dist_t is dist else dist[:, 0] + dist_t[:, 0]  # 0 -> 0
    # Additive column penalty: a broadcast add is much cheaper than masked_fill.
    taken = torch.zeros(b, n, dtype=dist.dtype, device=dist.device)
    taken[:, 0] = inf

    def refresh(tail: Tensor) -> None:
        head = succ[rows, tail]
        value = (take_rows(dist, tail) + take_rows(dist_t, head)
                 - dist[rows, tail, head].unsqueeze(1))
        cost.view(b * n, n).index_copy_(0, tail + rows * n, value)         # see take_rows

    for _ in range(n - 1):
        best = (cost + taken.unsqueeze(1)).reshape(b, -1).argmin(dim=1)
        after, node = best // n, best % n
        succ[rows, node] = succ[rows, after]
        succ[rows, after] = node
        taken[rows, node] = inf
        refresh(after)
        refresh(node)
    order = torch.zeros(b, n, dtype=torch.long, device=dist.device)  # walk the cycle from 0
    for k in range(1, n):
        order[:, k] = succ[rows, order[:, k - 1]]
    return order


def _insertion_pdtsp(dist: Tensor, dist_t: Tensor, pairs: Tensor) -> Tensor:
    """``[B, N]`` cheapest pair-insertion tour (pickups before their deliveries)."""
    b, n, _ = dist.shape
    device = dist.device
    rows = torch.arange(b, device=device)
    p = pairs.size(1)
    if 2 * p != n - 1:
        raise InvalidInstanceError(f"cheapest_insertion needs every PDTSP customer in a "
                                   f"pickup-delivery pair ({2 * p} of {n - 1} are)")
    pick, deli = pairs[0], pairs[1]
    d_pick, d_deli = dist[:, :, pick], dist[:, :, deli]                     # [B, N, P]
    # out of the pickups / deliveries: t_pick[b, v, r] = d(pick_r, v)
    t_pick, t_deli = dist_t[:, :, pick], dist_t[:, :, deli]
    d_pd = dist[:, pick, deli].unsqueeze(1)                                 # [B, 1, P]
    tour = torch.zeros(b, n, dtype=torch.long, device=device)               # by position
    taken = torch.zeros(b, 1, p, dtype=dist.dtype, device=device)
    for step in range(p):
        size = 1 + 2 * step
        # Work in *reversed* position order j = size - 1 - q, so the "best delivery
        # slot after position q" suffix minimum is a plain cummin (no big flips).
        here = tour[:, :size]
        succ = torch.cat([tour[:, 1:size], tour.new_zeros(b, 1)], dim=1)   # closes at 0
        here, succ = here.flip(1), succ.flip(1)
        base = dist[rows.unsqueeze(1), here, succ].unsqueeze(2)             # [B, S, 1]
        pick_here = take_rows(d_pick, here)                                 # [B, S, P]
        deli_succ = take_rows(t_deli, succ)
        # Pickup after q (delivery later), delivery after q, or both adjacent:
        # q -> pickup -> delivery -> succ(q).
        c_pick = pick_here + take_rows(t_pick, succ) - base
        c_deli = take_rows(d_deli, here) + deli_succ - base
        c_adj = pick_here + d_pd + deli_succ - base
        run_val, run_idx = torch.cummin(c_deli, dim=1)
        later_val = torch.cat([torch.full_like(taken, float("inf")), run_val[:, :-1]], dim=1)
        later_idx = torch.cat([run_idx.new_zeros(b, 1, p), run_idx[:, :-1]], dim=1)
        c_apart = c_pick + later_val
        apart = c_apart < c_adj
        cost = torch.where(apart, c_apart, c_adj) + taken
        best = cost.reshape(b, -1).argmin(dim=1)
        j, r = best // p, best % p
        after = size - 1 - j
        deli_after = torch.where(apart.reshape(b, -1)[rows, best],
                                 size - 1 - later_idx.reshape(b, -1)[rows, best], after)
        tour = _insert_after(tour, after, pick[r])
        # Positions after `after` moved one step right; the pickup sits at after + 1.
        tour = _insert_after(tour, deli_after + 1, deli[r])
        taken[rows, 0, r] = float("inf")
    return tour


# ---------------------------------------------------------------------- conversions
