"""Tours stored as node sequences ``order [B, M]``: successors, positions and the
closed-cycle length, shared by the environments that keep their solutions as one
cycle per instance (2-opt, pair reinsertion)."""

from __future__ import annotations

import torch
from torch import Tensor


def succ_from_order(order: Tensor) -> Tensor:
    """``[B, M]`` successor array of the cycles ``order [B, M]``."""
    return torch.empty_like(order).scatter_(1, order, order.roll(-1, dims=1))


def rank_from_order(order: Tensor) -> Tensor:
    """``[B, M]`` position of every node in ``order [B, M]`` (the inverse permutation)."""
    ar = torch.arange(order.size(1), device=order.device).expand_as(order)
    return torch.empty_like(order).scatter_(1, order, ar)


def cycle_arc_costs(costs: Tensor, order: Tensor) -> Tensor:
    """``[B, M]`` cost of the arc ``order[b, t] -> order[b, t + 1 mod M]`` from the
    travel costs ``costs [B, M, M]`` of the state's nodes (one gather)."""
    b, m = order.shape
    entry = order * m + order.roll(-1, dims=1)
    return costs.reshape(b, m * m).gather(1, entry)


def cycle_cost(pos: Tensor, order: Tensor, costs: Tensor | None = None) -> Tensor:
    """``[B]`` length of the closed cycles ``order [B, M]`` through ``pos [B, M, 2]``,
    or, given ``costs [B, M, M]`` (explicit matrices, open routes), their cost.

    Depot copies share one position (and one row and column of ``costs``), so
    ``depot -> depot`` arcs cost 0 and this is the CVRP cost of the routes. Summed in
    float64 for accuracy, returned in ``pos.dtype``.
    """
    if costs is not None:
        return cycle_arc_costs(costs, order).double().sum(1).to(pos.dtype)
    xy = torch.gather(pos, 1, order.unsqueeze(-1).expand(-1, -1, 2))
    step = xy.roll(-1, dims=1) - xy
    return torch.hypot(step[..., 0], step[..., 1]).double().sum(1).to(pos.dtype)
