"""DACT's own encoder: the dual-aspect collaborative Transformer (Ma et al., NeurIPS 2021;
yining043/VRP-DACT, ``nets/graph_layers.py``), with any of the library's encodings in
its positional aspect.

DACT keeps two embeddings per node through the encoder: the node aspect ``h`` (the node
features, embedded by a bias-free linear map) and the positional aspect ``g`` (its
cyclic positional encoding, CPE). Each :class:`DualAspectLayer` attends in both aspects
with their own queries and keys, and lets each aspect read the values of the other
through the other's attention (DAC-Att), then runs a feed-forward block per aspect;
every sub-layer adds its input and normalises per instance (:func:`instance_norm`).

Where an encoding enters (docs/design.md, "DACT's native encoder"): the paper's
encodings replace DACT's CPE, which feeds the positional aspect only.

* node codes (DACT's CPE, IPE+XPE, SIN, Laplacian PE, ..., APE's table): ``g⁰`` is the
  code, as DACT feeds its CPE when the code has the model's width, else the code
  through a bias-free linear map (the paper's shared projection of a node code);
* attention biases (RPE, ALiBi, SPD): added to the positional aspect's logits in every
  layer (``g⁰ = 0``, so the positional attention is the bias's);
* RoPE: rotates the node aspect's queries and keys in every layer (``g⁰ = 0``): a
  rotation needs a content query, and without a code the positional aspect has none;
* none: ``g⁰ = 0`` (DACT without its CPE).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pyg_routing.functional.chunks import (
    chunk_budget,
    in_slices,
    instances_per_chunk,
    needs_grad,
)
from pyg_routing.models.attention import instance_norm
from pyg_routing.models.compiled import search_body
from pyg_routing.models.gps_encoder import check_heads
from pyg_routing.models.inplace import InplaceReLU
from pyg_routing.models.pe.positional import PositionalEncoding
from pyg_routing.models.pe.rope import RotaryPE


def uniform_(param: Tensor) -> None:
    """DACT's init of its raw weight tensors: ``U(±1 / sqrt(size(-1)))``."""
    bound = 1.0 / math.sqrt(param.size(-1))
    nn.init.uniform_(param, -bound, bound)


def per_head(x: Tensor, weight: Tensor) -> Tensor:
    """``x [..., B, M, D]`` through per-head weights ``[..., H, D, e]``: ``[..., B, H, M, e]``."""
    return torch.einsum("...bmd,...hde->...bhme", x, weight)


