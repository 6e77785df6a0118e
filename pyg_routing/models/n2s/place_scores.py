"""The reinsertion places' MLP of the N2S decoder, ``w_o · relu(W_h relu(left[i] +
right[j]) + b_h) + b_o`` over the ``K`` candidate places ``(i, j)`` of every instance:
the largest computation of an N2S training update.

At PDP-101 (``K`` = 4 950 places, ``B`` = 64) the places' two hidden layers are
``[B*K, 32]`` activations of 40 MB each. Under autograd they, their ReLU masks and
their gradients (about eight such tensors per update) were fresh maps that glibc gives
back on free: about 60 000 page faults per update, each page faulted and zeroed again.
Here both passes run in cache-sized slices of instances:

* :func:`place_scores` writes the logits slice by slice (the search's form, and the
  forward of :class:`PlaceScores`);
* :class:`PlaceScores` saves its inputs and recomputes each slice's activations in its
  backward (two small products more, on data in cache), or, where all slices' fit
  :func:`~pyg_routing.functional.chunks.keeps_activations` (PDP-51 at ``B`` = 64:
  20 MB), reads the ones its forward kept.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable

from pyg_routing.functional.chunks import (
    batch_slices,
    chunk_budget,
    instances_per_chunk,
    keeps_activations,
)
from pyg_routing.models.compiled import compiled_function


def place_slices(left: Tensor, first: Tensor, hidden: int) -> list[slice]:
    """Slices of instances whose ``[c*K, hidden]`` activations fit a chunk."""
    per_chunk = instances_per_chunk(2 * first.size(1) * hidden, chunk_budget(left.device))
    return list(batch_slices(left.size(0), per_chunk))


def _ids(first: Tensor, second: Tensor, sl: slice, m: int) -> tuple[Tensor, Tensor]:
    """Row ids of the slice's places in its ``[c*M, F]`` tables: pickup sides, then
    delivery sides."""
    c = sl.stop - sl.start
    offset = torch.arange(c, device=first.device).unsqueeze(1) * m
    return (first[sl] + offset).reshape(-1), (second[sl] + offset).reshape(-1)


def _hidden(left: Tensor, right: Tensor, ia: Tensor, ib: Tensor, w_h: Tensor,
            b_h: Tensor) -> tuple[Tensor, Tensor]:
    """The slice's two post-ReLU activations, ``[n, F]`` in the sides' dtype and
    ``[n, F2]`` in the hidden layer's (autocast's, where it is on).

    ``left[ia] + right[ib]`` is ONE gather-and-sum (an embedding bag of two rows per
    place), not two ``[n, F]`` gathers and an add; ReLUs in place on fresh tensors."""
    table = torch.cat([left, right.to(left.dtype)])
    bags = torch.stack([ia, ib + left.size(0)], -1)
    first = F.embedding_bag(bags, table, mode="sum").relu_()
    return first, torch.addmm(b_h, first.to(w_h.dtype), w_h.t()).relu_()


def _relu_grad(grad: Tensor, out: Tensor) -> Tensor:
    """The gradient through a ReLU of output ``out``: autograd's own kernel, one
    vectorised pass (a ``masked_fill_`` by ``out <= 0`` took ten times as long)."""
    return torch.ops.aten.threshold_backward(grad, out, 0)


def mlp_dtype(left: Tensor) -> torch.dtype:
    """The hidden and output layers' dtype: autocast's where it is on (as for the
    ``addmm`` it would cast), else the sides'."""
    kind = left.device.type
    return torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else left.dtype


def place_logits_elementwise(left: Tensor, right: Tensor, ia: Tensor, ib: Tensor,
                             w_h: Tensor, b_h: Tensor, w_o: Tensor, b_o: Tensor) -> Tensor:
    """One slice's logits ``[n]`` (``left, right [c*M, F]``, row ids ``ia, ib [n]``,
    ``w_o [F2]``) written as a gather, an add and ReLUs around the hidden product,
    for ``torch.compile``: Inductor fuses the gather, the add and the first ReLU into
    one loop and the second ReLU into the output's dot product (eagerly,
    :func:`_hidden` and ``addmv`` are faster)."""
    first = torch.relu(left[ia] + right[ib].to(left.dtype)).to(w_h.dtype)
    # not addmm: Inductor would copy its broadcast bias to [n, F2] first
    return torch.relu(first @ w_h.t() + b_h) @ w_o + b_o


