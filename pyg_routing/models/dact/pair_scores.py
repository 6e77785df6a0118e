"""Per-pair scores of the DACT pair decoder: ``clip * tanh(MLP(compat))`` over all
``B * M * M`` node pairs, the largest computation of a 2-opt search or training step.

Three forms of the same function:

* :func:`pair_scores`, eager, for search without gradients;
* :func:`compiled_pair_scores`, fused by ``torch.compile`` (no ``[B*M*M, hidden]``
  activation at all), for search without gradients;
* :class:`PairScores`, an autograd function with a hand-written backward for
  training. Autograd's own backward of :func:`pair_scores` allocates and streams
  several ``[B*M*M, hidden]`` tensors (an outer product, the ReLU mask, the
  ReLU gradient); the hand-written one derives every gradient from the ReLU mask
  alone, written over the saved activations in place, with two small matrix
  products (about 3x faster on TSP-50 batches of 64 on CPU).

:func:`score_pairs` picks the form.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable


def pair_scores(compat: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor,
                clip: float) -> Tensor:
    """``clip * tanh(MLP(compat))`` per pair, ``[B, H, M, M] -> [B, M, M]``, where
    ``MLP(c) = w2 · relu(w1 c + b1) + b2`` mixes the ``H`` heads of one pair.

    Eager form: the pairs as one contiguous ``[B*M*M, H + 1]`` matrix (a column of
    ones carries ``b1``) times ``[H + 1, hidden]``, ReLU in place. The
    ``[B*M*M, hidden]`` activation is the largest tensor of a search step; an
    out-of-place ReLU or ``addmm``'s broadcast bias copy each cost more than the
    product itself."""
    return _pair_mlp(compat, w1, b1, w2, b2, clip)[3]


def _pair_mlp(compat: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor,
              clip: float) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The eager computation of :func:`pair_scores` with its intermediates:
    ``pairs [P, H+1]``, ``weight [H+1, F]``, ``hidden [P, F]`` (post-ReLU) and the
    scores ``[B, M, M]`` (what :class:`PairScores` keeps for its backward)."""
    b, h, m, _ = compat.shape
    pairs = torch.cat([compat.permute(0, 2, 3, 1), compat.new_ones(b, m, m, 1)], -1)
    pairs = pairs.view(b * m * m, h + 1)
    weight = _first_weight(w1, b1, pairs.dtype)
    hidden = pairs.mm(weight).relu_()
    out = torch.addmm(b2.to(hidden.dtype), hidden, w2.t().to(hidden.dtype))
    return pairs, weight, hidden, clip * torch.tanh(out.view(b, m, m))


def _first_weight(w1: Tensor, b1: Tensor, dtype: torch.dtype) -> Tensor:
    """``[w1, b1]^T`` (``[H+1, F]``): the first layer's weights on ``[c, 1]``."""
    return torch.cat([w1, b1.unsqueeze(1)], 1).t().to(dtype)


class PairWorkspace:
    """The reused buffers of :func:`search_pair_scores` for slices of up to ``pairs``
    pairs: the pairs matrix ``[pairs, H+1]`` (its last column ones, written once) and
    the hidden activations ``[pairs, hidden]``, in ``dtype`` on ``device``."""

    def __init__(self, pairs: int, heads: int, hidden: int, dtype: torch.dtype,
                 device: torch.device) -> None:
        self.pairs = torch.ones(pairs, heads + 1, dtype=dtype, device=device)
        self.hidden = torch.empty(pairs, hidden, dtype=dtype, device=device)


def search_pair_scores(compat: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor,
                       clip: float, workspace: PairWorkspace) -> Tensor:
    """:func:`pair_scores` for a slice of a search batch, the same values bit for bit,
    with nothing allocated per pair but the ``[P, 1]`` output: the pairs matrix and the
    hidden activations are written into ``workspace``, tanh and the clip in place."""
    b, h, m, _ = compat.shape
    p = b * m * m
    pairs = workspace.pairs[:p]
    pairs.view(b, m, m, h + 1)[..., :h].copy_(compat.permute(0, 2, 3, 1))
    hidden = torch.mm(pairs, _first_weight(w1, b1, pairs.dtype),
                      out=workspace.hidden[:p]).relu_()
    out = torch.addmm(b2.to(hidden.dtype), hidden, w2.t().to(hidden.dtype))
    return out.view(b, m, m).tanh_().mul_(clip)


