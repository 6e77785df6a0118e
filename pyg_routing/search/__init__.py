"""Search, the fourth seam beside environments, policies and the trainer.

* :class:`Search` (:mod:`.base`): ``run(instances, policy, stop, seed) -> SearchResult``.
* :class:`StepSearch` (:mod:`.step`): step-by-step improvement with any step environment
  and acceptance rule (:mod:`.acceptance`) — DACT's and N2S's search; :func:`improve`
  is the same in one call.
* :class:`DestroyRepairSearch` (:mod:`.destroy_repair`): NDS's augmented simulated
  annealing with any destroy provider or a learned removal policy.
* Budgets as stopping criteria (:mod:`.stop`): :class:`MaxIterations`,
  :class:`MaxRuntime`, :class:`FirstOf`, :class:`WhenRequested`.
* One temperature schedule (:class:`TemperatureSchedule`), one result
  (:class:`SearchResult`), one gap rule (:func:`gap_percent`).
"""

from pyg_routing.search.acceptance import (
    Acceptance,
    AlwaysAccept,
    ImprovementOnly,
    SimulatedAnnealing,
)
from pyg_routing.search.base import Search
from pyg_routing.search.destroy_repair import DestroyRepairSearch, sync_slots
from pyg_routing.search.result import SearchResult, gap_percent, instance_gap_percent
from pyg_routing.search.schedule import TemperatureSchedule
from pyg_routing.search.step import StepSearch, improve
from pyg_routing.search.stop import (
    FirstOf,
    MaxIterations,
    MaxRuntime,
    StoppingCriterion,
    WhenRequested,
    budget,
    check_stop,
)

__all__ = ["Acceptance", "AlwaysAccept", "DestroyRepairSearch", "FirstOf", "ImprovementOnly",
           "MaxIterations", "MaxRuntime", "Search", "SearchResult", "SimulatedAnnealing",
           "StepSearch", "StoppingCriterion", "TemperatureSchedule", "WhenRequested", "budget",
           "check_stop", "gap_percent", "improve", "instance_gap_percent", "sync_slots"]
