"""N2S's pair removal-reinsertion environment for PDTSP (:class:`PairReinsertionEnv`)."""

from pyg_routing.envs.pair_reinsertion.env import INITS, PairReinsertionEnv
from pyg_routing.envs.pair_reinsertion.observation import PairObservation, observe
from pyg_routing.envs.pair_reinsertion.state import RECENT, PairReinsertionState

__all__ = ["INITS", "RECENT", "PairObservation", "PairReinsertionEnv", "PairReinsertionState",
           "observe"]
