"""Augmented simulated annealing: NDS's test-time search (Hottung et al. 2025,
``search_sa.py``), with any destroy provider.

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
4. ``T = t_final (t_start / t_final) ** (1 - elapsed / time_limit)``, exponential in
   WALL-CLOCK time (with ``max_iterations`` and no time limit: in iterations).

The time of building the distance matrices and the start solutions counts against
the limit, as in NDS. The temperatures are absolute (normalised-cost units, NDS's
``T_0 = 0.1``, ``T_f = 0.001``): coordinates must be in NDS's scale (unit square;
CVRPLib X divided by 1000).

Everything per iteration is a fixed number of numpy operations and two compiled
kernels (destroy, repair) running slots in parallel: no Python loop over
instances, slots, sets or customers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.envs.deconstruction.destroy import DestroyProvider
from pyg_routing.envs.deconstruction.problem import ProblemArrays
from pyg_routing.envs.deconstruction.repair import apply_sets_sa
from pyg_routing.envs.deconstruction.start import start_solutions
from pyg_routing.envs.deconstruction.state import ToursState


def _positive(name: str, value: float, allow_zero: bool = False) -> None:
    ok = value >= 0 if allow_zero else value > 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not ok \
            or not math.isfinite(value):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")


@dataclass
class ASAConfig:
    """NDS's search settings (``configs/eval/*.yaml``; defaults as there).

    Attributes:
        time_limit: wall-clock seconds per call (NDS: 60 / 120 / 240 s for N = 500 /
            1000 / 2000); ``None``: run ``max_iterations``.
        max_iterations: stop after this many iterations (``None``: no cap).
        augment: solution slots per instance (NDS: 8; 128 for PCVRP).
        rollouts: removal sets per slot and iteration (NDS: 200).
        recreate_n: greedy repairs per set, the best kept (NDS: 5).
        t_start, t_final: the temperature schedule's ends (NDS: 0.1, 0.001); both 0:
            improvements only (NDS's validation and training warm-up).
        sync_delta: slots above ``min + sync_delta * T`` are replaced (NDS: 15).
    """

    time_limit: float | None = 60.0
    max_iterations: int | None = None
    augment: int = 8
    rollouts: int = 200
    recreate_n: int = 5
    t_start: float = 0.1
    t_final: float = 0.001
    sync_delta: float = 15.0

    def __post_init__(self) -> None:
        if self.time_limit is None and self.max_iterations is None:
            raise ValueError("the search needs a time_limit or max_iterations")
        if self.time_limit is not None:
            _positive("time_limit", self.time_limit)
        for name in ("max_iterations", "augment", "rollouts", "recreate_n"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        _positive("t_start", self.t_start, allow_zero=True)
        _positive("t_final", self.t_final, allow_zero=True)
        if (self.t_start == 0) != (self.t_final == 0):
            raise ValueError(f"t_start and t_final must both be > 0 (annealing) or both 0 "
                             f"(improvements only), got {self.t_start} and {self.t_final}")
        _positive("sync_delta", self.sync_delta, allow_zero=True)
        if self.t_final > self.t_start:
            raise ValueError(f"t_final {self.t_final} must not exceed t_start {self.t_start}")

    def temperature(self, progress: float) -> float:
        """``T`` at ``progress`` in [0, 1] of the budget (exponential decay)."""
        if self.t_start == 0:
            return 0.0
        p = min(max(progress, 0.0), 1.0)
        return self.t_final * (self.t_start / self.t_final) ** (1.0 - p)


@dataclass
class ASAResult:
    """Outcome of :func:`augmented_simulated_annealing` on ``B`` instances.

    Attributes:
        routes: the best routes per instance (customer ids, depot omitted).
        cost: ``float64 [B]`` their cost (the library's objective, recomputed
            exactly from the tours).
        iterations: search iterations run.
        seconds: wall-clock time of the whole call (start solutions included).
        start_seconds: time spent building the instances' arrays and start solutions.
        start_cost: ``float64 [B]`` best start-solution cost per instance.
        accepted: fraction of the applied removal sets that were accepted.
        trace: ``(seconds, mean best cost)`` after every iteration.
    """

    routes: list[list[list[int]]]
    cost: np.ndarray
    iterations: int
    seconds: float
    start_seconds: float
    start_cost: np.ndarray
    accepted: float
    trace: list[tuple[float, float]] = field(default_factory=list)


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


def augmented_simulated_annealing(
        instances: RoutingInstances, destroy: DestroyProvider,
        config: ASAConfig | None = None, seed: int | None = None,
        arrays: ProblemArrays | None = None,
        callback: Callable[[int, float, np.ndarray], None] | None = None) -> ASAResult:
    """NDS's augmented simulated annealing on ``B`` instances (see the module docstring).

    Args:
        instances: CVRP, VRPTW or PCVRP instances (validated), coordinates in NDS's
            scale.
        destroy: the removal-set provider (random, SISR, a learned policy).
        config: the search settings (default :class:`ASAConfig`).
        seed: seeds every random draw (start solutions, sets, repairs, sync).
        arrays: the instances' :class:`ProblemArrays`, if already built.
        callback: called after every iteration with ``(iteration, seconds, best cost
            per instance)`` (e.g. a progress bar).

    Returns:
        :class:`ASAResult` with the best routes and costs per instance.
    """
    t0 = time.perf_counter()
    config = ASAConfig() if config is None else config
    rng = np.random.default_rng(seed)
    if arrays is None:
        instances.check()
        arrays = ProblemArrays.from_instances(instances)
    b, a = arrays.num_instances, config.augment
    state = start_solutions(arrays, np.repeat(np.arange(b, dtype=np.int32), a), rng=rng)
    best = state.clone()
    start_cost = best.cost.reshape(b, a).min(1)
    start_seconds = time.perf_counter() - t0
    iterations, applied, accepted = 0, 0, 0
    trace: list[tuple[float, float]] = []
    while True:
        elapsed = time.perf_counter() - t0
        if config.time_limit is not None and elapsed > config.time_limit:
            break
        if config.max_iterations is not None and iterations >= config.max_iterations:
            break
        progress = (elapsed / config.time_limit if config.time_limit is not None
                    else iterations / config.max_iterations)
        temp = config.temperature(progress)
        sets = destroy.propose(state, arrays, config.rollouts, rng)
        width = int((sets >= 0).sum(-1).max())                # drop all-padding columns
        accepted += int(apply_sets_sa(state, best, arrays, sets[..., :max(width, 1)], None,
                                      temp, config.recreate_n, rng).sum())
        applied += sets.shape[0] * sets.shape[1]
        sync_slots(state, a, state.cost.reshape(b, a).min(1) + config.sync_delta * temp, rng)
        iterations += 1
        incumbent = best.cost.reshape(b, a).min(1)
        seconds = time.perf_counter() - t0
        trace.append((seconds, float(incumbent.mean())))
        if callback is not None:
            callback(iterations, seconds, incumbent)
    winner = np.arange(b) * a + best.cost.reshape(b, a).argmin(1)
    final = best.take(winner)
    return ASAResult(routes=final.to_routes(), cost=final.cost.copy(), iterations=iterations,
                     seconds=time.perf_counter() - t0, start_seconds=start_seconds,
                     start_cost=start_cost, accepted=accepted / max(applied, 1), trace=trace)
