"""The destroy-and-repair search: NDS's augmented simulated annealing (Hottung et al.
2025, ``search_sa.py``), with any destroy provider or a learned removal policy.

Per instance, ``augment`` solution slots (NDS: the 8 dihedral augmentations; their
distance matrices are identical, so for a non-learned destroy they are 8 independent
annealing chains that share their best solutions) each start from NDS's start
solution (:func:`.start.start_solutions`). Then, until the time limit:

1. the destroy provider proposes ``rollouts`` removal sets per slot for the current
   solutions;
2. every slot applies its sets IN SEQUENCE (:func:`.repair.apply_sets_sa`: best of
   ``recreate_n`` greedy repairs, Metropolis acceptance at temperature ``T``); each
   slot's best solution is kept exactly (snapshot on every strict improvement);
3. sync: every slot whose current cost exceeds its instance's minimum plus
   ``sync_delta * T`` takes a copy of a random slot of the same instance below that
   threshold;
4. ``T`` follows the shared :class:`~pyg_routing.search.schedule.TemperatureSchedule`
   over the criterion's progress: wall-clock time under :class:`MaxRuntime` (NDS),
   iterations under :class:`MaxIterations`.

The time of building the distance matrices and the start solutions counts against
the budget, as in NDS. The temperatures are absolute (normalised-cost units, NDS's
``T_0 = 0.1``, ``T_f = 0.001``): coordinates must be in NDS's scale (unit square;
CVRPLib X divided by 1000).

Everything per iteration is a fixed number of numpy operations and two compiled
kernels (destroy, repair) running slots in parallel: no Python loop over
instances, slots, sets or customers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.type_checks import not_a_batch
from pyg_routing.envs.deconstruction._validate import as_generator
from pyg_routing.envs.deconstruction.depots import data_solutions
from pyg_routing.envs.deconstruction.destroy import DestroyProvider, check_destroy
from pyg_routing.envs.deconstruction.problem import ProblemArrays, check_arrays_of
from pyg_routing.envs.deconstruction.repair import apply_sets_sa
from pyg_routing.envs.deconstruction.start import start_solutions
from pyg_routing.envs.deconstruction.state import ToursState
from pyg_routing.search.result import SearchResult
from pyg_routing.search.schedule import TemperatureSchedule
from pyg_routing.search.stop import StoppingCriterion, check_stop


def _count(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


@dataclass(frozen=True)
class DestroyRepairSearch:
    """NDS's search settings (``configs/eval/*.yaml``; defaults as there).

    Attributes:
        augment: solution slots per instance (NDS: 8; 128 for PCVRP).
        rollouts: removal sets per slot and iteration (NDS: 200).
        recreate_n: greedy repairs per set, the best kept (NDS: 5).
        schedule: the temperatures (NDS: 0.1 -> 0.001); zeros: improvements only
            (NDS's validation and training warm-up).
        sync_delta: slots above ``min + sync_delta * T`` are replaced (NDS: 15).
        remove: customers per removal set of a learned policy (NDS: 15); a destroy
            provider given to :meth:`run` keeps its own size.
    """

    augment: int = 8
    rollouts: int = 200
    recreate_n: int = 5
    schedule: TemperatureSchedule = TemperatureSchedule()
    sync_delta: float = 15.0
    remove: int = 15

    def __post_init__(self) -> None:
        for name in ("augment", "rollouts", "recreate_n", "remove"):
            _count(name, getattr(self, name))
        if not isinstance(self.schedule, TemperatureSchedule):
            raise TypeError(f"schedule must be a TemperatureSchedule, got "
                            f"{type(self.schedule).__name__}")
        d = self.sync_delta
        if isinstance(d, bool) or not isinstance(d, int | float) or not np.isfinite(d) or d < 0:
            raise ValueError(f"sync_delta must be a finite number >= 0, got {d!r}")

    def destroy_of(self, policy: Any, instances: RoutingInstances) -> DestroyProvider:
        """The removal-set provider of ``policy``: a :class:`DestroyProvider` as it is,
        a learned removal policy (an NDS policy) wrapped in
        :class:`~pyg_routing.envs.deconstruction.PolicyDestroy` for ``instances``; a
        provider's name (``"sisr"``), its class or anything else is a ``TypeError``
        saying what to pass."""
        if isinstance(policy, torch.nn.Module) and not isinstance(policy, DestroyProvider):
            from pyg_routing.envs.deconstruction.policy_destroy import PolicyDestroy

            return PolicyDestroy(policy, instances, k=self.remove)
        return check_destroy(policy, "the destroy-and-repair search",
                             " or a learned removal policy (an NDS policy)")

    def run(self, instances: RoutingInstances, policy: Any, stop: StoppingCriterion,
            seed: int | None = None, *, arrays: ProblemArrays | None = None,
            callback: Callable[[int, float, np.ndarray], None] | None = None
            ) -> SearchResult:
        """Search ``B`` instances (see the module docstring).

        Args:
            instances: CVRP, VRPTW or PCVRP instances (validated), coordinates in
                NDS's scale.
            policy: the removal sets' source: a destroy provider (random, SISR) or a
                learned removal policy (:meth:`destroy_of`).
            stop: the budget (:mod:`.stop`); its progress drives the temperature.
            seed: seeds every random draw (start solutions, sets, repairs, sync).
            arrays: the instances' :class:`ProblemArrays`, if already built.
            callback: called after every iteration with ``(iteration, seconds, best
                cost per instance)`` (e.g. a progress bar).

        Returns:
            :class:`SearchResult`; ``cost`` and ``initial_cost`` are ``float64``.

        Raises:
            TypeError: ``instances`` not a ``RoutingInstances`` batch (one ``RoutingData``
                is told how to make one), ``policy`` neither a destroy provider object
                nor a removal policy, ``seed`` not an integer >= 0 or None, ``arrays``
                not :class:`ProblemArrays`, ``callback`` not callable.
            InvalidInstanceError: malformed instances, or ``arrays`` of other instances.
        """
        t0 = time.perf_counter()
        check_stop(stop)
        if not isinstance(instances, RoutingInstances):
            raise not_a_batch(instances, "DestroyRepairSearch.run")
        rng = as_generator(seed, "seed")
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable (iteration, seconds, best), got "
                            f"{type(callback).__name__}")
        if arrays is not None:
            check_arrays_of(arrays, instances, "DestroyRepairSearch.run")
        destroy = self.destroy_of(policy, instances)
        if arrays is None:
            instances.check()
            arrays = ProblemArrays.from_instances(instances)
        b, a = arrays.num_instances, self.augment
        state = start_solutions(arrays, np.repeat(np.arange(b, dtype=np.int32), a), rng=rng)
        best = state.clone()
        start_cost = best.cost.reshape(b, a).min(1)
        start_seconds = time.perf_counter() - t0
        iterations, applied, accepted = 0, 0, 0
        trace: list[tuple[float, float]] = []
        while True:
            elapsed = time.perf_counter() - t0
            if stop(iterations, elapsed):
                break
            temp = self.schedule(stop.progress(iterations, elapsed))
            sets = destroy.propose(state, arrays, self.rollouts, rng)
            width = int((sets >= 0).sum(-1).max())             # drop all-padding columns
            accepted += int(apply_sets_sa(state, best, arrays, sets[..., :max(width, 1)], None,
                                          temp, self.recreate_n, rng).sum())
            applied += sets.shape[0] * sets.shape[1]
            sync_slots(state, a, state.cost.reshape(b, a).min(1) + self.sync_delta * temp, rng)
            iterations += 1
            incumbent = best.cost.reshape(b, a).min(1)
            seconds = time.perf_counter() - t0
            trace.append((seconds, float(incumbent.mean())))
            if callback is not None:
                callback(iterations, seconds, incumbent)
        winner = np.arange(b) * a + best.cost.reshape(b, a).argmin(1)
        final = best.take(winner)
        routes, depots = data_solutions(final, arrays.num_depots)
        return SearchResult(routes, torch.from_numpy(final.cost.copy()),
                            torch.from_numpy(start_cost), iterations,
                            time.perf_counter() - t0, start_seconds=start_seconds,
                            accepted=accepted / max(applied, 1), trace=trace, depots=depots)


def sync_slots(state: ToursState, augment: int, threshold: np.ndarray,
               rng: np.random.Generator) -> int:
    """NDS's augmentation sync: every slot of instance ``b`` (slots ``b * augment ..``)
    whose current cost exceeds ``threshold[b]`` becomes a copy of a uniformly random
    slot of ``b`` at or below it. Returns the number of slots replaced."""
    cost = state.cost.reshape(-1, augment)
    above = cost > threshold[:, None]
    if not above.any():
        return 0
    below = (~above).sum(1)                                   # >= 1: the minimum's slot
    order = np.argsort(above, axis=1, kind="stable")          # the donors come first
    pick = np.minimum((rng.random(above.shape) * below[:, None]).astype(np.int64),
                      below[:, None] - 1)
    donor = np.take_along_axis(order, pick, 1)
    base = (np.arange(cost.shape[0]) * augment)[:, None]
    dst, src = (base + np.arange(augment))[above], (base + donor)[above]
    state.copy_slots(dst, src)
    return int(dst.size)
