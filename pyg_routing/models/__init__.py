"""Encoders, positional-encoding modules and improvement policies."""

from pyg_routing.models.attention import RouteAttention
from pyg_routing.models.dact_policy import DACTPolicy
from pyg_routing.models.gps_encoder import GPSEncoder
from pyg_routing.models.gps_layer import GPSLayer
from pyg_routing.models.pair_decoder import PairDecoder, ValueHead
from pyg_routing.models.pe import (
    AbsolutePE,
    ALiBiBias,
    AttentionBias,
    DACTCyclicPE,
    RelativePositionBias,
    RotaryPE,
    ShortestPathBias,
)
from pyg_routing.models.policy import ImprovementPolicy

__all__ = ["ALiBiBias", "AbsolutePE", "AttentionBias", "DACTCyclicPE", "DACTPolicy", "GPSEncoder",
           "GPSLayer", "ImprovementPolicy", "PairDecoder", "RelativePositionBias", "RotaryPE",
           "RouteAttention", "ShortestPathBias", "ValueHead"]
