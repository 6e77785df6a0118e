"""DACT's own decoder and critic (yining043/VRP-DACT, ``nets/graph_layers.py``
``MultiHeadDecoder``, ``nets/critic_network.py``), reading both aspects of
:class:`~pyg_routing.models.dact.dual_aspect.DualAspectEncoder`.

DACT's pair ``(a, b)`` reverses the path from ``a`` to ``b`` along the solution: it
removes the arcs ``pred(a) -> a`` and ``b -> succ(b)``. Our 2-opt environment's move
``(i, j)`` removes ``i -> succ(i)`` and ``j -> succ(j)``. So the environment's ``(i, j)``
is DACT's ``(succ(i), j)``, and :class:`MHCDecoder` gives the move ``(i, j)`` the score
DACT gives ``(succ(i), j)`` (one row gather): an unordered move has its two ordered
pairs, as in DACT, and an imported VRP-DACT model keeps its distribution over the moves
that both allow.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from pyg_routing.functional.chunks import (
    batch_slices,
    chunk_budget,
    instances_per_chunk,
    keeps_activations,
    needs_grad,
)
from pyg_routing.models.attention import instance_norm
from pyg_routing.models.compiled import search_body
from pyg_routing.models.dact.dual_aspect import per_head, uniform_
from pyg_routing.models.dact.pair_decoder import MoveDecoder
from pyg_routing.models.dropout import BitDropout
from pyg_routing.models.inplace import InplaceReLU
from pyg_routing.models.sampling import choose, uniforms


def dact_mlp(inputs: int, hidden: int, embed: int, dropout: float) -> nn.Sequential:
    """DACT's ``MLP``: ``inputs -> hidden -> embed -> 1`` (ReLU, dropout after the first
    layer); every weight and bias drawn ``U(±1 / sqrt(size(-1)))`` as DACT does. The
    dropout is :class:`~pyg_routing.models.dropout.BitDropout` (DACT's law, its CPU
    masks drawn 16 bits an entry: PPO updates 16–25 % faster)."""
    mlp = nn.Sequential(nn.Linear(inputs, hidden), InplaceReLU(), BitDropout(dropout),
                        nn.Linear(hidden, embed), InplaceReLU(), nn.Linear(embed, 1))
    reset_dact_mlp(mlp)
    return mlp


def reset_dact_mlp(mlp: nn.Sequential) -> None:
    for param in mlp.parameters():
        uniform_(param)


class MHCDecoder(MoveDecoder):
    r"""DACT's decoder: per aspect a max-pooling refinement ``x W_node + max_i(x_i)
    W_graph``, multi-head compatibilities ``q_a · k_b / sqrt(D)`` in each (``H`` heads of
    full width ``D``; positional heads first, as DACT stacks them), a feed-forward
    aggregation ``2H -> 32 -> 32 -> 1`` over the ``2H`` channels of every pair, and
    ``clip · tanh`` (DACT's ``v_range``). Rows are then read at ``succ(i)`` (module
    docstring) and the environment's mask applied.

    Args:
        dim: width of each aspect ``D``. heads: compatibility heads per aspect.
        hidden: width of the aggregation MLP (DACT: 32). clip: DACT's ``v_range`` (6).
        dropout: of the aggregation MLP (DACT: 0.05).
        compiled: the scores run under ``torch.compile`` where nothing needs a gradient
            (:mod:`pyg_routing.models.compiled`; search only).

    Shapes: ``hg [B, M, 2D]`` (node aspect, then positional), ``mask [B, M, M]``,
    ``succ [B, M]`` -> logits ``[B, M, M]`` over the environment's moves.
    """

    def __init__(self, dim: int, heads: int = 4, hidden: int = 32, clip: float = 6.0,
                 dropout: float = 0.05, compiled: bool = False) -> None:
        super().__init__()
        self.dim, self.heads, self.clip = dim, heads, clip
        self.compiled = bool(compiled)
        # index 0: node aspect, 1: positional aspect
        self.project_node = nn.ModuleList(nn.Linear(dim, dim, bias=False) for _ in range(2))
        self.project_graph = nn.ModuleList(nn.Linear(dim, dim, bias=False) for _ in range(2))
        self.query = nn.Parameter(torch.empty(2, heads, dim, dim))
        self.key = nn.Parameter(torch.empty(2, heads, dim, dim))
        self.mix = dact_mlp(2 * heads, hidden, hidden, dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for mod in (*self.project_node, *self.project_graph):
            mod.reset_parameters()
        uniform_(self.query)
        uniform_(self.key)
        reset_dact_mlp(self.mix)

    def dact_logits(self, hg: Tensor) -> Tensor:
        """``[B, M, M]`` DACT's ``clip · tanh`` scores of its pairs ``(a, b)``, unmasked.

        On a batch above one slice of :mod:`~pyg_routing.functional.chunks` the scores
        are computed slice by slice of instances, from the per-head projections to the
        aggregation MLP: its ``[B·M², 32]`` activations (851 MB each at CVRP-100,
        ``B = 512``) and the full-width queries and keys (119 MB each) never exist
        whole. With gradients each slice is checkpointed (``torch.utils.checkpoint``,
        the random state kept, so the recomputed dropout masks are the forward's): the
        backward recomputes a slice's scores instead of keeping every activation, unless
        all slices' activations fit :func:`~pyg_routing.functional.chunks.keeps_activations`
        (128 MB, or a quarter of the memory free: batches of 64 at TSP-50 take 104 MB,
        of 512 at CVRP-100 4.3 GB), which are then kept (the same gradients). The
        values are the whole batch's but for the last bit of the one-column output
        layer; a slice draws its own dropout masks (a batch within one slice: the
        whole batch's draws)."""
        b, m = hg.shape[:2]
        per_chunk = self._per_chunk(hg)
        if b <= per_chunk:
            # compiled (no gradient): Inductor fuses the aggregation MLP's passes instead
            return search_body(self, "_pair_logits", hg)(self._refined(hg))
        if needs_grad(self, hg):
            # split, not slicing: the backward concatenates the slices' gradients once
            # instead of zero-filling a whole-size gradient per slice
            parts = self._refined(hg).split(per_chunk, 1)
            if keeps_activations(self._saved_bytes(hg), hg.device, up_to_free=True):
                return torch.cat([self._pair_logits(part) for part in parts])
            return torch.cat([checkpoint(self._pair_logits, part, use_reentrant=False)
                              for part in parts])
        out = hg.new_empty(b, m, m)
        for sl, scores in self._search_slices(hg, per_chunk):
            out[sl] = scores
        return out

    def select(self, h: Tensor, mask: Tensor, greedy: bool = False,
               generator: torch.Generator | None = None,
               succ: Tensor | None = None) -> Tensor:
        """:meth:`MoveDecoder.select` (the same moves for the same ``generator``
        state) on a search batch above one slice, in eval mode without gradients: each
        slice's scores are read at ``succ``, masked and drawn from (the batch's uniforms
        drawn once, :func:`~pyg_routing.models.sampling.uniforms`), so no ``[B, M, M]``
        tensor exists (at CVRP-100, ``B = 512``: 27 MB each, and the float64 CDF 53 MB,
        faulted afresh every step)."""
        b, m = h.shape[:2]
        per_chunk = self._per_chunk(h)
        if b <= per_chunk or self.training or needs_grad(self, h):
            return super().select(h, mask, greedy, generator, succ)
        succ = self._check_succ(succ)
        self._check_allowed(mask)
        u = None if greedy else uniforms(b, generator, h.device)
        flat = torch.empty(b, dtype=torch.long, device=h.device)
        for sl, scores in self._search_slices(h, per_chunk):
            logits = self._read_moves(scores, mask[sl], succ[sl]).flatten(1).float()
            flat[sl] = choose(logits, u is None, uniform=None if u is None else u[sl])
        return torch.stack([flat // m, flat % m], dim=-1)

    def _refined(self, hg: Tensor) -> Tensor:
        """Each aspect's max-pooling refinement ``[2, B, M, D]`` of ``hg [B, M, 2D]``."""
        x = torch.stack(hg.split(self.dim, -1))                           # [2, B, M, D]
        return torch.stack([self.project_node[a](x[a])
                            + self.project_graph[a](x[a].amax(1)).unsqueeze(1)
                            for a in range(2)])

    def _saved_bytes(self, hg: Tensor) -> int:
        """What autograd saves of the scores of ``hg``'s pairs: about five ``[B M²,
        hidden]`` activations (the pairs, the first layer's output, the dropout's
        mask and output, the second layer's output; measured: 648 bytes a pair in
        float32 at hidden 32)."""
        b, m = hg.shape[:2]
        return 5 * b * m * m * self.mix[0].out_features * hg.element_size()

    def _per_chunk(self, hg: Tensor) -> int:
        """Instances per slice: the aggregation MLP's ``[c M², hidden]`` activations
        within the slice budget."""
        m = hg.size(1)
        return instances_per_chunk(m * m * self.mix[0].out_features, chunk_budget(hg.device))

    def _search_slices(self, hg: Tensor, per_chunk: int) -> Iterator[tuple[slice, Tensor]]:
        """``(slice, scores [c, M, M])`` of ``hg [B, M, 2D]`` without gradients, slice by
        slice: the refinement (it pools per instance) and the caller's read-out on
        slices of several instances, the aggregation MLP on sub-slices of
        ``per_chunk`` (a handful of instances: the per-slice dispatch of the rest would
        cost more than its passes). The MLP runs in a reused workspace in eval mode,
        through the module (its dropout) in training mode, compiled where ``compiled``
        is set."""
        b, m = hg.shape[:2]
        # the read-out's temporaries: about 8 floats per move (scores, gathered,
        # masked, softmax, the float64 CDF)
        outer = per_chunk * max(1, instances_per_chunk(8 * m * m, chunk_budget(hg.device))
                                // per_chunk)
        body = search_body(self, "_pair_logits", hg)
        workspace = not (self.training or self.compiled)                # training: dropout
        work = None
        for sl in batch_slices(b, outer):
            refined = self._refined(hg[sl])
            if workspace and work is None:   # in the refined aspects' dtype (autocast's)
                work = _MixWorkspace(per_chunk * m * m, 2 * self.heads,
                                     self.mix[0].out_features, self.mix[3].out_features,
                                     refined.dtype, refined.device)
            scores = hg.new_empty(refined.size(1), m, m)
            for inner in batch_slices(refined.size(1), per_chunk):
                part = refined[:, inner]
                scores[inner] = (body(part) if work is None
                                 else self._search_pair_logits(part, work))
            yield sl, scores

    def _pair_logits(self, refined: Tensor) -> Tensor:
        """DACT's scores ``[B, M, M]`` of the refined aspects ``[2, B, M, D]``."""
        q, k = per_head(refined, self.query), per_head(refined, self.key)  # [2, B, H, M, D]
        compat = q @ k.transpose(-1, -2) / math.sqrt(self.dim)            # [2, B, H, M, M]
        pairs = torch.cat([compat[1], compat[0]], 1).permute(0, 2, 3, 1)  # [B, M, M, 2H]
        if torch.compiler.is_compiling() and not self.training:
            return self._mix_for_compiler(pairs)
        # The MLP on the pairs as rows [B M², 2H]: on the 4-D pairs its second layer's
        # output is a view, and autograd undoes the in-place ReLU on a view with four
        # extra passes over [B M², 32] (CopySlices). The same values and gradients.
        b, m = pairs.shape[:2]
        return self.clip * torch.tanh(self.mix(pairs.reshape(b * m * m, -1)).view(b, m, m))

    def _mix_for_compiler(self, pairs: Tensor) -> Tensor:
        """``clip * tanh(mix(pairs))`` in eval mode, written for ``torch.compile``: both
        hidden layers as products without their biases (Inductor copies an ``addmm``'s
        broadcast bias to the output's full size first), each bias and ReLU fused into
        the pass after its product, and the output layer, ``tanh`` and the clip into
        the second's. (A first layer as a broadcast and sum over its ``2H`` inputs was
        slower.)"""
        w1, b1, w2, b2, w3, b3 = (t.to(pairs.dtype) for layer in
                                  (self.mix[0], self.mix[3], self.mix[5])
                                  for t in (layer.weight, layer.bias))
        z = torch.relu(pairs @ w1.t() + b1)
        z = torch.relu(z @ w2.t() + b2)
        return self.clip * torch.tanh((z * w3[0]).sum(-1) + b3[0])

    def _search_pair_logits(self, refined: Tensor, ws: _MixWorkspace) -> Tensor:
        """:meth:`_pair_logits` without gradients in eval mode, for a slice of a search
        batch: the pairs and the MLP's activations written into the reused workspace
        ``ws``, biases by ``addmm``, ReLUs and the clip in place, in the workspace's
        dtype (the refined aspects'; under autocast, the products' half precision).
        The same values but for the last bit of the one-column output layer."""
        q, k = per_head(refined, self.query), per_head(refined, self.key)  # [2, c, H, M, D]
        compat = _compat_by_head(q, k).div_(math.sqrt(self.dim))         # [H, 2, c, M, M]
        hh, c, m = compat.shape[0], compat.shape[2], compat.shape[3]
        p, dt = c * m * m, ws.pairs.dtype
        first, second, last = self.mix[0], self.mix[3], self.mix[5]
        pairs = ws.pairs[:p]
        laid = pairs.view(c, m, m, 2 * hh)
        laid[..., :hh].copy_(compat[:, 1].permute(1, 2, 3, 0))          # positional heads
        laid[..., hh:].copy_(compat[:, 0].permute(1, 2, 3, 0))          # then node heads
        with torch.autocast(compat.device.type, enabled=False):
            z = torch.addmm(first.bias.to(dt), pairs, first.weight.t().to(dt),
                            out=ws.first[:p]).relu_()
            z = torch.addmm(second.bias.to(dt), z, second.weight.t().to(dt),
                            out=ws.second[:p]).relu_()
            scores = torch.addmv(last.bias.to(dt), z, last.weight[0].to(dt))
        return scores.view(c, m, m).tanh_().mul_(self.clip)

    def forward(self, hg: Tensor, mask: Tensor, succ: Tensor | None = None) -> Tensor:
        return self._read_moves(self.dact_logits(hg), mask, self._check_succ(succ))

    @staticmethod
    def _check_succ(succ: Tensor | None) -> Tensor:
        if succ is None:
            raise ValueError("DACT's decoder reads the solutions' successors (succ [B, M])")
        return succ

    @staticmethod
    def _read_moves(logits: Tensor, mask: Tensor, succ: Tensor) -> Tensor:
        """The moves' logits ``[B, M, M]``: row ``i`` of ``logits`` read at ``succ(i)``
        (DACT's pairs), ``-inf`` where ``mask`` is False."""
        b, m, _ = logits.shape
        moves = logits.gather(1, succ.unsqueeze(-1).expand(b, m, m))      # row i: DACT's succ(i)
        return moves.masked_fill(~mask, float("-inf"))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, heads={self.heads}, clip={self.clip}"
                f"{', compiled=True' if self.compiled else ''})")


def _compat_by_head(q: Tensor, k: Tensor) -> Tensor:
    """``q k^T`` per head, head-major (``[H, 2, c, M, M]`` of ``q, k [2, c, H, M, D]``),
    one batched product per head on ``q``'s and ``k``'s own memory.

    :func:`per_head` leaves each head's rows ``H D`` apart (a permuted view of its
    ``[2, c, M, H, D]`` product), which a product batched over the heads as well would
    copy out first, queries and keys alike (a fifth of a search slice's scores at
    TSP-50). Per head, the rows are a strided matrix the product reads in place: the
    same dot products, the same values bit for bit."""
    a, c, h, m, d = q.shape
    natural_q, natural_k = q.transpose(2, 3), k.transpose(2, 3)          # [2, c, M, H, D]
    if not (natural_q.is_contiguous() and natural_k.is_contiguous()):
        return (q @ k.transpose(-1, -2)).permute(2, 0, 1, 3, 4)
    out = q.new_empty(h, a * c, m, m)
    for head in range(h):                         # H = 4 products, not a loop over data
        rows_q = natural_q[:, :, :, head].reshape(a * c, m, d)
        rows_k = natural_k[:, :, :, head].reshape(a * c, m, d)
        torch.bmm(rows_q, rows_k.transpose(1, 2), out=out[head])
    return out.view(h, a, c, m, m)


class _MixWorkspace:
    """:meth:`MHCDecoder._search_pair_logits`'s reused buffers for slices of up to
    ``pairs`` pairs: the pairs ``[pairs, channels]`` and the aggregation MLP's two
    hidden activations (``[pairs, hidden]``, ``[pairs, embed]``)."""

    def __init__(self, pairs: int, channels: int, hidden: int, embed: int,
                 dtype: torch.dtype, device: torch.device) -> None:
        self.pairs = torch.empty(pairs, channels, dtype=dtype, device=device)
        self.first = torch.empty(pairs, hidden, dtype=dtype, device=device)
        self.second = torch.empty(pairs, embed, dtype=dtype, device=device)


class DACTCritic(nn.Module):
    r"""DACT's critic: one multi-head attention layer over the (detached) concatenated
    aspects ``[h ‖ g]`` (width ``D``, ``heads`` of ``D // heads`` channels each, scaled;
    DACT uses 6 heads of 21 on ``D = 128``) with a feed-forward block, each with a
    residual and :func:`instance_norm`; then ``fused = x W_node + mean(x) W_graph`` and
    DACT's MLP ``D -> D -> 64 -> 1`` (dropout 0.05) on ``mean(fused)``. It reads no cost
    feature.

    Shapes: ``hg [B, M, D]`` -> ``[B]``.
    """

    #: graph features it reads beside the embeddings (ValueHead's ``extra``): none
    extra = 0

    def __init__(self, dim: int, heads: int = 6, ff_hidden: int | None = None,
                 embed: int = 64, dropout: float = 0.05) -> None:
        super().__init__()
        d = dim // heads
        self.dim, self.heads = dim, heads
        self.query = nn.Parameter(torch.empty(heads, dim, d))
        self.key = nn.Parameter(torch.empty(heads, dim, d))
        self.value = nn.Parameter(torch.empty(heads, dim, d))
        self.out = nn.Parameter(torch.empty(heads, d, dim))
        ff = dim if ff_hidden is None else ff_hidden
        self.ff = nn.Sequential(nn.Linear(dim, ff), InplaceReLU(), nn.Linear(ff, dim))
        self.project_node = nn.Linear(dim, dim, bias=False)
        self.project_graph = nn.Linear(dim, dim, bias=False)
        self.value_mlp = dact_mlp(dim, dim, embed, dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for param in (self.query, self.key, self.value, self.out):
            uniform_(param)
        for mod in (self.ff[0], self.ff[2], self.project_node, self.project_graph):
            mod.reset_parameters()
        reset_dact_mlp(self.value_mlp)

    def forward(self, hg: Tensor) -> Tensor:
        if hg.size(-1) != self.dim:
            raise ValueError(f"DACTCritic(dim={self.dim}) got embeddings of width "
                             f"{hg.size(-1)}")
        q, k, v = per_head(hg, self.query), per_head(hg, self.key), per_head(hg, self.value)
        # softmax(q kᵀ / sqrt(d)) v by PyTorch's fused kernel: no [B, H, M, M] weights
        heads = F.scaled_dot_product_attention(q, k, v)                  # [B, H, M, d]
        x = instance_norm(hg + torch.einsum("bhme,hef->bmf", heads, self.out))
        x = instance_norm(x + self.ff(x))
        fused = self.project_node(x) + self.project_graph(x.mean(1)).unsqueeze(1)
        return self.value_mlp(fused.mean(1)).squeeze(-1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim}, heads={self.heads})"
