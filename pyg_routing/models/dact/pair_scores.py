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
  alone, with two small matrix products (about 3x faster on TSP-50 batches of 64 on
  CPU), and both its passes run in cache-sized slices of the batch.

:func:`score_pairs` picks the form.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from pyg_routing.functional.chunks import batch_slices, chunk_budget, instances_per_chunk


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

    def first_layer(self, compat: Tensor, weight: Tensor) -> tuple[Tensor, Tensor]:
        """The pairs ``c~ [P, H+1]`` of ``compat [b, H, M, M]`` and their first layer
        ``c~ W`` before the ReLU (``weight``: :func:`_first_weight`), both views of the
        workspace."""
        b, h, m, _ = compat.shape
        p = b * m * m
        pairs = self.pairs[:p]
        pairs.view(b, m, m, h + 1)[..., :h].copy_(compat.permute(0, 2, 3, 1))
        return pairs, torch.mm(pairs, weight, out=self.hidden[:p])


def search_pair_scores(compat: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor,
                       clip: float, workspace: PairWorkspace) -> Tensor:
    """:func:`pair_scores` for a slice of a search batch, the same values bit for bit,
    with nothing allocated per pair but the ``[P, 1]`` output: the pairs matrix and the
    hidden activations are written into ``workspace``, tanh and the clip in place."""
    b, _, m, _ = compat.shape
    weight = _first_weight(w1, b1, workspace.pairs.dtype)
    hidden = workspace.first_layer(compat, weight)[1].relu_()
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
    r"""The pair scores of queries and keys, ``clip * tanh(MLP(q k^T))``, with a
    hand-written backward (``PairScores.apply(q, k, w1, b1, w2, b2, clip)``: ``q, k``
    ``[B, H, M, d]``, the rest as :func:`pair_scores`; ``[B, M, M]``), computed in
    slices of the batch.

    With ``c = q k^T``, ``c~ = [c, 1]`` (``[P, H+1]``), ``W = [w1, b1]^T``
    (``[H+1, F]``), ``S = 1[c~ W > 0]`` (the ReLU mask) and
    ``g_z = g_out * (clip - out^2 / clip)``:

    * ``A = (g_z c~)^T S`` (``[H+1, F]``) gives ``dL/dW = A * w2`` and
      ``dL/dw2 = sum_h W * A`` (as ``relu(c~ W) = S * (c~ W)``);
    * ``dL/dc = g_z * (S (W * w2)^T)`` restricted to the ``H`` real columns, and from
      it ``dL/dq = (dL/dc) k`` and ``dL/dk^T = q^T (dL/dc)`` (autograd's own products).

    Neither pass keeps a tensor of all ``B * M * M`` pairs: at CVRP-100, ``B = 512``,
    the hidden activations (851 MB), the pairs matrix (133 MB), ``c`` and ``dL/dc``
    (106 MB each) were fresh maps, about 300 000 page faults per training update. The
    forward scores slices of instances in a cache-sized :class:`PairWorkspace` and
    saves only ``q``, ``k`` and the scores; the backward recomputes each slice's ``c``
    and ReLU mask there (two small products more than saved ones, on data in cache)
    and sums ``A`` over the slices. One slice (a small batch) computes what autograd
    and the whole-batch form did, bit for bit; several change the sum order of ``A``
    (float reassociation) and may round the one-column output layer's last bit
    differently (``functional/chunks.py``). The computations run in the queries'
    dtype (under autocast, the products' half precision), ``A`` summed in at least
    float32. Not twice differentiable.
    """

    @staticmethod
    def forward(ctx: Any, q: Tensor, k: Tensor, w1: Tensor, b1: Tensor, w2: Tensor,
                b2: Tensor, clip: float) -> Tensor:
        b, h, m, _ = q.shape
        out = q.new_empty(b, m, m)
        with torch.autocast(q.device.type, enabled=False):
            work = None
            for sl in _pair_slices(q, w1.size(0)):
                work = work or _SliceWork(sl, q, w1.size(0))
                compat = work.compat(q, k, sl)
                out[sl] = search_pair_scores(compat, w1, b1, w2, b2, clip, work.pairs)
        ctx.save_for_backward(q, k, w1, b1, w2, out)
        ctx.clip = clip
        ctx.dtypes = (w1.dtype, b1.dtype, w2.dtype, b2.dtype)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, g_out: Tensor) -> tuple[Tensor | None, ...]:
        q, k, w1, b1, w2, out = ctx.saved_tensors
        b, h, m, d = q.shape
        dt, clip, f = q.dtype, ctx.clip, w1.size(0)
        weight, w2r = _first_weight(w1, b1, dt), w2.to(dt)           # [H+1, F], [1, F]
        mixed = (weight[:h] * w2r).t()                                  # [F, H]
        g_q = torch.empty_like(q) if ctx.needs_input_grad[0] else None
        # dL/dk^T as autograd's matmul gives it: [B, H, d, M], returned transposed
        g_kt = q.new_empty(b, h, d, m) if ctx.needs_input_grad[1] else None
        acc = torch.promote_types(dt, torch.float32)          # half precision sums in fp32
        a = torch.zeros(h + 1, f, dtype=acc, device=q.device)
        g_b2 = torch.zeros((), dtype=acc, device=q.device)
        with torch.autocast(q.device.type, enabled=False):
            work = None
            for sl in _pair_slices(q, f):
                work = work or _SliceWork(sl, q, f)
                c = sl.stop - sl.start
                pairs, mask = work.pairs.first_layer(work.compat(q, k, sl), weight)
                mask.gt_(0)                                                 # [p, F]
                o = out[sl]
                g_z = (clip - o * o / clip).mul_(g_out[sl]).reshape(-1, 1).to(dt)  # [p, 1]
                a += (pairs * g_z).t().mm(mask)
                g_b2 += g_z.sum()
                if g_q is None and g_kt is None:
                    continue
                g_c = work.compat_grad(mask.mm(mixed).mul_(g_z), c, m)       # [c, H, M, M]
                if g_q is not None:
                    torch.matmul(g_c, k[sl], out=g_q[sl])
                if g_kt is not None:
                    torch.matmul(q[sl].transpose(-1, -2), g_c, out=g_kt[sl])
        a = a.to(dt)
        g_weight = a * w2r
        dw1, db1, dw2, db2 = ctx.dtypes
        return (g_q, None if g_kt is None else g_kt.transpose(-1, -2),
                g_weight[:h].t().to(dw1), g_weight[h].to(db1),
                (weight * a).sum(0, keepdim=True).to(dw2), g_b2.to(dt).view(1).to(db2), None)


