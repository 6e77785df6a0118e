"""The pre-softmax scores of N2S's Synthesis Attention in training, computed in slices:
``s = W_out relu(W_node (q k^T) + W_pos pos + b_node) + b_out`` over the ``2H`` score
channels of every node pair.

At PDP-101 (``B`` = 64) the layer's pair channels ``[B, 2H, M^2]`` are 21 MB and the
scores 10 MB. Under autograd an update streamed about fifteen such tensors per layer
through main memory (the bias copies, the ReLU, its mask and gradient, the channel
gradients): :class:`SynthesisScores` runs both passes on cache-sized slices of instances.
Its backward recomputes each slice's ``q k^T`` and channels from the saved inputs, or,
where all slices' fit :func:`~pyg_routing.functional.chunks.keeps_activations` (PDP-51
at ``B`` = 64: 8 MB a layer), reads the ones its forward kept. The search (no gradient)
slices the whole encoder instead (:class:`~pyg_routing.models.n2s.encoder.N2SEncoder`)
and keeps the eager form.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from pyg_routing.functional.chunks import (
    batch_slices,
    chunk_budget,
    instances_per_chunk,
    keeps_activations,
)


def _slices(q: Tensor, channels: int) -> list[slice]:
    """Slices of instances whose ``[c, channels, M^2]`` channels fit a chunk."""
    b, _, m, _ = q.shape
    per_chunk = instances_per_chunk(channels * m * m, chunk_budget(q.device))
    return list(batch_slices(b, per_chunk))


def _batched(weight: Tensor, c: int) -> Tensor:
    """``weight [C', C]`` broadcast over a batch of ``c`` (no copy)."""
    return weight.expand(c, -1, -1)


class SynthesisScores(torch.autograd.Function):
    r"""``SynthesisScores.apply(q, k, pos, w_node, b_node, w_pos, w_out, b_out)``: the
    scores ``[B, H, M, M]`` of queries and keys ``q, k [B, H, M, d]`` and positional
    scores ``pos [B, H, M, M]`` (or ``None``: no positional half, ``w_pos`` unused),
    with ``w_node, w_pos [2H, H]``, ``b_node [2H]``, ``w_out [H, 2H]``, ``b_out [H]``.

    Per slice, with ``a = q k^T``, ``r = relu(z)``, ``z = W_node a + W_pos pos + b_node``
    and the scores' gradient ``g``: ``dL/dW_out = sum_b g r^T``, ``dL/db_out = sum g``,
    ``g_z = (W_out^T g) * 1[r > 0]``, ``dL/dW_node = sum_b g_z a^T``, ``dL/dW_pos =
    sum_b g_z pos^T``, ``dL/db_node = sum g_z``, ``dL/dpos = W_pos^T g_z``, ``dL/da =
    W_node^T g_z``, then ``dL/dq = (dL/da) k`` and ``dL/dk^T = q^T (dL/da)``. These are
    autograd's own products: one slice gives its gradients bit for bit; several change
    the sum order of the weight gradients (float reassociation). Computed in ``q``'s
    dtype (autocast's for the projections), weight gradients summed in at least
    float32. Not twice differentiable.
    """

    @staticmethod
    def forward(ctx: Any, q: Tensor, k: Tensor, pos: Tensor | None, w_node: Tensor,
                b_node: Tensor, w_pos: Tensor, w_out: Tensor, b_out: Tensor) -> Tensor:
        b, h, m, _ = q.shape
        dt = q.dtype
        out = q.new_empty(b, h, m, m)
        wn, bn, wp = w_node.to(dt), b_node.to(dt).view(1, -1, 1), w_pos.to(dt)
        wo, bo = w_out.to(dt), b_out.to(dt).view(1, -1, 1)
        # where the slices' node scores and channels fit the budget they are kept for
        # the backward (``a``, ``r``: H + 2H channels a pair) instead of recomputed
        saved = (h + w_node.size(0)) * b * m * m * q.element_size()
        ctx.kept = [] if keeps_activations(saved, q.device) else None
        with torch.autocast(q.device.type, enabled=False):
            for sl in _slices(q, w_node.size(0)):
                c = sl.stop - sl.start
                a, r = _channels(q[sl], k[sl], None if pos is None else pos[sl], wn, bn, wp)
                torch.baddbmm(bo, _batched(wo, c), r, out=out[sl].view(c, h, m * m))
                if ctx.kept is not None:
                    ctx.kept.append((a, r))
        ctx.save_for_backward(q, k, pos, w_node, b_node, w_pos, w_out)
        ctx.dtypes = (None if pos is None else pos.dtype, w_node.dtype, b_node.dtype,
                      w_pos.dtype, w_out.dtype, b_out.dtype)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, g_out: Tensor) -> tuple[Tensor | None, ...]:
        q, k, pos, w_node, b_node, w_pos, w_out = ctx.saved_tensors
        b, h, m, d = q.shape
        dt = q.dtype
        acc = torch.promote_types(dt, torch.float32)          # half precision sums in fp32
        wn, bn, wp = w_node.to(dt), b_node.to(dt).view(1, -1, 1), w_pos.to(dt)
        wo = w_out.to(dt)
        g_q, g_kt = q.new_empty(b, h, m, d), q.new_empty(b, h, d, m)
        g_pos = None if pos is None else torch.empty(pos.shape, dtype=dt, device=q.device)
        sums = {name: torch.zeros(shape, dtype=acc, device=q.device) for name, shape in
                (("wn", w_node.shape), ("bn", b_node.shape), ("wp", w_pos.shape),
                 ("wo", w_out.shape), ("bo", w_out.shape[:1]))}
        g_out = g_out.to(dt)
        with torch.autocast(q.device.type, enabled=False):
            for i, sl in enumerate(_slices(q, w_node.size(0))):
                c = sl.stop - sl.start
                p = None if pos is None else pos[sl].reshape(c, h, m * m).to(dt)
                a, r = ctx.kept[i] if ctx.kept else _channels(q[sl], k[sl], p, wn, bn, wp)
                g = g_out[sl].reshape(c, h, m * m)
                sums["wo"] += g.bmm(r.transpose(1, 2)).sum(0)
                sums["bo"] += g.sum((0, 2))
                g_z = torch.ops.aten.threshold_backward(_batched(wo.t(), c).bmm(g), r, 0)
                sums["wn"] += g_z.bmm(a.transpose(1, 2)).sum(0)
                sums["bn"] += g_z.sum((0, 2))
                if p is not None:
                    sums["wp"] += g_z.bmm(p.transpose(1, 2)).sum(0)
                    torch.bmm(_batched(wp.t(), c), g_z, out=g_pos[sl].view(c, h, m * m))
                g_a = _batched(wn.t(), c).bmm(g_z).view(c, h, m, m)
                torch.matmul(g_a, k[sl], out=g_q[sl])
                torch.matmul(q[sl].transpose(-1, -2), g_a, out=g_kt[sl])
        d_pos, d_wn, d_bn, d_wp, d_wo, d_bo = ctx.dtypes
        return (g_q, g_kt.transpose(-1, -2), None if g_pos is None else g_pos.to(d_pos),
                sums["wn"].to(dt).to(d_wn), sums["bn"].to(dt).to(d_bn),
                None if pos is None else sums["wp"].to(dt).to(d_wp),
                sums["wo"].to(dt).to(d_wo), sums["bo"].to(dt).to(d_bo))


def _channels(q: Tensor, k: Tensor, pos: Tensor | None, wn: Tensor, bn: Tensor, wp: Tensor
              ) -> tuple[Tensor, Tensor]:
    """A slice's node scores ``a = q k^T`` ``[c, H, M^2]`` and post-ReLU channels ``r``
    ``[c, 2H, M^2]``: the positional half with the bias, the node half accumulated in
    place (the layer's eager order)."""
    c, h, m, _ = q.shape
    a = (q @ k.transpose(-1, -2)).view(c, h, m * m)
    if pos is None:
        z = torch.baddbmm(bn, _batched(wn, c), a)
    else:
        z = torch.baddbmm(bn, _batched(wp, c), pos.reshape(c, h, m * m).to(a.dtype))
        z.baddbmm_(_batched(wn, c), a)
    return a, z.relu_()
