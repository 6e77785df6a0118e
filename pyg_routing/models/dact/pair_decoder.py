"""2-opt move decoders (the shared sampling of :class:`MoveDecoder`; our pair decoder,
:class:`PairDecoder`) and the value head of the GPS model."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.distributions import Categorical

from pyg_routing.models.dact.pair_scores import score_pairs
from pyg_routing.models.sampling import sample_categorical


class MoveDecoder(nn.Module):
    """What a 2-opt move decoder shares: its ``forward(h, mask, succ)`` gives masked
    logits ``[B, M, M]`` over the moves ``(i, j)`` of the 2-opt environment (``-inf``
    where not allowed); sampling, argmax and scoring given moves are written here once.
    """

    def act(self, h: Tensor, mask: Tensor, action: Tensor | None = None,
            greedy: bool = False, generator: torch.Generator | None = None,
            succ: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """Pick (sample, or ``greedy``: argmax) or score a given move ``action [B, 2]``.

        The distribution is built on float32 logits; sampling draws from
        ``generator`` (default: the global RNG) with :func:`sample_categorical`,
        exactly as :meth:`select` does.

        Returns ``action [B, 2]`` (node indices ``i, j``), its ``log_prob [B]`` and
        the policy ``entropy [B]``. ``succ [B, M]``: the solutions' successors (read
        by decoders that score in another parametrisation). Raises ``ValueError``
        when an instance has no allowed move at all.
        """
        logits = self._flat_logits(h, mask, succ)                    # [B, M*M]
        m = h.size(1)
        if action is not None:
            flat = action[:, 0] * m + action[:, 1]
        else:
            flat = self._pick(logits, greedy, generator)
        dist = Categorical(logits=logits)
        return torch.stack([flat // m, flat % m], dim=-1), dist.log_prob(flat), dist.entropy()

    def select(self, h: Tensor, mask: Tensor, greedy: bool = False,
               generator: torch.Generator | None = None,
               succ: Tensor | None = None) -> Tensor:
        """Only the move ``[B, 2]`` of :meth:`act` (same draw for the same
        ``generator`` state), without log-probability and entropy: the search path."""
        m = h.size(1)
        flat = self._pick(self._flat_logits(h, mask, succ), greedy, generator)
        return torch.stack([flat // m, flat % m], dim=-1)

    def _flat_logits(self, h: Tensor, mask: Tensor, succ: Tensor | None) -> Tensor:
        allowed = mask.flatten(1).any(1)
        if not bool(allowed.all()):
            stuck = torch.nonzero(~allowed).flatten()[:5].tolist()
            raise ValueError(f"no allowed move for instance(s) {stuck}")
        return self(h, mask, succ).flatten(1).float()

    @staticmethod
    def _pick(logits: Tensor, greedy: bool, generator: torch.Generator | None) -> Tensor:
        if greedy:
            return logits.argmax(-1)
        return sample_categorical(torch.softmax(logits, -1), generator)


class PairDecoder(MoveDecoder):
    r"""Scores every node pair ``(i, j)`` as a move and samples one (Ma et al. 2021).

    Multi-head compatibilities ``q_i · k_j / sqrt(d)`` (``[B, H, M, M]``) are mixed
    per pair by a small MLP over the heads, squashed by ``clip · tanh`` (DACT's
    logit clipping), and infeasible pairs are masked out.

    Args:
        dim: node embedding width. heads: compatibility heads.
        hidden: width of the per-pair MLP. clip: logit clipping ``C``.
        compiled: score pairs with :func:`~pyg_routing.models.dact.pair_scores.compiled_pair_scores`
            (``torch.compile``; several times faster on large ``B * M * M``, same
            values up to float rounding) where no gradient is needed; the first call
            compiles. With gradients both settings take :class:`~pyg_routing.models.
            pair_scores.PairScores` (hand-written backward).

    Shapes: ``h [B, M, dim]``, ``mask [B, M, M]`` (True = allowed move) ->
    logits ``[B, M, M]`` (``-inf`` where not allowed).
    """

    def __init__(self, dim: int, heads: int = 4, hidden: int = 32, clip: float = 6.0,
                 compiled: bool = False) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim={dim} must be divisible by heads={heads}")
        self.dim, self.heads, self.clip, self.compiled = dim, heads, clip, compiled
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

    def forward(self, h: Tensor, mask: Tensor, succ: Tensor | None = None) -> Tensor:
        b, m, _ = h.shape
        # 1/sqrt(d) folded into the query weight: [dim, dim] instead of [B, H, M, M].
        scale = 1.0 / math.sqrt(self.dim // self.heads)
        q = F.linear(h, self.query.weight * scale).view(b, m, self.heads, -1).transpose(1, 2)
        k = self.key(h).view(b, m, self.heads, -1).transpose(1, 2)
        compat = q @ k.transpose(-1, -2)                                   # [B, H, M, M]
        first, last = self.mix[0], self.mix[2]
        logits = score_pairs(compat, first.weight, first.bias, last.weight, last.bias,
                             self.clip, compiled=self.compiled)
        return logits.masked_fill(~mask, float("-inf"))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, heads={self.heads}, clip={self.clip}"
                f"{', compiled=True' if self.compiled else ''})")


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
