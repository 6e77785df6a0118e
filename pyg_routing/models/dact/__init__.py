"""DACT's policy: the shared GPS encoder, the pair decoder over every 2-opt move, the
critic (:class:`DACTPolicy`)."""

from pyg_routing.models.dact.pair_decoder import PairDecoder, ValueHead
from pyg_routing.models.dact.policy import DACTPolicy

__all__ = ["DACTPolicy", "PairDecoder", "ValueHead"]
