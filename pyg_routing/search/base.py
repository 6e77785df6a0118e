"""The search seam: one method, ``run(instances, policy, stop, seed) -> SearchResult``.

A backbone names its search (a :class:`~pyg_routing.search.StepSearch` over its step
environment, or the :class:`~pyg_routing.search.DestroyRepairSearch`); training
validates with it, and the commands test with it, a trained policy or one of the
backbone's non-learned baselines in the ``policy`` slot. As in PyVRP's
``SearchMethod``, the loop around it is the caller's and the budget is a stopping
criterion object (:mod:`.stop`).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.search.result import SearchResult
from pyg_routing.search.stop import StoppingCriterion


@runtime_checkable
class Search(Protocol):
    """Improve ``instances`` with ``policy`` until ``stop``; every draw seeded by ``seed``."""

    def run(self, instances: RoutingInstances, policy: Any, stop: StoppingCriterion,
            seed: int | None = None) -> SearchResult: ...
