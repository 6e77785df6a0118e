"""RPE: a learnable bias per clipped within-route position offset (Shaw et al. 2018)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pyg_routing.functional.index_pe import MAX_BIAS_NODES
from pyg_routing.functional.pair_pe import position_offsets
from pyg_routing.models.pe.base import AttentionBias


class RelativePositionBias(AttentionBias):
    r"""Relative position bias (paper App. E): ``logit(i, j) += b_{clip(i - j, -W, W)}``.

    ``i`` and ``j`` are the within-route positions of the query and key node (depot
    0), compared as printed in the paper, whatever route the nodes are on. Pairs
    involving an unvisited customer get one extra learnable bucket.

    Args:
        num_heads: ``H``.
        window: ``W``; offsets are clipped to ``[-W, W]``.
        per_head: ``False`` (default, as in the paper): one table ``{b_Δ}`` shared by
            all heads; ``True``: one table per head.
        max_nodes: limit on ``N`` (see :class:`AttentionBias`).

    Shapes:
        ``route_pos, route_id, mask [B, N]`` -> ``[B, H, N, N]``.
    """

    def __init__(self, num_heads: int, window: int = 16, per_head: bool = False,
                 max_nodes: int = MAX_BIAS_NODES) -> None:
        super().__init__(num_heads, max_nodes)
        if not isinstance(window, int) or window < 0:
            raise ValueError(f"RelativePositionBias needs window >= 0, got window={window}")
        self.window = window
        self.per_head = per_head
        buckets = 2 * window + 2                        # offsets -W..W, then "unvisited"
        self.weight = nn.Parameter(torch.empty(num_heads if per_head else 1, buckets))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.weight, std=0.02)

    def pair_bias(self, route_pos: Tensor, route_id: Tensor, mask: Tensor,
                  open_routes: Tensor | None = None) -> Tensor:
        # Offsets along the route: the same on an open route (no closing edge is read).
        w = self.window
        index = position_offsets(route_pos).clamp(-w, w) + w                  # [B, N, N]
        placed = route_pos >= 0
        index = torch.where(placed.unsqueeze(-1) & placed.unsqueeze(-2), index, 2 * w + 1)
        return self.weight[:, index].transpose(0, 1)                         # [B, H|1, N, N]

    def extra_args(self) -> str:
        return f"window={self.window}, per_head={self.per_head}"
