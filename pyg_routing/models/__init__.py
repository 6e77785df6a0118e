"""Encoders, positional encodings and policies: the shared parts beside one subpackage
per backbone.

Shared: :class:`GPSEncoder` (the GraphGPS-style encoder of DACT, and of N2S and NDS
with ``encoder="gps"``), :mod:`.pe` (:class:`~.pe.PositionalEncoding`, the one module
an encoder holds for its encoding), :mod:`.policy` (the policy seam), attention and
sampling. Per backbone: :mod:`.dact`, :mod:`.n2s`, :mod:`.nds`.
"""

from pyg_routing.models.attention import RouteAttention
from pyg_routing.models.dact import DACTPolicy, PairDecoder, ValueHead
from pyg_routing.models.gps_encoder import GPSEncoder
from pyg_routing.models.gps_layer import GPSLayer
from pyg_routing.models.n2s import (
    N2SCritic,
    N2SEncoder,
    N2SPolicy,
    ReinsertionDecoder,
    RemovalDecoder,
    SynthesisAttentionLayer,
)
from pyg_routing.models.nds import NDSDecoder, NDSEncoder, NDSPolicy, sample_z
from pyg_routing.models.pe import (
    AbsolutePE,
    ALiBiBias,
    AttentionBias,
    DACTCyclicPE,
    PositionalEncoding,
    RelativePositionBias,
    RotaryPE,
    ShortestPathBias,
)
from pyg_routing.models.policy import ImprovementPolicy, RoutingPolicy

__all__ = ["ALiBiBias", "AbsolutePE", "AttentionBias", "DACTCyclicPE", "DACTPolicy", "GPSEncoder",
           "GPSLayer", "ImprovementPolicy", "N2SCritic", "N2SEncoder", "N2SPolicy", "NDSDecoder",
           "NDSEncoder", "NDSPolicy", "PairDecoder", "PositionalEncoding", "ReinsertionDecoder",
           "RelativePositionBias", "RemovalDecoder", "RotaryPE", "RouteAttention",
           "RoutingPolicy", "ShortestPathBias", "SynthesisAttentionLayer", "ValueHead",
           "sample_z"]
