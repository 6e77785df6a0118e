r"""Pairwise and rotary baseline encodings (paper App. E): the inputs of the
attention-side encodings RoPE, RPE, ALiBi and SPD, as batched tensor functions.

Positions follow :mod:`pyg_routing.functional.index_pe` (depot 0, customers
``1..L``, unvisited ``-1``); pairwise outputs ``[B, N, N]`` are limited to
``N <= MAX_BIAS_NODES`` nodes per graph because they grow quadratically.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from pyg_routing.functional.index_pe import (
    MAX_BIAS_NODES,
    _work_dtype,
    check_even_dim,
    check_num_nodes,
    sin_frequencies,
)


# ----------------------------------------------------------------------------- rotary
def apply_rotary(q: Tensor, k: Tensor, position: Tensor,
                 base: float = 1e4) -> tuple[Tensor, Tensor]:
    r"""RoPE: rotate channel pairs ``(2k, 2k+1)`` of queries and keys by
    ``θ = i · base^{-2k/D}`` (``D`` = head dim), so ``<q_i, k_j>`` depends on ``i - j``.

    Args:
        q, k: ``[B, H, N, D]`` (any leading shape whose last two dims are ``N, D``).
        position: ``[B, N]`` or ``[N]`` positions; negative (unvisited, padding)
            counts as 0, i.e. not rotated.

    Returns:
        Rotated ``(q, k)``, same shapes and dtypes.
    """
    dim = q.size(-1)
    check_even_dim(dim, "apply_rotary (head dim)")
    if k.size(-1) != dim:
        raise ValueError(f"apply_rotary: q and k need the same head dim, got {dim} and "
                         f"{k.size(-1)}")
    work = _work_dtype(q.device)
    omega = sin_frequencies(dim, base, q.device, work)
    pos = position.clamp(min=0).to(work)
    if pos.dim() == 2 and q.dim() == 4:
        pos = pos.unsqueeze(1)                                # [B, 1, N]
    angle = pos.unsqueeze(-1) * omega                         # [..., N, D/2]
    cos, sin = torch.cos(angle), torch.sin(angle)
    return _rotate(q, cos, sin), _rotate(k, cos, sin)


def _rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    pairs = x.unflatten(-1, (-1, 2))
    a, b = pairs[..., 0], pairs[..., 1]
    c, s = cos.to(x.dtype), sin.to(x.dtype)
    return torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(-2)


# ----------------------------------------------------------------------------- pairwise
def alibi_slopes(num_heads: int) -> Tensor:
    """ALiBi head slopes (Press et al. 2022), ``[num_heads]`` float64, in the original order.

    For ``H`` a power of two: ``2^{-8h/H}``, ``h = 1..H``. Otherwise the slopes of the
    closest smaller power of two ``P``, then every other slope of ``2P`` for the rest.
    """
    if not isinstance(num_heads, int) or num_heads < 1:
        raise ValueError(f"ALiBi needs num_heads >= 1, got num_heads={num_heads}")

    def power_of_two(h: int) -> list[float]:
        return [2.0 ** (-8.0 * (j + 1) / h) for j in range(h)]

    def slopes(h: int) -> list[float]:
        if h & (h - 1) == 0:
            return power_of_two(h)
        closest = 2 ** int(math.floor(math.log2(h)))
        return power_of_two(closest) + slopes(2 * closest)[0::2][: h - closest]

    return torch.tensor(slopes(num_heads), dtype=torch.float64)


def position_offsets(route_pos: Tensor) -> Tensor:
    """``[B, N, N]`` int32 signed offsets ``i_q - i_k`` of dense ``route_pos [B, N]``."""
    pos = route_pos.int()                      # int32: half the memory traffic of int64
    return pos.unsqueeze(-1) - pos.unsqueeze(-2)


def hop_distance(route_pos: Tensor, route_id: Tensor, mask: Tensor | None = None,
                 max_nodes: int = MAX_BIAS_NODES, open_routes: Tensor | None = None) -> Tensor:
    r"""Shortest-path hop distances on the undirected route graph, closed form, batched.

    A route with ``L`` customers is a cycle through the depot of ``L + 1`` nodes, so
    within a route ``d(i, j) = min(|i - j|, L + 1 - |i - j|)``, to the depot
    ``d(i) = min(i, L + 1 - i)`` (``1`` for a single-customer route) and across routes
    ``d(i) + d(j)``. An open route is the path ``0 - v_1 - ... - v_L`` (no closing
    edge): ``d(i, j) = |i - j|`` and ``d(i) = i``. Unvisited customers are
    unreachable from every other node.

    Args:
        route_pos: ``[B, N]`` positions (depot 0, unvisited and padding -1).
        route_id: ``[B, N]`` route ids (-1 for depot, unvisited, padding).
        mask: ``[B, N]`` bool, False for padding (default: all valid).
        max_nodes: limit on ``N`` (see :func:`check_num_nodes`).
        open_routes: ``[B]`` bool, instances whose routes are open (default: none).

    Returns:
        ``[B, N, N]`` long hop counts; ``-1`` for unreachable pairs and padding;
        ``0`` on the diagonal of every valid node.
    """
    if route_pos.dim() != 2 or route_id.shape != route_pos.shape:
        raise ValueError(f"hop_distance needs route_pos and route_id of shape [B, N], got "
                         f"{tuple(route_pos.shape)} and {tuple(route_id.shape)}")
    b, n = route_pos.shape
    check_num_nodes(n, max_nodes, "hop_distance", batch=b)
    valid = torch.ones_like(route_pos, dtype=torch.bool) if mask is None else mask.bool()
    pos, rid = route_pos.int(), route_id.long()        # int32 math: N <= max_nodes is small
    visited = valid & (pos > 0) & (rid >= 0)
    depot = valid & (pos == 0)
    same = (visited.unsqueeze(-1) & visited.unsqueeze(-2)
            & (rid.unsqueeze(-1) == rid.unsqueeze(-2)))
    cycle = torch.where(same, pos.unsqueeze(-2), 0).amax(-1) + 1            # [B, N]: L + 1
    if open_routes is not None:
        # No way round an open route: the cycle is never shorter than the path.
        cycle = torch.where(open_routes.to(cycle.device).bool().reshape(-1, 1),
                            2 * n + 2, cycle)
    to_depot = torch.where(visited, torch.minimum(pos, cycle - pos), 0)
    gap = (pos.unsqueeze(-1) - pos.unsqueeze(-2)).abs()
    within = torch.minimum(gap, cycle.unsqueeze(-1) - gap)
    dist = torch.where(same, within, to_depot.unsqueeze(-1) + to_depot.unsqueeze(-2))
    reach = visited | depot
    dist = torch.where(reach.unsqueeze(-1) & reach.unsqueeze(-2), dist, -1)
    eye = torch.eye(n, dtype=torch.bool, device=pos.device) & valid.unsqueeze(-1)
    return torch.where(eye, 0, dist).long()
