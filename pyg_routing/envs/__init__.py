"""Improvement environments behind one seam, and the search that drives them.

* :class:`ImprovementEnv` (:mod:`.base`): the protocol every environment follows;
  :class:`Observation`, the dense input of an encoder.
* :class:`TwoOptEnv` (:mod:`.two_opt`): DACT's 2-opt moves for TSP, CVRP, VRPTW, PDTSP.
* :class:`PairReinsertionEnv` (:mod:`.pair_reinsertion`): N2S's pair removal and
  reinsertion for PDTSP.
* :func:`improve` (:mod:`.search`): batched search with any environment, policy and
  acceptance rule (:mod:`.acceptance`), best-so-far tracking and augmentation.
"""

from pyg_routing.envs.acceptance import (
    Acceptance,
    AlwaysAccept,
    ImprovementOnly,
    SimulatedAnnealing,
)
from pyg_routing.envs.augment import SYMMETRIES, augment_positions
from pyg_routing.envs.base import BatchedState, ImprovementEnv, Observation
from pyg_routing.envs.pair_reinsertion import (
    PairObservation,
    PairReinsertionEnv,
    PairReinsertionState,
)
from pyg_routing.envs.search import ImproveResult, improve
from pyg_routing.envs.two_opt import TwoOptEnv, TwoOptState

__all__ = ["SYMMETRIES", "Acceptance", "AlwaysAccept", "BatchedState", "ImproveResult",
           "ImprovementEnv", "ImprovementOnly", "Observation", "PairObservation",
           "PairReinsertionEnv", "PairReinsertionState", "SimulatedAnnealing",
           "TwoOptEnv", "TwoOptState", "augment_positions", "improve"]
