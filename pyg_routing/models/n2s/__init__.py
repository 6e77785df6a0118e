"""N2S's policy: Synthesis Attention encoder, removal and reinsertion decoders, critic
(:class:`N2SPolicy`)."""

from pyg_routing.models.n2s.critic import N2SCritic
from pyg_routing.models.n2s.decoders import ReinsertionDecoder, RemovalDecoder
from pyg_routing.models.n2s.encoder import N2SEncoder
from pyg_routing.models.n2s.policy import N2SPolicy
from pyg_routing.models.n2s.synthesis_attention import SynthesisAttentionLayer

__all__ = ["N2SCritic", "N2SEncoder", "N2SPolicy", "ReinsertionDecoder", "RemovalDecoder",
           "SynthesisAttentionLayer"]
