"""The positional pieces an encoder needs for one named encoding, built in one place
for every backbone's encoder (GPS for DACT, Synthesis Attention for N2S)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import nn

from pyg_routing import encodings
from pyg_routing.models.pe.ape import AbsolutePE
from pyg_routing.models.pe.base import AttentionBias
from pyg_routing.models.pe.rope import RotaryPE
from pyg_routing.transforms import NodeEncoding


@dataclass
class EncodingParts:
    """What an encoder holds for its encoding; at most one part is set.

    Attributes:
        name: the encoding's registry name. kind: ``node``, ``bias``, ``rotary``,
            ``none`` (APE is a ``node`` kind with a learnable table).
        node_pe: the fixed node encoding (a :class:`NodeEncoding` transform).
        ape: APE's learnable table on the within-route position.
        bias: the attention-bias module (``[B, heads, M, M]``).
        rotary: RoPE on queries and keys of ``dim // heads`` channels.
        width: channels of the node code (``node_pe`` or ``ape``; 0 otherwise).
    """

    name: str
    kind: str
    node_pe: NodeEncoding | None = None
    ape: AbsolutePE | None = None
    bias: AttentionBias | None = None
    rotary: RotaryPE | None = None
    width: int = 0

    def modules(self) -> list[nn.Module]:
        """The learnable parts (to register on the encoder)."""
        return [m for m in (self.ape, self.bias) if m is not None]


def build_encoding(pe: str, *, dim: int, heads: int, pe_dim: int, num_bands: int,
                   max_route_len: int = 512, **pe_kwargs: Any) -> EncodingParts:
    """The parts of encoding ``pe`` for an encoder of width ``dim`` with ``heads``
    attention heads: node codes of width ``pe_dim`` (IPE+XPE adds ``2 * num_bands``),
    an APE table of ``max_route_len`` rows, a bias with one channel per head, RoPE on
    heads of ``dim // heads`` channels. ``pe_kwargs`` go to the transform or module."""
    spec = encodings.info(pe)
    parts = EncodingParts(spec.name, spec.kind)
    if spec.name == "ape":
        parts.ape = encodings.module("ape", dim=pe_dim, max_len=max_route_len, **pe_kwargs)
        parts.width = pe_dim
    elif spec.kind == "node":
        parts.node_pe = encodings.node_transform(spec.name, dim=pe_dim, num_bands=num_bands,
                                                 attr_name=None, **pe_kwargs)
        parts.width = parts.node_pe.width
    elif spec.kind == "bias":
        parts.bias = encodings.module(spec.name, num_heads=heads, **pe_kwargs)
    elif spec.kind == "rotary":
        parts.rotary = encodings.module("rope", dim=dim, num_heads=heads, **pe_kwargs)
    return parts
