"""N2S's two decoders: which pickup-delivery pair to remove, and where to put it back.

Both read ``ĥ = h W_node + max_i(h_i) W_graph`` (N2S's decoder input) and squash their
logits by ``clip * tanh`` before masking (N2S: 6). Written for speed without
changing the function:

* removal: the per-head bilinear forms ``q_x · k_y = h_x W_Q^h (W_K^h)^T h_y`` use the
  folded ``[D, D]`` product ``W_Q^h (W_K^h)^T`` (one projection of all nodes instead of
  two);
* reinsertion: the query of a compatibility is folded into its key weights
  (``u = W_K W_Q^T q``, scores ``h @ u``: no projection of all nodes per query); the
  first layer of the pair MLP is separable (its inputs for ``(i, j)`` are 8 channels
  of ``i`` and 8 of ``j``), so it is two ``[B, M, 32]`` products and a gather-and-sum; and
  only the ``P (2P - 1)`` allowed entries are scored
  (:func:`~pyg_routing.functional.pickup_delivery.reinsertion_candidates`), not
  all ``M^2``, by an MLP run in slices of instances in both passes
  (:mod:`~pyg_routing.models.n2s.place_scores`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from pyg_routing.data.dense_rows import take_rows
from pyg_routing.functional.chunks import (
    batch_slices,
    chunk_budget,
    instances_per_chunk,
    needs_grad,
)
from pyg_routing.models.compiled import search_body
from pyg_routing.models.inplace import InplaceReLU
from pyg_routing.models.n2s.place_scores import PlaceScores, place_scores


def _mlp(inputs: int, hidden: int = 32) -> nn.Sequential:
    """N2S's scoring MLP ``inputs -> 32 -> 32 -> 1`` (ReLU)."""
    return nn.Sequential(nn.Linear(inputs, hidden), InplaceReLU(),
                         nn.Linear(hidden, hidden), InplaceReLU(), nn.Linear(hidden, 1))


def _uniform_(param: Tensor) -> None:
    """N2S's init of its raw weight tensors: ``U(±1/sqrt(size(-1)))``."""
    bound = 1.0 / math.sqrt(param.size(-1))
    nn.init.uniform_(param, -bound, bound)


class RemovalDecoder(nn.Module):
    r"""Scores the removal of every pair (N2S Eqs. 12-13).

    Per node ``i`` and head ``h``: ``s = q_pre·k_i + q_i·k_post - q_pre·k_post`` with
    ``pre`` the predecessor of ``i`` and ``post`` its SECOND successor (N2S's choice);
    per pair, the pickup's and the delivery's ``H`` scores and the ``history`` features
    go through an MLP.

    Shapes: ``h [B, M, D]`` (decoder input), ``succ [B, M]``, ``history [B, P, F]`` ->
    ``[B, P]`` logits (before clipping and masking).
    """

    def __init__(self, dim: int, heads: int = 4, history: int = 4,
                 compiled: bool = False) -> None:
        super().__init__()
        self.dim, self.heads = dim, heads
        self.compiled = bool(compiled)
        self.query = nn.Parameter(torch.empty(heads, dim, dim))
        self.key = nn.Parameter(torch.empty(heads, dim, dim))
        self.score = _mlp(2 * heads + history)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_(self.query)
        _uniform_(self.key)
        for mod in self.score:
            if isinstance(mod, nn.Linear):
                mod.reset_parameters()

    def forward(self, h: Tensor, succ: Tensor, history: Tensor) -> Tensor:
        b, m, d = h.shape
        # Without gradients, slices of instances (functional/chunks.py): the [B*M, H*D]
        # bilinear products (13 MB at PDP-101, B = 64) never exist whole; same values.
        per_chunk = instances_per_chunk(2 * m * self.heads * d, chunk_budget(h.device))
        scores = search_body(self, "_scores", h)
        if b > per_chunk and not needs_grad(self, h):
            return torch.cat([scores(h[sl], succ[sl], history[sl])
                              for sl in batch_slices(b, per_chunk)])
        return scores(h, succ, history)

    def extra_repr(self) -> str:
        return "compiled=True" if self.compiled else ""

    def _scores(self, h: Tensor, succ: Tensor, history: Tensor) -> Tensor:
        b, m, d = h.shape
        p = (m - 1) // 2
        pred = torch.empty_like(succ).scatter_(
            1, succ, torch.arange(m, device=succ.device).expand_as(succ))
        succ2 = succ.gather(1, succ)
        succ3 = succ.gather(1, succ2)
        bilinear = self.query @ self.key.transpose(1, 2)                   # [H, D, D]
        # q_x · k_y = g_x · h_y with g = h W_Q (W_K)^T, per head: [B, M, H, D]
        g = (h.reshape(b * m, d) @ bilinear.transpose(0, 1).reshape(d, -1)).view(b * m, -1, d)
        # With pre = pred(i), post = succ²(i): q_pre·k_i - q_pre·k_post is, at j = pre,
        # g_j · (h_succ(j) - h_succ³(j)); q_i·k_post is g_i · h_succ²(i). Both are
        # contractions of g with gathered rows of h (128 wide), and only the [B, M, H]
        # result of the first is gathered by pred: no [B, M, H, D] gather or product.
        rows = torch.stack([take_rows(h, succ) - take_rows(h, succ3), take_rows(h, succ2)], -1)
        t = torch.bmm(g, rows.view(b * m, d, 2)).view(b, m, -1, 2)          # [B, M, H, 2]
        s = take_rows(t[..., 0], pred) + t[..., 1]                         # [B, M, H]
        per_pair = torch.cat([s[:, 1:p + 1], s[:, p + 1:]], 2)
        feats = torch.cat([per_pair, history.to(per_pair.dtype)], -1)       # [B, P, 2H+F]
        return self.score(feats).squeeze(-1)


