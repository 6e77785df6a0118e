"""Improvement environments behind one seam, and the search that drives them.

* :class:`ImprovementEnv` (:mod:`.base`): the protocol every environment follows;
  :class:`Observation`, the dense input of an encoder.
* :class:`TwoOptEnv` (:mod:`.two_opt`): DACT's 2-opt moves for TSP, CVRP, VRPTW, PDTSP.
* :class:`PairReinsertionEnv` (:mod:`.pair_reinsertion`): N2S's pair removal and
  reinsertion for PDTSP.
The searches that drive them are the next seam up, :mod:`pyg_routing.search`.
"""

from pyg_routing.envs.augment import SYMMETRIES, augment_positions
from pyg_routing.envs.base import BatchedState, ImprovementEnv, Observation
from pyg_routing.envs.pair_reinsertion import (
    PairObservation,
    PairReinsertionEnv,
    PairReinsertionState,
)
from pyg_routing.envs.two_opt import TwoOptEnv, TwoOptState

__all__ = ["SYMMETRIES", "BatchedState", "ImprovementEnv", "Observation", "PairObservation",
           "PairReinsertionEnv", "PairReinsertionState", "TwoOptEnv", "TwoOptState",
           "augment_positions"]
