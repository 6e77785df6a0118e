"""``NDSEncoder``: the encoder of Neural Deconstruction Search (Hottung et al. 2025) with
any of the library's encodings as one argument ``pe``.

NDS encodes an instance together with its CURRENT solution (``B`` solutions of ``N``
customers and ``K`` depots, ``M = N + K`` nodes in the kernel order of
:mod:`pyg_routing.envs.deconstruction.depots`: depot 0, customers ``1..N``, depots
``1..K-1``; NDS has ``K = 1``):

1. embed: every depot by ``embedding_depot`` (its coordinates), the customers by
   ``embedding_node`` (coordinates, demand / capacity, and the time window (VRPTW) or
   the prize (PCVRP));
2. ``layers``: 2 Transformer layers over all ``M`` nodes (8 heads x 16, add + instance
   norm, feed-forward 128 -> 512 -> 128);
3. ``tour_layer``: every customer reads the SUM of the embeddings of its tour;
4. ``mp_layers``: every customer reads its predecessor and successor (its tour's depot
   row may be one of them); VRPTW projects the two with separate maps (direction matters),
   CVRP and PCVRP with one shared map;
5. ``layers_2``: 2 more Transformer layers.

The released NDS feeds no positional encoding: the solution reaches the network only
through steps 3 and 4 (``pe="none"`` is exactly that network, parameter for parameter
and name for name, so NDS's checkpoints load with ``load_state_dict``). The encodings
enter as the project paper prescribes:

* node codes (IPE+XPE, SIN, Laplacian PE, DACT CPE, ..., and APE's learnable table):
  the code of width ``w`` is CONCATENATED to the raw features before the first
  projections, which become ``Linear(F + w -> dim)``. The depot has its own projection
  in NDS; it gets its OWN code (the value each encoding gives node 0: IPE phase 0,
  XPE zeros, APE's learnable depot row, ...) through ``Linear(2 + w -> dim)``, so
  that every node is embedded by the same rule and what an encoding does say about
  the depot (APE's depot row, the Laplacian eigenvectors' depot entries) reaches it;
* attention biases (RPE, ALiBi, SPD): one ``[B, 8, M, M]`` bias, added to the
  logits of all 4 Transformer layers;
* RoPE: queries and keys of all 4 Transformer layers rotated by the within-route
  position (depot 0, unvisited customers not rotated).

Steps 3 and 4 (NDS's own solution channel) are kept for every encoding.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pyg_routing.functional.chunks import (
    batch_slices,
    chunk_budget,
    instances_per_chunk,
    needs_grad,
)
from pyg_routing.models.gps_encoder import check_heads
from pyg_routing.models.inplace import inplace_relu
from pyg_routing.models.pe.positional import PositionalEncoding, accept_legacy_keys
from pyg_routing.models.pe.rope import RotaryPE


class AddAndInstanceNormalization(nn.Module):
    """``InstanceNorm1d(a + b)`` over the node axis of ``[B, L, dim]`` (NDS's
    ``add_and_normalize``; affine, no running statistics)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.InstanceNorm1d(dim, affine=True, track_running_stats=False)

    def reset_parameters(self) -> None:
        self.norm.reset_parameters()

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        return self.norm((a + b).transpose(1, 2)).transpose(1, 2)