class _SliceWork:
    """:class:`PairScores`'s buffers for its largest slice: the :class:`PairWorkspace`
    and the slice's compatibilities ``[c, H, M, M]`` (and their gradient)."""

    def __init__(self, sl: slice, q: Tensor, hidden: int) -> None:
        _, h, m, _ = q.shape
        c = sl.stop - sl.start
        self.pairs = PairWorkspace(c * m * m, h, hidden, q.dtype, q.device)
        self._compat = q.new_empty(c, h, m, m)
        self._grad: Tensor | None = None

    def compat(self, q: Tensor, k: Tensor, sl: slice) -> Tensor:
        """``q[sl] k[sl]^T`` into the buffer."""
        return torch.matmul(q[sl], k[sl].transpose(-1, -2),
                            out=self._compat[:sl.stop - sl.start])

    def compat_grad(self, g_pairs: Tensor, c: int, m: int) -> Tensor:
        """``dL/dc`` ``[c, H, M, M]`` from the pairs' ``[c*M*M, H]``, into a buffer."""
        if self._grad is None:
            self._grad = torch.empty_like(self._compat)
        h = g_pairs.size(1)
        return self._grad[:c].copy_(g_pairs.view(c, m, m, h).permute(0, 3, 1, 2))


def _pair_slices(q: Tensor, hidden: int) -> Iterator[slice]:
    """The slices of instances :class:`PairScores` scores at a time: a slice's
    ``[p, hidden]`` activation within :func:`~pyg_routing.functional.chunks.chunk_budget`."""
    b, _, m, _ = q.shape
    return batch_slices(b, instances_per_chunk(m * m * hidden, chunk_budget(q.device)))


def score_pairs(q: Tensor, k: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor,
                clip: float, compiled: bool = False) -> Tensor:
    """``clip * tanh(MLP(q k^T))`` (``q, k [B, H, M, d] -> [B, M, M]``) in the fastest
    form for the call: :class:`PairScores` when a gradient will be needed, else
    :func:`compiled_pair_scores` (``compiled``) or :func:`pair_scores` of ``q k^T``."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, w1, b1, w2, b2)):
        return PairScores.apply(q, k, w1, b1, w2, b2, clip)
    compat = q @ k.transpose(-1, -2)                                   # [B, H, M, M]
    if compiled:
        return compiled_pair_scores()(compat, w1, b1, w2, b2, clip)
    return pair_scores(compat, w1, b1, w2, b2, clip)
