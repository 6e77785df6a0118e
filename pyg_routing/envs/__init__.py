"""Improvement environments behind one seam, and what their policies observe.

* :class:`ImprovementEnv` (:mod:`.base`): the protocol of the step environments;
  :class:`Observation`, the dense input of an encoder.
* :class:`TwoOptEnv` (:mod:`.two_opt`): DACT's 2-opt moves for TSP, CVRP, VRPTW, PDTSP.
* :class:`PairReinsertionEnv` (:mod:`.pair_reinsertion`): N2S's pair removal and
  reinsertion for PDTSP.
* :class:`DeconstructionEnv` (:mod:`.deconstruction`): NDS's destroy-and-repair
  rounds for CVRP, VRPTW, PCVRP.
* :mod:`.observation`: the one builder of the route quantities node encodings read.
The searches that drive them are the next seam up, :mod:`pyg_routing.search`.
"""

from pyg_routing.envs.augment import SYMMETRIES, augment_positions
from pyg_routing.envs.base import (
    BatchedState,
    ImprovementEnv,
    Observation,
    RoutingEnv,
    UnsupportedProblemError,
)
from pyg_routing.envs.deconstruction import DeconstructionEnv, NDSObservation, ToursState
from pyg_routing.envs.observation import (
    encoding_inputs,
    tour_encoding_inputs,
    tour_route_quantities,
)
from pyg_routing.envs.pair_reinsertion import (
    PairObservation,
    PairReinsertionEnv,
    PairReinsertionState,
)
from pyg_routing.envs.two_opt import TwoOptEnv, TwoOptState

__all__ = ["SYMMETRIES", "BatchedState", "DeconstructionEnv", "ImprovementEnv", "NDSObservation",
           "Observation", "PairObservation", "PairReinsertionEnv", "PairReinsertionState",
           "RoutingEnv", "ToursState", "TwoOptEnv", "TwoOptState", "UnsupportedProblemError",
           "augment_positions", "encoding_inputs", "tour_encoding_inputs",
           "tour_route_quantities"]