class DualAspectLayer(nn.Module):
    r"""One DACT encoder layer (DAC-Att, then a feed-forward block per aspect).

    Per aspect ``a`` (node, positional) and head: ``A_a = softmax(q_a k_aᵀ / sqrt(d))``;
    each aspect's values come in two sets of ``H`` heads, the first read through the
    node attention, the second through the positional one, and are projected back by
    the aspect's output map: ``h' = [A_h V_h¹ ‖ A_g V_h²] W_h^O``, ``g' = [A_h V_g¹ ‖ A_g
    V_g²] W_g^O``. Then ``h = norm(h + h')``, ``h = norm(h + FF_h(h))`` (and so ``g``).

    Parameters are stacked per aspect (index 0 node, 1 positional) in DACT's per-head
    layout: ``query, key [2, H, D, d]``, ``value [2, 2H, D, d]``, ``out [2, H, 2d, D]``
    (``d = D / H``).

    Args:
        dim: model width ``D``. heads: ``H``. ff_hidden: feed-forward width (DACT: 64).
        rotary: RoPE applied to the node aspect's queries and keys (``None``: none).

    Shapes: ``h, g [B, M, D]``, ``bias [B, H, M, M]`` (added to the positional logits) or
    ``None``, ``position [B, M]`` (RoPE) -> ``(h, g)``.
    """

    def __init__(self, dim: int, heads: int = 4, ff_hidden: int = 64,
                 rotary: RotaryPE | None = None) -> None:
        super().__init__()
        check_heads("DualAspectLayer", dim, heads)
        d = dim // heads
        self.dim, self.heads = dim, heads
        self.query = nn.Parameter(torch.empty(2, heads, dim, d))
        self.key = nn.Parameter(torch.empty(2, heads, dim, d))
        self.value = nn.Parameter(torch.empty(2, 2 * heads, dim, d))
        self.out = nn.Parameter(torch.empty(2, heads, 2 * d, dim))
        self.ff = nn.ModuleList(nn.Sequential(nn.Linear(dim, ff_hidden), InplaceReLU(),
                                              nn.Linear(ff_hidden, dim)) for _ in range(2))
        self.rotary = rotary
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for param in (self.query, self.key, self.value, self.out):
            uniform_(param)
        for block in self.ff:
            for mod in block:
                if isinstance(mod, nn.Linear):
                    mod.reset_parameters()

    def forward(self, h: Tensor, g: Tensor, bias: Tensor | None = None,
                position: Tensor | None = None) -> tuple[Tensor, Tensor]:
        b, m, _ = h.shape
        hh = self.heads
        x = torch.stack([h, g])                                        # [2, B, M, D]
        q, k = per_head(x, self.query), per_head(x, self.key)          # [2, B, H, M, d]
        if self.rotary is not None:
            if position is None:
                raise ValueError("RoPE in DACT's encoder needs the tour positions")
            qn, kn = self.rotary(q[0], k[0], position)
            q, k = torch.stack([qn, q[1]]), torch.stack([kn, k[1]])
        v = per_head(x, self.value).view(2, b, 2, hh, m, -1)           # [2, B, 2, H, M, d]
        # Aspect a's value set s is read through the attention of aspect s. PyTorch's
        # fused kernel never stores the [B, H, M, M] weights (213 MB per aspect at
        # CVRP-100, B = 512, several passes each): softmax(q kᵀ / sqrt(d) + bias) v as
        # the explicit form, up to float rounding. One call per (aspect, set): the CPU's
        # flash kernel needs values as wide as the keys (wider ones fall back to the
        # explicit form), and its scores cost little beside the weights' memory passes.
        # unbind, not indexing: the backward then stacks the parts' gradients once
        # instead of zero-filling a whole-size gradient per index
        masks = [None, None if bias is None else bias.to(q.dtype)]
        qs, ks = q.unbind(0), k.unbind(0)
        vs = [va.unbind(1) for va in v.unbind(0)]                      # [a][s]: [B, H, M, d]
        heads = torch.stack([torch.cat([F.scaled_dot_product_attention(
            qs[s], ks[s], vs[a][s], attn_mask=masks[s]) for s in range(2)], -1)
            for a in range(2)])                                        # [2, B, H, M, 2d]
        out = torch.einsum("abhme,ahef->abmf", heads, self.out)        # [2, B, M, D]
        h, g = instance_norm(h + out[0]), instance_norm(g + out[1])
        return instance_norm(h + self.ff[0](h)), instance_norm(g + self.ff[1](g))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, heads={self.heads}, "
                f"rotary={self.rotary is not None})")