class ReinsertionDecoder(nn.Module):
    r"""Scores the reinsertion places of the removed pair (N2S Eqs. 14-15).

    Two unscaled multi-head compatibilities, ``after`` (query with node ``i``) and
    ``before`` (query with ``succ(i)``), of the pickup's and the delivery's embeddings
    give 16 channels per place ``(i, j)``: pickup-``after``/``before`` at ``i`` and
    delivery-``after``/``before`` at ``j``; an MLP ``16 -> 32 -> 32 -> 1`` scores them.

    Shapes: ``h [B, M, D]``, ``succ [B, M]``, ``pickup, delivery [B]``, ``first,
    second [B, K]`` (the candidate places) -> ``[B, K]`` logits.
    """

    def __init__(self, dim: int, heads: int = 4, hidden: int = 32,
                 compiled: bool = False) -> None:
        super().__init__()
        self.dim, self.heads = dim, heads
        self.compiled = bool(compiled)
        # [after, before] x [query, key] weights, each [H, D, D] (N2S: key dim = D).
        self.query = nn.Parameter(torch.empty(2, heads, dim, dim))
        self.key = nn.Parameter(torch.empty(2, heads, dim, dim))
        self.first = nn.Linear(4 * heads, hidden)
        self.hidden = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 1)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_(self.query)
        _uniform_(self.key)
        for mod in (self.first, self.hidden, self.out):
            mod.reset_parameters()

    def forward(self, h: Tensor, succ: Tensor, pickup: Tensor, delivery: Tensor,
                first: Tensor, second: Tensor) -> Tensor:
        left, right = self._sides(h, succ, pickup, delivery)
        # The places' [B*K, 32] activations (40 MB at PDP-101, B = 64) never exist
        # whole: both forms run in slices of instances (place_scores.py).
        weights = (self.hidden.weight, self.hidden.bias, self.out.weight, self.out.bias)
        if needs_grad(self, h):
            return PlaceScores.apply(left, right, first, second, *weights)
        return place_scores(left, right, first, second, *weights, compiled=self.compiled)

    def extra_repr(self) -> str:
        return "compiled=True" if self.compiled else ""

    def _sides(self, h: Tensor, succ: Tensor, pickup: Tensor, delivery: Tensor
               ) -> tuple[Tensor, Tensor]:
        """The MLP's first layer at every node, ``[B, M, F]`` each: the pickup's side
        (``i``, with the bias) and the delivery's (``j``)."""
        b, m, d = h.shape
        hh = self.heads
        rows = torch.arange(b, device=h.device)
        q = torch.stack([h[rows, pickup], h[rows, delivery]], 1)          # [B, 2, D]
        # u[b, query, kind, head] = W_K^{kind,h} (W_Q^{kind,h})^T q: [B, 2, 2, H, D]
        u = torch.einsum("bqd,khde,khfe->bqkhf", q, self.query, self.key)
        scores = (h @ u.reshape(b, 4 * hh, d).transpose(1, 2)).view(b, m, 2, 2, hh)
        after = scores[:, :, :, 0]                                         # at i
        before = take_rows(scores[:, :, :, 1], succ)                       # at succ(i)
        w = self.first.weight.view(-1, 2, 2, hh)                           # [F, side, kind, H]
        side = torch.stack([after, before], 3)                             # [B, M, 2, 2, H]
        # First layer, separable: pickup channels at i, delivery channels at j.
        left = torch.einsum("bmkh,fkh->bmf", side[:, :, 0], w[:, 0]) + self.first.bias
        right = torch.einsum("bmkh,fkh->bmf", side[:, :, 1], w[:, 1])
        return left, right
