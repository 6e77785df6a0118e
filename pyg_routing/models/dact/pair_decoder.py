"""DACT-style pair-selection decoder and value head for 2-opt improvement policies."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pyg_routing.functional.chunks import (
    batch_slices,
    chunk_budget,
    instances_per_chunk,
    needs_grad,
)
from pyg_routing.models.dact.pair_scores import (
    PairWorkspace,
    compiled_pair_scores,
    score_pairs,
    search_pair_scores,
)
from pyg_routing.models.inplace import InplaceReLU
from pyg_routing.models.sampling import choose, log_prob_entropy, uniforms


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
            flat = choose(logits, greedy, generator)
        log_prob, entropy = log_prob_entropy(logits, flat)
        return torch.stack([flat // m, flat % m], dim=-1), log_prob, entropy

    def select(self, h: Tensor, mask: Tensor, greedy: bool = False,
               generator: torch.Generator | None = None,
               succ: Tensor | None = None) -> Tensor:
        """Only the move ``[B, 2]`` of :meth:`act` (same draw for the same
        ``generator`` state), without log-probability and entropy: the search path."""
        m = h.size(1)
        flat = choose(self._flat_logits(h, mask, succ), greedy, generator)
        return torch.stack([flat // m, flat % m], dim=-1)

    def _flat_logits(self, h: Tensor, mask: Tensor, succ: Tensor | None) -> Tensor:
        self._check_allowed(mask)
        return self(h, mask, succ).flatten(1).float()

    @staticmethod
    def _check_allowed(mask: Tensor) -> None:
        allowed = mask.flatten(1).any(1)
        if not bool(allowed.all()):
            stuck = torch.nonzero(~allowed).flatten()[:5].tolist()
            raise ValueError(f"no allowed move for instance(s) {stuck}")


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
        self.mix = nn.Sequential(nn.Linear(heads, hidden), InplaceReLU(),
                                 nn.Linear(hidden, 1))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.query.reset_parameters()
        self.key.reset_parameters()
        for m in self.mix:
            if isinstance(m, nn.Linear):
                m.reset_parameters()

    def forward(self, h: Tensor, mask: Tensor, succ: Tensor | None = None) -> Tensor:
        q, k = self._queries_keys(h)
        return self._masked_scores(q, k, mask)

    def _queries_keys(self, h: Tensor) -> tuple[Tensor, Tensor]:
        """Per-head queries (scaled by ``1/sqrt(d)``) and keys, ``[B, H, M, d]`` each."""
        b, m, _ = h.shape
        # 1/sqrt(d) folded into the query weight: [dim, dim] instead of [B, H, M, M].
        scale = 1.0 / math.sqrt(self.dim // self.heads)
        q = F.linear(h, self.query.weight * scale).view(b, m, self.heads, -1).transpose(1, 2)
        k = self.key(h).view(b, m, self.heads, -1).transpose(1, 2)
        return q, k

    def _masked_scores(self, q: Tensor, k: Tensor, mask: Tensor) -> Tensor:
        """Logits ``[B, M, M]`` of the queries and keys (``-inf`` where not allowed)."""
        first, last = self.mix[0], self.mix[2]
        logits = score_pairs(q, k, first.weight, first.bias, last.weight, last.bias,
                             self.clip, compiled=self.compiled)
        # One pass and one output, no ~mask (the same values and gradient as masked_fill);
        # the search's slices use the branch-free gate instead (mask_logits_).
        return torch.where(mask, logits, float("-inf"))

    def select(self, h: Tensor, mask: Tensor, greedy: bool = False,
               generator: torch.Generator | None = None,
               succ: Tensor | None = None) -> Tensor:
        """Only the move ``[B, 2]`` of :meth:`act` (same draw for the same
        ``generator`` state), without log-probability and entropy: the search path.

        Without gradients the moves are scored and drawn in slices of the batch
        (:mod:`~pyg_routing.functional.chunks`): the ``[B*M*M, hidden]`` activation of the
        pair MLP (851 MB at CVRP-100, B = 512) never exists, only a few MB per slice;
        the uniforms are drawn for the whole batch first, so the moves are those of
        one pass over the batch (but where a score's last bit, which the one-column
        output layer may round differently on a slice, moves a CDF step past its
        uniform; see ``functional/chunks.py``)."""
        b, m, _ = h.shape
        if needs_grad(self, h):
            flat = choose(self._flat_logits(h, mask, succ), greedy, generator)
        else:
            flat, picked = self.select_slices(h, mask, None if greedy else
                                              uniforms(b, generator, h.device))
            self.check_picked(picked, mask)
        return torch.stack([flat // m, flat % m], dim=-1)

    def select_slices(self, h: Tensor, mask: Tensor, uniform: Tensor | None
                      ) -> tuple[Tensor, Tensor]:
        """The flat moves ``[B]`` of :meth:`select` without gradients, scored and drawn
        slice by slice, and the logit of each (for :meth:`check_picked`).

        ``uniform``: the ``[B, 1]`` uniforms of the draw
        (:func:`~pyg_routing.models.sampling.uniforms`); ``None``: argmax."""
        b, m, _ = h.shape
        first, last = self.mix[0], self.mix[2]
        per_chunk = instances_per_chunk(m * m * first.out_features, chunk_budget(h.device))
        flat = torch.empty(b, dtype=torch.long, device=h.device)
        picked = torch.empty(b, device=h.device)
        workspace = None
        for sl in batch_slices(b, per_chunk):
            q, k = self._queries_keys(h[sl])
            compat = q @ k.transpose(-1, -2)                               # [c, H, M, M]
            if self.compiled:
                logits = compiled_pair_scores()(compat, first.weight, first.bias,
                                                last.weight, last.bias, self.clip)
            else:
                if workspace is None:
                    workspace = PairWorkspace(min(b, per_chunk) * m * m, self.heads,
                                              first.out_features, compat.dtype, h.device)
                logits = search_pair_scores(compat, first.weight, first.bias, last.weight,
                                            last.bias, self.clip, workspace)
            logits = mask_logits_(logits.flatten(1), mask[sl].flatten(1)).float()
            pick = choose(logits, uniform is None, uniform=None if uniform is None else uniform[sl])
            flat[sl] = pick
            picked[sl] = logits.gather(1, pick.clamp(max=m * m - 1).unsqueeze(1)).squeeze(1)
        return flat, picked

    def check_picked(self, picked: Tensor, mask: Tensor) -> None:
        """Raise :meth:`act`'s error if a move of :meth:`select_slices` has logit
        ``-inf``: a row with no allowed move (its softmax is of ``-inf`` only) picks
        one, a row with one never does (zero probabilities are never drawn)."""
        if bool((picked == float("-inf")).any()):
            self._check_allowed(mask)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, heads={self.heads}, clip={self.clip}"
                f"{', compiled=True' if self.compiled else ''})")


def allowed_gate(allowed: Tensor, dtype: torch.dtype) -> Tensor:
    """``+inf`` where ``allowed`` (bool) is True, ``-inf`` elsewhere: ``logits.clamp(max=
    gate)`` is ``logits.masked_fill(~allowed, -inf)``, value for value and gradient for
    gradient, but branch-free (``masked_fill`` and ``where`` take about 5 ns per element
    of a mixed mask on the CPU, the gate and the clamp under 1 ns). In cache-sized
    slices; on a whole large batch its float gate is one more big temporary."""
    return allowed.to(torch.uint8).to(dtype).sub_(0.5).mul_(float("inf"))


def mask_logits_(logits: Tensor, allowed: Tensor) -> Tensor:
    """``logits`` with ``-inf`` where ``allowed`` is False, in place (no gradient)."""
    return logits.clamp_(max=allowed_gate(allowed, logits.dtype))


class ValueHead(nn.Module):
    r"""Critic: mean- and max-pooled node embeddings (plus optional graph features,
    e.g. the current and best cost) -> a state value.

    Shapes: ``h [B, M, dim]``, ``mask [B, M]``, ``extra [B, E]`` -> ``[B]``.
    """

    def __init__(self, dim: int, extra: int = 0, hidden: int = 64) -> None:
        super().__init__()
        self.extra = extra
        self.mlp = nn.Sequential(nn.Linear(2 * dim + extra, hidden), InplaceReLU(),
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