class FeedForward(nn.Module):
    """``W2(ReLU(W1 x))``, ``dim -> hidden -> dim``."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.W1 = nn.Linear(dim, hidden)
        self.W2 = nn.Linear(hidden, dim)

    def reset_parameters(self) -> None:
        self.W1.reset_parameters()
        self.W2.reset_parameters()

    def forward(self, x: Tensor) -> Tensor:
        return self.W2(inplace_relu(self.W1(x)))    # W1's output is ours


def split_heads(x: Tensor, heads: int) -> Tensor:
    """``[B, L, H * D] -> [B, H, L, D]``."""
    return x.unflatten(-1, (heads, -1)).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """``[B, H, L, D] -> [B, L, H * D]``."""
    return x.transpose(1, 2).flatten(-2)


def _as_mask(bias: Tensor | None, like: Tensor) -> Tensor | None:
    """An attention bias in the dtype of the queries, without materializing the head
    axis of a bias shared by all heads (RPE, SPD return an expanded view)."""
    if bias is None:
        return None
    if bias.dim() == 4 and bias.size(1) > 1 and bias.stride(1) == 0:
        bias = bias[:, :1]                     # SDPA broadcasts [B, 1, M, M] over heads
    return bias.to(like.dtype)


class EncoderLayer(nn.Module):
    """NDS's Transformer layer: MHA (``heads`` x ``dim // heads``) with an optional
    additive bias and rotary positions, add + instance norm, feed-forward, add +
    instance norm.

    Shapes: ``x [B, M, dim]``, ``bias [B, H or 1, M, M]``, ``position [B, M]`` ->
    ``[B, M, dim]``.
    """

    def __init__(self, dim: int = 128, heads: int = 8, ff_hidden: int = 512) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} must be a multiple of heads {heads}")
        self.heads = heads
        self.Wq = nn.Linear(dim, dim, bias=False)
        self.Wk = nn.Linear(dim, dim, bias=False)
        self.Wv = nn.Linear(dim, dim, bias=False)
        self.multi_head_combine = nn.Linear(dim, dim)
        self.add_n_normalization_1 = AddAndInstanceNormalization(dim)
        self.feed_forward = FeedForward(dim, ff_hidden)
        self.add_n_normalization_2 = AddAndInstanceNormalization(dim)

    def reset_parameters(self) -> None:
        for mod in self.children():
            mod.reset_parameters()

    def forward(self, x: Tensor, bias: Tensor | None = None, position: Tensor | None = None,
                rotary: RotaryPE | None = None) -> Tensor:
        q = split_heads(self.Wq(x), self.heads)
        k = split_heads(self.Wk(x), self.heads)
        v = split_heads(self.Wv(x), self.heads)
        if rotary is not None:
            q, k = rotary(q, k, position)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=_as_mask(bias, q))
        x = self.add_n_normalization_1(x, self.multi_head_combine(merge_heads(out)))
        return self.add_n_normalization_2(x, self.feed_forward(x))


class TourLayer(nn.Module):
    """Every customer reads the SUM of its tour's customer embeddings.

    ``tour [B, N]`` holds arbitrary tour labels in ``0..N-1`` (-1: unvisited, PCVRP).
    Unvisited customers share a dummy tour whose sum is zero. The depot rows (0 and
    ``N+1..M-1``) are returned unchanged; the norm runs over the customers only (as
    in NDS).
    """

    def __init__(self, dim: int = 128) -> None:
        super().__init__()
        self.tour_combiner = nn.Linear(2 * dim, dim)
        self.feedforward_layer = nn.Linear(dim, dim)
        self.add_and_normalize = AddAndInstanceNormalization(dim)

    def reset_parameters(self) -> None:
        for mod in self.children():
            mod.reset_parameters()

    def forward(self, h: Tensor, tour: Tensor) -> Tensor:
        """``h [B, M, dim]``, ``tour [B, N]`` -> ``[B, M, dim]``."""
        b, _, d = h.shape
        n = tour.shape[1]
        cust = h[:, 1:n + 1]
        # Label N is the dummy tour of the unvisited; its row is dropped after the
        # scatter, so it is zero whatever was added to it.
        label = torch.where(tour < 0, n, tour).long()
        idx = label.unsqueeze(-1).expand(b, n, d)
        sums = cust.new_zeros(b, n + 1, d).scatter_add_(1, idx, cust)
        sums = torch.cat([sums[:, :n], sums.new_zeros(b, 1, d)], dim=1)
        mixed = inplace_relu(self.tour_combiner(torch.cat([cust, sums.gather(1, idx)], dim=-1)))
        cust = self.add_and_normalize(cust, self.feedforward_layer(mixed))
        return torch.cat([h[:, :1], cust, h[:, n + 1:]], dim=1)


class MessagePassingLayer(nn.Module):
    """Every customer reads its predecessor and successor in the solution (a depot
    row where the tour leaves from or returns to its depot, also for singleton tours;
    0 for unvisited customers).

    ``directed=True`` (NDS's VRPTW): ``left_neighbour_projector`` for the predecessor and
    ``right_neighbour_projector`` for the successor; ``False`` (CVRP, PCVRP): one shared
    bias-free ``neighbour_projector``. The depot rows (0 and ``N+1..M-1``) are returned
    unchanged.
    """

    def __init__(self, dim: int = 128, directed: bool = False) -> None:
        super().__init__()
        self.directed = directed
        if directed:
            self.left_neighbour_projector = nn.Linear(dim, dim, bias=False)
            self.right_neighbour_projector = nn.Linear(dim, dim, bias=False)
        else:
            self.neighbour_projector = nn.Linear(dim, dim, bias=False)
        self.neighbour_combiner = nn.Linear(2 * dim, dim)
        self.feedforward_layer = nn.Linear(dim, dim)
        self.add_and_normalize = AddAndInstanceNormalization(dim)

    def reset_parameters(self) -> None:
        for mod in self.children():
            mod.reset_parameters()

    def forward(self, h: Tensor, pred: Tensor, succ: Tensor) -> Tensor:
        """``h [B, M, dim]``, ``pred, succ [B, N]`` rows of ``h`` -> ``[B, M, dim]``."""
        b, _, d = h.shape
        n = pred.shape[1]
        left = h.gather(1, pred.long().unsqueeze(-1).expand(b, n, d))
        right = h.gather(1, succ.long().unsqueeze(-1).expand(b, n, d))
        if self.directed:
            msg = self.left_neighbour_projector(left) + self.right_neighbour_projector(right)
        else:
            msg = self.neighbour_projector(left) + self.neighbour_projector(right)
        cust = h[:, 1:n + 1]
        mixed = inplace_relu(self.neighbour_combiner(torch.cat([cust, msg], dim=-1)))
        cust = self.add_and_normalize(cust, self.feedforward_layer(mixed))
        return torch.cat([h[:, :1], cust, h[:, n + 1:]], dim=1)


class NDSEncoder(nn.Module):
    r"""NDS's encoder (see the module docstring) with the encoding ``pe``.

    Args:
        in_features: customer features ``F`` (NDS: 3 CVRP, 5 VRPTW, 4 PCVRP).
        directed: separate predecessor / successor projections (NDS: VRPTW only).
        dim: model width (NDS: 128). heads: attention heads (NDS: 8).
        ff_hidden: feed-forward width (NDS: 512).
        encoder_layer_num, encoder_layer_num_2: Transformer layers before and after the
            solution layers (NDS: 2, 2).
        tour_layer: use the tour-sum layer (NDS: True).
        message_passing_layer_num: neighbour layers (NDS: 1).
        pe: encoding name (:mod:`pyg_routing.encodings`; ``"none"`` is NDS), or a
            built :class:`~pyg_routing.models.pe.PositionalEncoding`.
        pe_dim: width of node codes (IPE+XPE adds ``2 * num_bands``).
        num_bands: XPE bands. max_route_len: APE table size.
        pe_kwargs: extra arguments of the encoding's transform or module.

    Shapes (``M = N + K`` nodes: depot 0, customers ``1..N``, depots ``1..K-1``):
        ``x [B, M, F]`` (a depot row's first two columns are its coordinates, the
        rest of that row is ignored), ``pred, succ [B, N]`` (rows of ``x``: customers
        or their tour's depot), ``tour [B, N]``, ``pe [B, M, w]`` (node codes but
        APE), ``route_pos [B, M]`` (APE, bias, RoPE), ``route_id [B, M]`` (SPD) ->
        ``[B, M, dim]``.
    """

    def __init__(self, in_features: int = 3, directed: bool = False, dim: int = 128,
                 heads: int = 8, ff_hidden: int = 512, encoder_layer_num: int = 2,
                 encoder_layer_num_2: int = 2, tour_layer: bool = True,
                 message_passing_layer_num: int = 1,
                 pe: str | PositionalEncoding = "none", pe_dim: int = 32,
                 num_bands: int = 4, max_route_len: int = 512, **pe_kwargs: Any) -> None:
        super().__init__()
        check_heads("NDSEncoder", dim, heads, encoder_layer_num=encoder_layer_num,
                    encoder_layer_num_2=encoder_layer_num_2,
                    message_passing_layer_num=message_passing_layer_num)
        self.in_features, self.dim, self.heads = in_features, dim, heads
        self.directed = directed
        self.positional = PositionalEncoding.build(pe, dim=dim, heads=heads, pe_dim=pe_dim,
                                                   num_bands=num_bands,
                                                   max_route_len=max_route_len, **pe_kwargs)
        self.pe, self.kind = self.positional.name, self.positional.kind
        self.rotary = self.positional.rotary
        self.pe_width = self.positional.width
        self.embedding_depot = nn.Linear(2 + self.pe_width, dim)
        self.embedding_node = nn.Linear(in_features + self.pe_width, dim)
        self.layers = nn.ModuleList(EncoderLayer(dim, heads, ff_hidden)
                                    for _ in range(encoder_layer_num))
        self.tour_layer = TourLayer(dim) if tour_layer else None
        self.mp_layers = nn.ModuleList(MessagePassingLayer(dim, directed)
                                       for _ in range(message_passing_layer_num))
        self.layers_2 = nn.ModuleList(EncoderLayer(dim, heads, ff_hidden)
                                      for _ in range(encoder_layer_num_2))
        accept_legacy_keys(self)

    def reset_parameters(self) -> None:
        for mod in (self.embedding_depot, self.embedding_node, *self.layers, self.tour_layer,
                    *self.mp_layers, *self.layers_2, self.positional):
            if mod is not None:
                mod.reset_parameters()

    @property
    def feature_width(self) -> int:
        """Width of the observation's node features ``x`` this encoder reads."""
        return self.in_features

    def forward_observation(self, obs: Any) -> Tensor:
        """:meth:`forward` on an observation of the deconstruction search (``x, pred,
        succ, tour, route_pos, route_id``, ``num_depots`` (default 1) and the route
        quantities or node code)."""
        dtype = self.embedding_node.weight.dtype
        return self(obs.x.to(dtype), obs.pred, obs.succ, obs.tour,
                    self.positional.observed_code(obs, dtype), getattr(obs, "route_pos", None),
                    getattr(obs, "route_id", None), getattr(obs, "open_routes", None),
                    num_depots=getattr(obs, "num_depots", 1))

    def forward(self, x: Tensor, pred: Tensor, succ: Tensor, tour: Tensor,
                pe: Tensor | None = None, route_pos: Tensor | None = None,
                route_id: Tensor | None = None,
                open_routes: Tensor | None = None, *, num_depots: int = 1) -> Tensor:
        """Node embeddings ``[B, M, dim]`` of ``B`` solutions (see the class docstring;
        ``open_routes [B]``: solutions whose routes are open, for SPD; ``num_depots``:
        ``K``, the depot rows 0 and ``N+1..M-1``)."""
        b, m, f = x.shape
        if f != self.in_features:
            raise ValueError(f"NDSEncoder(in_features={self.in_features}) got node features "
                             f"of width {f}")
        if isinstance(num_depots, bool) or not isinstance(num_depots, int) \
                or not 1 <= num_depots < m:
            raise ValueError(f"num_depots must be an integer in 1..{m - 1} (M = {m} nodes), "
                             f"got {num_depots!r}")
        n = m - num_depots
        for name, t in (("pred", pred), ("succ", succ), ("tour", tour)):
            if t.shape != (b, n):
                raise ValueError(f"{name} must be [B, N] = {(b, n)} (N = M - K, K = "
                                 f"{num_depots} depots), got {tuple(t.shape)}")
        if self.positional.reads_positions and route_pos is None:
            raise ValueError(f"encoding {self.pe!r} needs route_pos [B, M]")
        # The search's slots (no gradient) in slices (functional/chunks.py): the
        # feed-forward and attention temporaries of 8 slots at CVRP-500 (8 MB each) were
        # faulted afresh every call; every layer is per solution, so the same values.
        ff = self.layers[0].feed_forward.W1.out_features if len(self.layers) else self.dim
        # At least 2 solutions per slice: the depot's embedding has one row per solution
        # (and MKL sums a one-row product in another order).
        per_chunk = max(2, instances_per_chunk(m * max(ff, self.dim * 4),
                                               chunk_budget(x.device)))
        if b > per_chunk + 1 and not needs_grad(self, x, pe):
            return torch.cat([self(*(None if t is None else t[sl] for t in (
                x, pred, succ, tour, pe, route_pos, route_id, open_routes)),
                num_depots=num_depots) for sl in batch_slices(b, per_chunk, min_size=2)])
        code = self.positional.node_code(pe, route_pos, type(self).__name__)
        # depot 0, the customers, depots 1..K-1 (empty for K = 1: NDS's rows and ops)
        depot, cust, others = x[:, :1, :2], x[:, 1:n + 1], x[:, n + 1:, :2]
        if code is not None:
            code = code.to(x.dtype)
            depot = torch.cat([depot, code[:, :1]], dim=-1)
            cust = torch.cat([cust, code[:, 1:n + 1]], dim=-1)
            others = torch.cat([others, code[:, n + 1:]], dim=-1)
        h = torch.cat([self.embedding_depot(depot), self.embedding_node(cust),
                       self.embedding_depot(others)], dim=1)
        bias = None
        if self.positional.bias is not None:
            if route_id is None and self.positional.bias.needs_route_id:
                raise ValueError(f"encoding {self.pe!r} needs route_id [B, M]")
            rid = torch.full_like(route_pos, -1) if route_id is None else route_id
            bias = self.positional.attention_bias(route_pos, rid,    # [B, H, M, M], once
                                                  open_routes=open_routes)
        for layer in self.layers:
            h = layer(h, bias, route_pos, self.rotary)
        if self.tour_layer is not None:
            h = self.tour_layer(h, tour)
        for layer in self.mp_layers:
            h = layer(h, pred, succ)
        for layer in self.layers_2:
            h = layer(h, bias, route_pos, self.rotary)
        return h

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(in_features={self.in_features}, dim={self.dim}, "
                f"heads={self.heads}, directed={self.directed}, pe={self.pe!r}, "
                f"pe_width={self.pe_width})")
