"""DACT-style pair-selection decoder and value head for 2-opt improvement policies."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.distributions import Categorical


def sample_categorical(probs: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """One index per row of ``probs [B, K]`` (rows need not be normalized), by
    inverse-CDF sampling: one uniform number per row, where ``torch.multinomial``
    draws ``K`` exponentials per row (the sampling dominated small search steps).
    Zero-probability entries are never drawn. Returns ``[B]`` long."""
    cdf = probs.double().cumsum(-1)
    u = torch.rand(probs.size(0), 1, generator=generator, device=probs.device,
                   dtype=torch.float64) * cdf[:, -1:]
    return torch.searchsorted(cdf, u, right=True).squeeze(1).clamp_(max=probs.size(1) - 1)


class PairDecoder(nn.Module):
    r"""Scores every node pair ``(i, j)`` as a move and samples one (Ma et al. 2021).

    Multi-head compatibilities ``q_i · k_j / sqrt(d)`` (``[B, H, M, M]``) are mixed
    per pair by a small MLP over the heads, squashed by ``clip · tanh`` (DACT's
    logit clipping), and infeasible pairs are masked out.

    Args:
        dim: node embedding width. heads: compatibility heads.
        hidden: width of the per-pair MLP. clip: logit clipping ``C``.

    Shapes: ``h [B, M, dim]``, ``mask [B, M, M]`` (True = allowed move) ->
    logits ``[B, M, M]`` (``-inf`` where not allowed).
    """

    def __init__(self, dim: int, heads: int = 4, hidden: int = 32, clip: float = 6.0) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim={dim} must be divisible by heads={heads}")
        self.dim, self.heads, self.clip = dim, heads, clip
        self.query = nn.Linear(dim, dim, bias=False)
        self.key = nn.Linear(dim, dim, bias=False)
        self.mix = nn.Sequential(nn.Linear(heads, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.query.reset_parameters()
        self.key.reset_parameters()
        for m in self.mix:
            if isinstance(m, nn.Linear):
                m.reset_parameters()

    def forward(self, h: Tensor, mask: Tensor) -> Tensor:
        b, m, _ = h.shape
        q = self.query(h).view(b, m, self.heads, -1).transpose(1, 2)
        k = self.key(h).view(b, m, self.heads, -1).transpose(1, 2)
        compat = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))           # [B, H, M, M]
        logits = self.clip * torch.tanh(self.mix(compat.permute(0, 2, 3, 1)).squeeze(-1))
        return logits.masked_fill(~mask, float("-inf"))

    def act(self, h: Tensor, mask: Tensor, action: Tensor | None = None,
            greedy: bool = False, generator: torch.Generator | None = None
            ) -> tuple[Tensor, Tensor, Tensor]:
        """Pick (sample, or ``greedy``: argmax) or score a given move ``action [B, 2]``.

        The distribution is built on float32 logits; sampling draws from
        ``generator`` (default: the global RNG) with :func:`sample_categorical`.

        Returns ``action [B, 2]`` (node indices ``i, j``), its ``log_prob [B]`` and
        the policy ``entropy [B]``. Raises ``ValueError`` when an instance has no
        allowed move at all.
        """
        allowed = mask.flatten(1).any(1)
        if not bool(allowed.all()):
            stuck = torch.nonzero(~allowed).flatten()[:5].tolist()
            raise ValueError(f"no allowed move for instance(s) {stuck}")
        logits = self(h, mask).flatten(1)                           # [B, M*M]
        dist = Categorical(logits=logits.float())
        m = h.size(1)
        if action is not None:
            flat = action[:, 0] * m + action[:, 1]
        elif greedy:
            flat = logits.argmax(-1)
        else:
            flat = sample_categorical(dist.probs, generator)
        return torch.stack([flat // m, flat % m], dim=-1), dist.log_prob(flat), dist.entropy()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim}, heads={self.heads}, clip={self.clip})"


class ValueHead(nn.Module):
    r"""Critic: mean- and max-pooled node embeddings (plus optional graph features,
    e.g. the current and best cost) -> a state value.

    Shapes: ``h [B, M, dim]``, ``mask [B, M]``, ``extra [B, E]`` -> ``[B]``.
    """

    def __init__(self, dim: int, extra: int = 0, hidden: int = 64) -> None:
        super().__init__()
        self.extra = extra
        self.mlp = nn.Sequential(nn.Linear(2 * dim + extra, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for m in self.mlp:
            if isinstance(m, nn.Linear):
                m.reset_parameters()

    def forward(self, h: Tensor, mask: Tensor | None = None,
                extra: Tensor | None = None) -> Tensor:
        if mask is None:
            mask = torch.ones(h.shape[:2], dtype=torch.bool, device=h.device)
        w = mask.unsqueeze(-1).to(h.dtype)
        mean = (h * w).sum(1) / w.sum(1).clamp(min=1)
        top = h.masked_fill(~mask.unsqueeze(-1), float("-inf")).amax(1)
        feats = [mean, top] + ([extra] if self.extra else [])
        return self.mlp(torch.cat(feats, dim=-1)).squeeze(-1)
