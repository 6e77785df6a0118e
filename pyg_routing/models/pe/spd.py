"""SPD: a learnable bias per shortest-path hop distance on the route graph (Ying et al. 2021)."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from pyg_routing.functional.index_pe import MAX_BIAS_NODES
from pyg_routing.functional.pair_pe import hop_distance
from pyg_routing.models.pe.base import AttentionBias


class ShortestPathBias(AttentionBias):
    r"""Shortest-path-distance bias (paper App. E): ``logit(i, j) += b_{spd(v_i, v_j)}``.

    Hop distances on the undirected route graph come in closed form from
    :func:`~pyg_routing.functional.pair_pe.hop_distance` (no BFS, batched), are
    capped at ``max_distance`` (the paper caps at the route-graph diameter, see
    :meth:`diameter`), and pairs with no path (an unvisited customer) get their own
    bucket. On instances with open routes (``open_routes`` of :meth:`forward`) each
    route is a path from the depot, with no closing edge.

    Args:
        num_heads: ``H``.
        max_distance: cap on the hop distance; buckets ``0..max_distance`` and
            "unreachable".
        per_head: ``False`` (default, as in the paper: one learnable scalar per
            distance shared by all heads); ``True``: one per head (Graphormer).
        max_nodes: limit on ``N`` (see :class:`AttentionBias`).

    Shapes:
        ``route_pos, route_id, mask [B, N]`` -> ``[B, H, N, N]``.
    """

    needs_route_id = True

    def __init__(self, num_heads: int, max_distance: int, per_head: bool = False,
                 max_nodes: int = MAX_BIAS_NODES) -> None:
        super().__init__(num_heads, max_nodes)
        if not isinstance(max_distance, int) or max_distance < 1:
            raise ValueError(f"ShortestPathBias needs max_distance >= 1, "
                             f"got max_distance={max_distance}")
        self.max_distance = max_distance
        self.per_head = per_head
        self.weight = nn.Parameter(torch.empty(num_heads if per_head else 1, max_distance + 2))
        self.reset_parameters()

    @staticmethod
    def diameter(max_route_size: int, multi_route: bool = True) -> int:
        """Largest hop distance in a route graph whose routes have at most
        ``max_route_size`` customers ``L``: ``2·ceil(L/2)`` (two routes of ``L``
        customers attain it), ``ceil(L/2)`` for a single route (TSP)."""
        half = math.ceil(max(int(max_route_size), 0) / 2)
        return max(1, 2 * half if multi_route else half)

    def reset_parameters(self) -> None:
        nn.init.normal_(self.weight, std=0.02)

    def pair_bias(self, route_pos: Tensor, route_id: Tensor, mask: Tensor,
                  open_routes: Tensor | None = None) -> Tensor:
        dist = hop_distance(route_pos, route_id, mask, max_nodes=self.max_nodes,
                            open_routes=open_routes)
        index = torch.where(dist >= 0, dist.clamp(max=self.max_distance), self.max_distance + 1)
        return self.weight[:, index].transpose(0, 1)                         # [B, H|1, N, N]

    def extra_args(self) -> str:
        return f"max_distance={self.max_distance}, per_head={self.per_head}"