def pair_scores_elementwise(compat: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor,
                            clip: float) -> Tensor:
    """:func:`pair_scores` written as broadcasts and sums, for ``torch.compile``:
    Inductor fuses it into one loop that never stores the ``hidden`` activations
    (eagerly, this form would be slower: it materialises ``[B, hidden, M, M]``)."""
    hid = w1.size(0)
    h = (compat.unsqueeze(2) * w1.t().reshape(1, -1, hid, 1, 1)).sum(1)
    h = torch.relu(h + b1.view(1, hid, 1, 1))
    return clip * torch.tanh((h * w2.view(1, hid, 1, 1)).sum(1) + b2)


@functools.cache
def compiled_pair_scores() -> Callable[..., Tensor]:
    """:func:`pair_scores_elementwise` under ``torch.compile(dynamic=True)``, built
    once per process (first call compiles: seconds; needs a C++ compiler on CPU,
    Triton on CUDA)."""
    return torch.compile(pair_scores_elementwise, dynamic=True)


class PairScores(torch.autograd.Function):
    r""":func:`pair_scores` with a hand-written backward (``PairScores.apply(compat,
    w1, b1, w2, b2, clip)``, same arguments and value).

    With ``c~ = [c, 1]`` (``[P, H+1]``), ``W = [w1, b1]^T`` (``[H+1, F]``),
    ``S = 1[c~ W > 0]`` (the ReLU mask) and ``g_z = g_out * (clip - out^2 / clip)``:

    * ``A = (g_z c~)^T S`` (``[H+1, F]``) gives ``dL/dW = A * w2`` and
      ``dL/dw2 = sum_h W * A`` (as ``relu(c~ W) = S * (c~ W)``);
    * ``dL/dc = g_z * (S (W * w2)^T)`` restricted to the ``H`` real columns.

    ``S`` overwrites the saved activations in place (``sign_`` of a ReLU output is
    its mask, and applying it twice changes nothing, so ``retain_graph`` works).
    Not twice differentiable.
    """

    @staticmethod
    def forward(ctx: Any, compat: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor,
                clip: float) -> Tensor:
        pairs, weight, hidden, out = _pair_mlp(compat, w1, b1, w2, b2, clip)
        ctx.save_for_backward(pairs, weight, out, w2)
        # An intermediate, kept on ctx (not saved): backward reuses its storage.
        ctx.hidden = hidden
        ctx.clip = clip
        ctx.dtypes = (w1.dtype, b1.dtype, w2.dtype, b2.dtype)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, g_out: Tensor) -> tuple[Tensor | None, ...]:
        pairs, weight, out, w2 = ctx.saved_tensors
        mask = ctx.hidden.sign_()                       # [P, F]: the ReLU mask, in place
        dt = mask.dtype                                 # autocast may differ per input
        b, m, _ = out.shape
        h = pairs.size(1) - 1
        clip = ctx.clip
        g_z = (clip - out * out / clip).mul_(g_out).reshape(-1, 1).to(dt)     # [P, 1]
        weight, w2r = weight.to(dt), w2.to(dt)                                # w2r [1, F]
        a = (pairs.to(dt) * g_z).t().mm(mask)                                 # [H+1, F]
        g_weight = a * w2r
        g_compat = None
        if ctx.needs_input_grad[0]:
            g_pairs = mask.mm((weight[:h] * w2r).t()).mul_(g_z)               # [P, H]
            g_compat = g_pairs.view(b, m, m, h).permute(0, 3, 1, 2).to(out.dtype)
        dw1, db1, dw2, db2 = ctx.dtypes
        return (g_compat, g_weight[:h].t().to(dw1), g_weight[h].to(db1),
                (weight * a).sum(0, keepdim=True).to(dw2), g_z.sum().view(1).to(db2), None)


def score_pairs(compat: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, clip: float,
                compiled: bool = False) -> Tensor:
    """``clip * tanh(MLP(compat))`` (``[B, H, M, M] -> [B, M, M]``) in the fastest
    form for the call: :class:`PairScores` when a gradient will be needed, else
    :func:`compiled_pair_scores` (``compiled``) or :func:`pair_scores`."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in (compat, w1, b1, w2, b2)):
        return PairScores.apply(compat, w1, b1, w2, b2, clip)
    if compiled:
        return compiled_pair_scores()(compat, w1, b1, w2, b2, clip)
    return pair_scores(compat, w1, b1, w2, b2, clip)
