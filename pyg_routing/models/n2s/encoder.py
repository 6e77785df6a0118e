"""``N2SEncoder``: N2S's encoder (Synthesis Attention) with any of the 14 encodings.

N2S embeds the node features (coordinates only) by a bias-free linear map and
never adds a positional code to them: the solution enters as positional attention
scores, computed once per forward and shared by all layers. Which encoding makes
those scores is the one argument that changes (paper App. "HA-N2S configuration"):

* node codes (IPE+XPE, N2S's own cyclic code ``dact_cpe``, SIN, Laplacian PE, ..., and
  APE's learnable table): ``A_pos[h] = (g W_Q^h)(g W_K^h)^T`` (N2S's
  ``MultiHeadPosCompat``, unscaled) of the code ``g [B, M, width]``;
* bias encodings (RPE, ALiBi, SPD): their ``[B, H, M, M]`` bias IS ``A_pos``;
* RoPE: no ``A_pos``; the node queries and keys are rotated by the tour position;
* none: no ``A_pos`` (the MLP's positional inputs are zeros; its size is unchanged).

The parameter count then differs between encodings only by the positional
projection of node codes (``2 * width * dim``) and the bias modules' tables.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from pyg_routing.functional.chunks import (
    chunk_budget,
    in_slices,
    instances_per_chunk,
    needs_grad,
)
from pyg_routing.models.compiled import search_body
from pyg_routing.models.gps_encoder import check_heads
from pyg_routing.models.n2s.synthesis_attention import SynthesisAttentionLayer
from pyg_routing.models.pe.positional import PositionalEncoding, accept_legacy_keys


class N2SEncoder(nn.Module):
    r"""N2S's encoder: ``h⁰ = x W`` (no bias), positional scores of the encoding
    ``pe`` (see the module docstring), ``num_layers`` :class:`SynthesisAttentionLayer`\ s.

    Args:
        in_channels: node-feature width (2: coordinates, as in N2S).
        dim: model width (N2S: 128). heads: attention heads (N2S: 4).
        num_layers: layers (N2S: 3). ff_hidden: feed-forward width (N2S: 128).
        pe: encoding name, or a built :class:`~pyg_routing.models.pe.PositionalEncoding`.
        pe_dim: width of node codes (N2S's CPE: 128).
        num_bands: XPE bands. max_route_len: APE table size.
        compiled: :meth:`forward_dense` runs under ``torch.compile`` where nothing
            needs a gradient (:mod:`pyg_routing.models.compiled`; search only).
        pe_kwargs: extra arguments of the encoding's transform or module.

    Shapes: ``x [B, M, in_channels]``, ``pe [B, M, width]`` (node kinds but APE),
    ``route_pos [B, M]`` (APE, bias, RoPE), ``route_id [B, M]`` (SPD) -> ``[B, M, dim]``.
    """

    def __init__(self, in_channels: int = 2, dim: int = 128, heads: int = 4,
                 num_layers: int = 3, ff_hidden: int = 128,
                 pe: str | PositionalEncoding = "dact_cpe", pe_dim: int = 128,
                 num_bands: int = 4, max_route_len: int = 512, compiled: bool = False,
                 **pe_kwargs: Any) -> None:
        super().__init__()
        check_heads("N2SEncoder", dim, heads, num_layers=num_layers)
        self.in_channels, self.dim, self.heads = in_channels, dim, heads
        self.compiled = bool(compiled)
        self.positional = PositionalEncoding.build(pe, dim=dim, heads=heads, pe_dim=pe_dim,
                                                   num_bands=num_bands,
                                                   max_route_len=max_route_len, **pe_kwargs)
        self.pe, self.kind = self.positional.name, self.positional.kind
        self.pe_width = self.positional.width
        self.embed = nn.Linear(in_channels, dim, bias=False)
        self.pos_query = self.pos_key = None
        if self.pe_width:
            self.pos_query = nn.Linear(self.pe_width, dim, bias=False)
            self.pos_key = nn.Linear(self.pe_width, dim, bias=False)
        self.layers = nn.ModuleList(
            SynthesisAttentionLayer(dim, heads, ff_hidden, rotary=self.positional.rotary)
            for _ in range(num_layers))
        accept_legacy_keys(self)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.embed.reset_parameters()
        for mod in (self.pos_query, self.pos_key, self.positional, *self.layers):
            if mod is not None:
                mod.reset_parameters()

    def positional_scores(self, pe: Tensor | None, route_pos: Tensor | None,
                          route_id: Tensor | None,
                          open_routes: Tensor | None = None) -> Tensor | None:
        """``A_pos [B, H, M, M]`` of the encoding (``None``: no positional scores)."""
        if self.positional.reads_positions and route_pos is None:
            raise ValueError(f"encoding {self.pe!r} needs route_pos [B, M]")
        bias = self.positional.attention_bias(route_pos, route_id, open_routes=open_routes)
        if bias is not None:
            return bias
        g = self.positional.node_code(pe, route_pos, type(self).__name__)
        if g is None:
            return None
        b, m, _ = g.shape
        g = g.to(self.pos_query.weight.dtype)
        q = self.pos_query(g).view(b, m, self.heads, -1).transpose(1, 2)
        k = self.pos_key(g).view(b, m, self.heads, -1).transpose(1, 2)
        return q @ k.transpose(-1, -2)

    def forward_observation(self, obs: Any) -> Tensor:
        """:meth:`forward_dense` on an environment's observation (``x, route_pos,
        route_id`` and the route quantities or node code; duck-typed)."""
        dtype = self.embed.weight.dtype
        return self.forward_dense(obs.x.to(dtype), self.positional.observed_code(obs, dtype),
                                  obs.route_pos, obs.route_id,
                                  getattr(obs, "open_routes", None))

    def forward_dense(self, x: Tensor, pe: Tensor | None = None,
                      route_pos: Tensor | None = None,
                      route_id: Tensor | None = None,
                      open_routes: Tensor | None = None) -> Tensor:
        """The encoder on ``B`` instances of ``M`` nodes: ``[B, M, dim]``
        (``open_routes [B]``: instances whose routes are open, for SPD)."""
        if x.size(-1) != self.in_channels:
            raise ValueError(f"N2SEncoder(in_channels={self.in_channels}) got node features "
                             f"of width {x.size(-1)}")
        b, m, _ = x.shape
        # Search batches (no gradient) run in slices of instances (functional/chunks.py):
        # a slice's pair channels ([c, 2H, M^2]: 21 MB for the whole batch at PDP-101,
        # B = 64) stay in the cache and are never faulted; the same values, bit for bit.
        per_chunk = instances_per_chunk(4 * self.heads * m * m, chunk_budget(x.device))
        body = search_body(self, "_dense", x, pe)
        inputs = (x, pe, route_pos, route_id, open_routes)
        if b > per_chunk and not needs_grad(self, x, pe):
            return in_slices(body, inputs, per_chunk, x.new_empty(b, m, self.dim))
        return body(*inputs)

    def _dense(self, x: Tensor, pe: Tensor | None, route_pos: Tensor | None,
               route_id: Tensor | None, open_routes: Tensor | None) -> Tensor:
        """:meth:`forward_dense` after its checks, on the whole batch given."""
        pos_scores = self.positional_scores(pe, route_pos, route_id, open_routes)
        h = self.embed(x)
        position = route_pos if self.positional.rotary is not None else None
        for layer in self.layers:
            h = layer(h, pos_scores, position)
        return h

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(in_channels={self.in_channels}, dim={self.dim}, "
                f"heads={self.heads}, layers={len(self.layers)}, pe={self.pe!r}"
                f"{', compiled=True' if self.compiled else ''})")
