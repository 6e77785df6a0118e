"""Encoders, positional-encoding modules and improvement policies."""

from pyg_routing.models.attention import RouteAttention
from pyg_routing.models.dact_policy import DACTPolicy
from pyg_routing.models.gps_encoder import GPSEncoder
from pyg_routing.models.gps_layer import GPSLayer
from pyg_routing.models.n2s_critic import N2SCritic
from pyg_routing.models.n2s_decoders import ReinsertionDecoder, RemovalDecoder
from pyg_routing.models.n2s_encoder import N2SEncoder
from pyg_routing.models.n2s_policy import N2SPolicy
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
from pyg_routing.models.synthesis_attention import SynthesisAttentionLayer

__all__ = ["ALiBiBias", "AbsolutePE", "AttentionBias", "DACTCyclicPE", "DACTPolicy", "GPSEncoder",
           "GPSLayer", "ImprovementPolicy", "N2SCritic", "N2SEncoder", "N2SPolicy", "PairDecoder",
           "ReinsertionDecoder", "RelativePositionBias", "RemovalDecoder", "RotaryPE",
           "SynthesisAttentionLayer",
           "RouteAttention", "ShortestPathBias", "ValueHead"]

from pyg_routing.models.nds_decoder import NDSDecoder, sample_z  # noqa: E402
from pyg_routing.models.nds_encoder import NDSEncoder  # noqa: E402
from pyg_routing.models.nds_policy import NDSPolicy  # noqa: E402

__all__ += ["NDSDecoder", "NDSEncoder", "NDSPolicy", "sample_z"]
