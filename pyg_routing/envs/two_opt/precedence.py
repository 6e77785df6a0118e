"""PDTSP in the 2-opt environment: the precedence mask of segment reversals and the
node features of pickup-and-delivery tours.

A 2-opt move on positions ``lo < hi`` of the cycle reverses ``order[lo+1 .. hi]``.
Nodes outside the segment keep their places and nodes inside stay inside, so the
only pickup-delivery orders that change are those of requests with BOTH ends in
the segment: the move is feasible (on a feasible tour) iff no request has
``lo < rank(pickup)`` and ``rank(delivery) <= hi``. That is a 2-D dominance count
over the ``P`` points ``(rank(pickup), rank(delivery))``: one scatter into a
``[B, M, M]`` grid and two cumulative sums, ``O(B M^2)``, no loop over requests or
nodes.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pyg_routing.envs.two_opt.state import TwoOptState


def request_counts(rank: Tensor, pairs: Tensor) -> Tensor:
    """``[B, M, M]`` long: ``C[b, x, y]`` = number of requests of instance ``b`` with
    ``rank(pickup) >= x`` and ``rank(delivery) <= y``.

    Args:
        rank: ``[B, M]`` position of every node in the cycle.
        pairs: ``[B, 2, P]`` node ids of the requests' pickups (row 0) and
            deliveries (row 1).
    """
    b, m = rank.shape
    a, d = rank.gather(1, pairs[:, 0]), rank.gather(1, pairs[:, 1])  # [B, P]
    grid = torch.zeros(b, m * m, dtype=torch.long, device=rank.device)
    grid.scatter_add_(1, a * m + d, torch.ones_like(a))
    grid = grid.view(b, m, m)
    # Suffix sums over the pickup rank, prefix sums over the delivery rank.
    return grid.flip(1).cumsum(1).flip(1).cumsum(2)


def precedence_mask(state: TwoOptState) -> Tensor:
    """``[B, M, M]`` bool: True where the 2-opt move ``(i, j)`` keeps every pickup
    before its delivery (see the module docstring). Symmetric in ``i, j``; the
    no-op and undo entries are the caller's (:func:`.moves.action_mask`)."""
    b, m = state.order.shape
    counts = request_counts(state.rank, state.pairs)
    # By positions: free[lo, hi] = no request inside (lo, hi], for lo < hi.
    free = torch.ones(b, m, m, dtype=torch.bool, device=state.device)
    free[:, :-1] = counts[:, 1:] == 0
    upper = torch.ones(m, m, dtype=torch.bool, device=state.device).triu(1)
    free = torch.where(upper, free, free.transpose(1, 2))
    # By nodes: entry (i, j) reads free[rank i, rank j].
    rank = state.rank
    free = free.gather(1, rank.unsqueeze(2).expand(b, m, m))
    return free.gather(2, rank.unsqueeze(1).expand(b, m, m))


def pdtsp_features(state: TwoOptState) -> Tensor:
    """``[B, M, 7]`` node features of PDTSP tours: ``x, y, role`` (+1 pickup, -1
    delivery, 0 depot), the requests open after the node along the current tour
    divided by ``P`` (the load of a unit-demand vehicle), the partner's ``x, y``
    (the depot's own), ``is_depot``. Positions are read from ``state.pos``, so the
    features follow an augmentation of the coordinates."""
    b, m = state.order.shape
    pick, drop = state.pairs[:, 0], state.pairs[:, 1]
    p = pick.size(1)
    role = state.pos.new_zeros(b, m)
    role.scatter_(1, pick, 1.0).scatter_(1, drop, -1.0)
    carried = role.gather(1, state.order).cumsum(1) / p               # by cycle position
    carried = carried.gather(1, state.rank)                           # by node
    partner = torch.arange(m, device=state.device).repeat(b, 1)
    partner.scatter_(1, pick, drop).scatter_(1, drop, pick)
    partner_xy = state.pos.gather(1, partner.unsqueeze(-1).expand(b, m, 2))
    dep = state.depot_mask.to(state.pos.dtype).unsqueeze(-1)
    return torch.cat([state.pos, role.unsqueeze(-1), carried.unsqueeze(-1), partner_xy, dep],
                     -1)
