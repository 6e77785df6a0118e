"""ALiBi: a fixed, head-specific linear penalty on the position gap (Press et al. 2022)."""

from __future__ import annotations

from torch import Tensor

from pyg_routing.functional.index_pe import MAX_BIAS_NODES
from pyg_routing.functional.pair_pe import alibi_slopes, position_offsets
from pyg_routing.models.pe.base import AttentionBias


class ALiBiBias(AttentionBias):
    r"""ALiBi (paper App. E): ``logit(i, j) -= m_h · |i - j|`` with ``i, j`` the
    within-route positions (depot 0) and the original geometric slopes
    (:func:`~pyg_routing.functional.pair_pe.alibi_slopes`): ``m_h = 2^{-8h/H}`` for
    ``H`` a power of two, e.g. ``[1/2, 1/4, ..., 1/256]`` for ``H = 8``; otherwise the
    closest smaller power of two plus every other slope of the doubled set.

    Pairs involving an unvisited customer get no penalty (0). No learnable
    parameters; the slopes are a buffer (moves with ``.to(device)``).

    Shapes:
        ``route_pos, route_id, mask [B, N]`` -> ``[B, H, N, N]``.
    """

    def __init__(self, num_heads: int, max_nodes: int = MAX_BIAS_NODES) -> None:
        super().__init__(num_heads, max_nodes)
        self.register_buffer("slopes", alibi_slopes(num_heads).float())

    def pair_bias(self, route_pos: Tensor, route_id: Tensor, mask: Tensor,
                  open_routes: Tensor | None = None) -> Tensor:
        # Offsets along the route: the same on an open route (no closing edge is read).
        gap = position_offsets(route_pos).abs().to(self.slopes.dtype)        # [B, N, N]
        placed = route_pos >= 0
        gap = gap * (placed.unsqueeze(-1) & placed.unsqueeze(-2))
        return -self.slopes.view(1, -1, 1, 1) * gap.unsqueeze(1)
