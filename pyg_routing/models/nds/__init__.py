"""NDS's removal policy: its encoder (Transformer, tour and neighbour layers), its
autoregressive decoder over latent-conditioned rollouts (:class:`NDSPolicy`)."""

from pyg_routing.models.nds.decoder import NDSDecoder, sample_z
from pyg_routing.models.nds.encoder import NDSEncoder
from pyg_routing.models.nds.policy import NDSPolicy

__all__ = ["NDSDecoder", "NDSEncoder", "NDSPolicy", "sample_z"]
