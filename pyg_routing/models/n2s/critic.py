"""N2S's critic: one attention block over the (detached) node embeddings, then a
value head reading mean- and max-pooled fused features and the best-so-far cost."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pyg_routing.models.attention import RouteAttention
from pyg_routing.models.inplace import InplaceReLU
from pyg_routing.models.n2s.synthesis_attention import instance_norm


class N2SCritic(nn.Module):
    r"""``V(s)`` from node embeddings ``h [B, M, D]`` and the best-so-far cost
    ``[B, 1]``: multi-head attention (scaled) and a feed-forward block with residuals
    and :func:`instance_norm`, then ``fused = h W_node + mean(h) W_graph`` (``D/2``
    each) and an MLP on ``[mean(fused), max(fused), best cost]`` (``D + 1 -> D ->
    D/2 -> 1``, dropout 0.01 after the first layer, as in N2S)."""

    def __init__(self, dim: int, heads: int = 4) -> None:
        super().__init__()
        self.attn = RouteAttention(dim, heads)
        self.ff = nn.Sequential(nn.Linear(dim, dim), InplaceReLU(), nn.Linear(dim, dim))
        self.project_node = nn.Linear(dim, dim // 2)
        self.project_graph = nn.Linear(dim, dim // 2)
        self.value = nn.Sequential(nn.Linear(2 * (dim // 2) + 1, dim), InplaceReLU(),
                                   nn.Dropout(0.01), nn.Linear(dim, dim // 2),
                                   InplaceReLU(), nn.Linear(dim // 2, 1))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.attn.reset_parameters()
        for mod in (*self.ff, self.project_node, self.project_graph, *self.value):
            if isinstance(mod, nn.Linear):
                mod.reset_parameters()

    def forward(self, h: Tensor, best_cost: Tensor) -> Tensor:
        h = instance_norm(h + self.attn(h, None))
        h = instance_norm(h + self.ff(h))
        fused = self.project_node(h) + self.project_graph(h.mean(1)).unsqueeze(1)
        feats = [fused.mean(1), fused.amax(1), best_cost.reshape(-1, 1).to(h.dtype)]
        return self.value(torch.cat(feats, -1)).squeeze(-1)
