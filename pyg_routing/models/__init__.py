"""Encoders, positional-encoding modules and (later) improvement backbones."""

from pyg_routing.models.pe import (
    AbsolutePE,
    ALiBiBias,
    AttentionBias,
    DACTCyclicPE,
    RelativePositionBias,
    RotaryPE,
    ShortestPathBias,
)

__all__ = ["ALiBiBias", "AbsolutePE", "AttentionBias", "DACTCyclicPE",
           "RelativePositionBias", "RotaryPE", "ShortestPathBias"]
