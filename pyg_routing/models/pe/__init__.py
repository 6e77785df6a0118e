"""Positional encodings as modules (paper App. E), and the one module an encoder holds.

:class:`PositionalEncoding`: one encoding's parts, built once from its name
(:meth:`PositionalEncoding.build`) and injected into any of the three encoders.

Node codes (``[N, D]``): :class:`AbsolutePE`, :class:`DACTCyclicPE`.
Rotary (queries/keys): :class:`RotaryPE`.
Attention biases (``[B, H, N, N]``): :class:`RelativePositionBias`,
:class:`ALiBiBias`, :class:`ShortestPathBias` (all :class:`AttentionBias`).
"""

from pyg_routing.models.pe.alibi import ALiBiBias
from pyg_routing.models.pe.ape import AbsolutePE
from pyg_routing.models.pe.base import AttentionBias
from pyg_routing.models.pe.dact_cpe import DACTCyclicPE
from pyg_routing.models.pe.positional import PositionalEncoding, encoding_module
from pyg_routing.models.pe.rope import RotaryPE
from pyg_routing.models.pe.rpe import RelativePositionBias
from pyg_routing.models.pe.spd import ShortestPathBias

__all__ = [
    "ALiBiBias",
    "AbsolutePE",
    "AttentionBias",
    "DACTCyclicPE",
    "PositionalEncoding",
    "RelativePositionBias",
    "RotaryPE",
    "ShortestPathBias",
    "encoding_module",
]