def place_scores(left: Tensor, right: Tensor, first: Tensor, second: Tensor, w_h: Tensor,
                 b_h: Tensor, w_o: Tensor, b_o: Tensor, dtype: torch.dtype | None = None,
                 compiled: bool = False, kept: list[tuple[Tensor, Tensor]] | None = None
                 ) -> Tensor:
    """The logits ``[B, K]`` of the places ``(first, second)`` (``[B, K]`` node ids)
    from the first layer's sides ``left, right [B, M, F]`` (pickup side with the bias,
    delivery side), the hidden layer ``w_h [F2, F], b_h [F2]`` and the output layer
    ``w_o [1, F2], b_o [1]``, computed in slices of instances; the layers after the
    first in ``dtype`` (default :func:`mlp_dtype`). ``compiled``: each slice by
    :func:`place_logits_elementwise` under ``torch.compile``
    (:mod:`~pyg_routing.models.compiled`). ``kept``: each eager slice's two
    activations are appended to it (:class:`PlaceScores`'s backward reads them). Not
    differentiable (:class:`PlaceScores` is)."""
    b, m, f = left.shape
    dt = dtype or mlp_dtype(left)
    w_h, b_h, w_o, b_o = w_h.to(dt), b_h.to(dt), w_o[0].to(dt), b_o.to(dt)
    out = left.new_empty(first.shape, dtype=dt)
    fused = compiled_function(place_logits_elementwise) if compiled else None
    with torch.autocast(left.device.type, enabled=False):
        for sl in place_slices(left, first, w_h.size(0)):
            ia, ib = _ids(first, second, sl, m)
            sides = left[sl].reshape(-1, f), right[sl].reshape(-1, f)
            if fused is not None:
                out[sl] = fused(*sides, ia, ib, w_h, b_h, w_o, b_o).view(-1, first.size(1))
                continue
            r1, z = _hidden(*sides, ia, ib, w_h, b_h)
            # the last layer a matrix-vector product into the output
            torch.addmv(b_o, z, w_o, out=out[sl].view(-1))
            if kept is not None:
                kept.append((r1, z))
    return out


class PlaceScores(torch.autograd.Function):
    r""":func:`place_scores` with a hand-written backward that recomputes each slice, or
    reads the activations its forward kept (see the module docstring)
    (``PlaceScores.apply(left, right, first, second, w_h, b_h, w_o, b_o)``).

    Per slice, with ``r1 = relu(left[i] + right[j])``, ``r2 = relu(r1 W_h^T + b_h)``
    and the logits' gradient ``g``: ``dL/dw_o = r2^T g``, ``dL/db_o = sum g``,
    ``g2 = (g w_o) * 1[r2 > 0]``, ``dL/dW_h = (r1^T g2)^T``, ``dL/db_h = sum_rows g2``,
    ``g1 = (g2 W_h) * 1[r1 > 0]``, scattered back to the sides' rows ``i`` and ``j``.
    These are autograd's own products, so one slice (a small batch) gives its
    gradients bit for bit; several change the sum order of the weight gradients (float
    reassociation) and may round the one-column output layer's last bit differently
    (``functional/chunks.py``). Weight gradients are summed in at least float32. Not
    twice differentiable.
    """

    @staticmethod
    def forward(ctx: Any, left: Tensor, right: Tensor, first: Tensor, second: Tensor,
                w_h: Tensor, b_h: Tensor, w_o: Tensor, b_o: Tensor) -> Tensor:
        ctx.save_for_backward(left, right, first, second, w_h, b_h, w_o)
        ctx.dt = mlp_dtype(left)                 # the backward's autocast state may differ
        ctx.dtypes = (right.dtype, w_h.dtype, b_h.dtype, w_o.dtype, b_o.dtype)
        # the slices' activations kept for the backward where they fit the budget
        saved = first.numel() * (left.size(-1) + w_h.size(0)) * left.element_size()
        ctx.kept = [] if keeps_activations(saved, left.device) else None
        return place_scores(left, right, first, second, w_h, b_h, w_o, b_o, ctx.dt,
                            kept=ctx.kept)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, g_out: Tensor) -> tuple[Tensor | None, ...]:
        left, right, first, second, w_h, b_h, w_o = ctx.saved_tensors
        b, m, f = left.shape
        dt = ctx.dt
        acc = torch.promote_types(dt, torch.float32)          # half precision sums in fp32
        wh, bh, wo = w_h.to(dt), b_h.to(dt), w_o[0].to(dt)
        g_left = torch.zeros_like(left).view(-1, f)
        g_right = torch.zeros_like(left).view(-1, f)
        g_wh = torch.zeros(w_h.shape, dtype=acc, device=left.device)
        g_bh = torch.zeros(b_h.shape, dtype=acc, device=left.device)
        g_wo = torch.zeros(wo.shape, dtype=acc, device=left.device)
        g_bo = torch.zeros((), dtype=acc, device=left.device)
        g_out = g_out.to(dt)
        with torch.autocast(left.device.type, enabled=False):
            for i, sl in enumerate(place_slices(left, first, w_h.size(0))):
                ia, ib = _ids(first, second, sl, m)
                r1, r2 = ctx.kept[i] if ctx.kept else _hidden(
                    left[sl].reshape(-1, f), right[sl].reshape(-1, f), ia, ib, wh, bh)
                g = g_out[sl].reshape(-1)                                   # [n]
                g_wo += r2.t().mv(g)
                g_bo += g.sum()
                g2 = _relu_grad(torch.outer(g, wo), r2)                      # [n, F2]
                g_wh += r1.to(dt).t().mm(g2).t()
                g_bh += g2.sum(0)
                g1 = _relu_grad(g2.mm(wh).to(left.dtype), r1)                # [n, F]
                rows = slice(sl.start * m, sl.stop * m)
                g_left[rows].index_add_(0, ia, g1)
                g_right[rows].index_add_(0, ib, g1)
        d_right, d_wh, d_bh, d_wo, d_bo = ctx.dtypes
        return (g_left.view_as(left), g_right.view_as(left).to(d_right), None, None,
                g_wh.to(dt).to(d_wh), g_bh.to(dt).to(d_bh),
                g_wo.to(dt).view(1, -1).to(d_wo), g_bo.to(dt).view(1).to(d_bo))