class DualAspectEncoder(nn.Module):
    r"""DACT's encoder: ``h⁰ = x W`` (no bias), ``g⁰`` from the encoding ``pe`` (see the
    module docstring), ``num_layers`` :class:`DualAspectLayer`\ s. The output is both
    aspects side by side, ``[h ‖ g]`` (``[B, M, 2 dim]``), which DACT's decoder and
    critic read.

    Args:
        in_channels: node-feature width (the 2-opt environment's).
        dim: width of each aspect (DACT: 64). heads: attention heads (DACT: 4).
        num_layers: layers (DACT: 3). ff_hidden: feed-forward width (DACT: 64).
        pe: encoding name, or a built :class:`~pyg_routing.models.pe.PositionalEncoding`.
        pe_dim: width of node codes (DACT's CPE: ``dim``).
        num_bands: XPE bands. max_route_len: APE table size.
        compiled: :meth:`forward_dense` runs under ``torch.compile`` where nothing
            needs a gradient (:mod:`pyg_routing.models.compiled`; search only).
        pe_kwargs: extra arguments of the encoding's transform or module.

    Shapes: ``x [B, M, in_channels]``, ``pe [B, M, width]`` (node kinds but APE),
    ``route_pos [B, M]`` (APE, bias, RoPE), ``route_id [B, M]`` (SPD) -> ``[B, M, 2 dim]``.
    """

    def __init__(self, in_channels: int, dim: int = 64, heads: int = 4, num_layers: int = 3,
                 ff_hidden: int = 64, pe: str | PositionalEncoding = "dact_cpe",
                 pe_dim: int = 64, num_bands: int = 4, max_route_len: int = 512,
                 compiled: bool = False, **pe_kwargs: Any) -> None:
        super().__init__()
        check_heads("DualAspectEncoder", dim, heads, num_layers=num_layers)
        self.in_channels, self.dim, self.heads = in_channels, dim, heads
        self.compiled = bool(compiled)
        self.positional = PositionalEncoding.build(pe, dim=dim, heads=heads, pe_dim=pe_dim,
                                                   num_bands=num_bands,
                                                   max_route_len=max_route_len, **pe_kwargs)
        self.pe, self.kind = self.positional.name, self.positional.kind
        width = self.positional.width
        self.embed = nn.Linear(in_channels, dim, bias=False)
        # a code of another width than the aspect's is projected (DACT's CPE is not)
        self.pos_embed = nn.Linear(width, dim, bias=False) if width not in (0, dim) else None
        self.layers = nn.ModuleList(
            DualAspectLayer(dim, heads, ff_hidden, rotary=self.positional.rotary)
            for _ in range(num_layers))
        self.reset_parameters()

    @property
    def out_dim(self) -> int:
        """Width of the output ``[h ‖ g]``."""
        return 2 * self.dim

    def reset_parameters(self) -> None:
        self.embed.reset_parameters()
        for mod in (self.pos_embed, self.positional, *self.layers):
            if mod is not None:
                mod.reset_parameters()

    def positional_input(self, x: Tensor, pe: Tensor | None, route_pos: Tensor | None
                         ) -> Tensor:
        """``g⁰ [B, M, dim]``: the node code (projected to ``dim`` if needed) or zeros."""
        if self.positional.reads_positions and route_pos is None:
            raise ValueError(f"encoding {self.pe!r} needs route_pos [B, M]")
        code = self.positional.node_code(pe, route_pos, type(self).__name__)
        if code is None:
            return x.new_zeros(*x.shape[:2], self.dim)
        code = code.to(self.embed.weight.dtype)
        return code if self.pos_embed is None else self.pos_embed(code)

    def forward_observation(self, obs: Any) -> Tensor:
        """:meth:`forward_dense` on an environment's observation (duck-typed)."""
        dtype = self.embed.weight.dtype
        return self.forward_dense(obs.x.to(dtype), self.positional.observed_code(obs, dtype),
                                  obs.route_pos, obs.route_id,
                                  getattr(obs, "open_routes", None))

    def forward_dense(self, x: Tensor, pe: Tensor | None = None,
                      route_pos: Tensor | None = None, route_id: Tensor | None = None,
                      open_routes: Tensor | None = None) -> Tensor:
        """The encoder on ``B`` instances of ``M`` nodes: ``[B, M, 2 dim]``."""
        if x.size(-1) != self.in_channels:
            raise ValueError(f"DualAspectEncoder(in_channels={self.in_channels}) got node "
                             f"features of width {x.size(-1)}")
        b, m, _ = x.shape
        body = search_body(self, "_dense", x, pe)
        inputs = (x, pe, route_pos, route_id, open_routes)
        # Search batches (no gradient) run in slices of instances (functional/chunks.py):
        # a slice's activations (about 16 dim floats per node: the stacked aspects, the
        # per-head queries, keys and values, the heads' outputs) stay in the cache and
        # are never faulted. Every operation is per instance: the same values.
        per_chunk = instances_per_chunk(16 * m * self.dim, chunk_budget(x.device))
        if b > per_chunk and not needs_grad(self, x, pe):
            return in_slices(body, inputs, per_chunk, x.new_empty(b, m, 2 * self.dim))
        return body(*inputs)

    def _dense(self, x: Tensor, pe: Tensor | None, route_pos: Tensor | None,
               route_id: Tensor | None, open_routes: Tensor | None) -> Tensor:
        """:meth:`forward_dense` after its check."""
        g = self.positional_input(x, pe, route_pos)
        bias = self.positional.attention_bias(route_pos, route_id, open_routes=open_routes)
        position = route_pos if self.positional.rotary is not None else None
        h = self.embed(x)
        for layer in self.layers:
            h, g = layer(h, g, bias, position)
        return torch.cat([h, g], -1)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(in_channels={self.in_channels}, dim={self.dim}, "
                f"heads={self.heads}, layers={len(self.layers)}, pe={self.pe!r}"
                f"{', compiled=True' if self.compiled else ''})")
