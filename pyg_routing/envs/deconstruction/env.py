"""``DeconstructionEnv``: NDS's training environment on the numba core.

One training batch of NDS (Hottung et al. 2025, ``trainer.py``) is a few operations
on ``S`` solution slots, each a fixed number of compiled kernel calls (no Python
loop over slots, sets or customers):

* :meth:`DeconstructionEnv.reset`: the instances' arrays and NDS's start solutions
  (:func:`.start.start_solutions`) for ``augment`` slots per instance;
* :meth:`DeconstructionEnv.warm_up`: NDS's ``_search_one_batch``: removal sets from a
  provider applied in sequence, improvements only (``T = 0``);
* :meth:`DeconstructionEnv.improve`: NDS's ``singleImp``: every one of ``K`` sets
  per slot is repaired (best of ``recreate_n``) against the SAME current solution,
  the rewards are ``max(cost - cost_k, 0)`` and the slot then takes the best
  candidate UNCONDITIONALLY (even a worse one), as NDS does in training.

It is a :class:`~pyg_routing.envs.base.RoutingEnv` like the step environments
(``problems``, ``inits``, ``reset``, ``observe``, ``to_routes``), but not an
:class:`~pyg_routing.envs.base.ImprovementEnv`: an NDS step is a whole
destroy-and-repair round over many removal sets, not one move chosen by a policy head.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.envs.base import RoutingEnv
from pyg_routing.envs.deconstruction._validate import (
    InvalidRemovalSetError,
    as_generator,
    check_count,
    check_recreate_n,
    check_sets,
)
from pyg_routing.envs.deconstruction.depots import to_data_routes
from pyg_routing.envs.deconstruction.destroy import DestroyProvider, check_destroy
from pyg_routing.envs.deconstruction.observation import NDSFeatures, NDSObservation, observe
from pyg_routing.envs.deconstruction.problem import NDS_VARIANTS, ProblemArrays
from pyg_routing.envs.deconstruction.repair import (
    apply_sets_sa,
    commit_sets,
    draw_uniforms,
    evaluate_sets,
)
from pyg_routing.envs.deconstruction.start import start_solutions
from pyg_routing.envs.deconstruction.state import ToursState


@dataclass
class DeconstructionBatch:
    """The instances of a batch and their current solutions.

    Attributes:
        instances: the ``B`` instances (as given; not modified).
        arrays: their :class:`ProblemArrays`.
        state: ``S = B * augment`` solution slots, instance-major.
        start_cost: ``float64 [S]`` the start solutions' costs.
        features: the instances' :class:`NDSFeatures` once :meth:`DeconstructionEnv.observe`
            built them (per device).
    """

    instances: RoutingInstances
    arrays: ProblemArrays
    state: ToursState
    start_cost: np.ndarray
    features: NDSFeatures | None = None


@dataclass
class ImproveResult:
    """What :meth:`DeconstructionEnv.improve` measured.

    Attributes:
        cost: ``float64 [S, K]`` each set's best-of-``recreate_n`` repair cost.
        reward: ``float64 [S, K]`` ``max(current cost - cost, 0)`` (NDS's reward "i").
        chosen: ``int64 [S]`` the set committed per slot (lowest cost, first on ties).
    """

    cost: np.ndarray
    reward: np.ndarray
    chosen: np.ndarray


class DeconstructionEnv(RoutingEnv):
    """NDS's destroy-and-repair environment (see the module docstring).

    Args:
        recreate_n: greedy repairs per removal set, the best kept (NDS: 5).
    """

    name: ClassVar[str] = "deconstruction"
    #: customer features in NDS's scale: ``x, y, demand / capacity``, then the time
    #: window (VRPTW) or the prize (PCVRP) (:class:`.observation.NDSFeatures`)
    feature_widths: ClassVar[dict[Problem, int]] = {Problem.CVRP: 3, Problem.VRPTW: 5,
                                                     Problem.PCVRP: 4}
    problems: ClassVar[tuple[Problem, ...]] = tuple(feature_widths)
    #: NDS's start solution is the only initial-solution rule
    inits: ClassVar[tuple[str, ...]] = ("nds",)
    #: the kernels' (:data:`.problem.NDS_VARIANTS`); the policy's observation stays the
    #: coordinates'
    variants: ClassVar[tuple[str, ...]] = NDS_VARIANTS

    def __init__(self, recreate_n: int = 5) -> None:
        self.recreate_n = check_recreate_n(recreate_n)

    def start(self, instances: RoutingInstances, augment: int = 1,
              rng: np.random.Generator | int | None = None) -> DeconstructionBatch:
        """NDS start solutions for ``augment`` slots per instance.

        Raises:
            TypeError: ``instances`` not a ``RoutingInstances`` batch (one ``RoutingData``
                is told how to make one); ``rng`` not a Generator or seed.
            InvalidRemovalSetError: ``augment`` not an integer >= 1.
            UnsupportedProblemError: a problem other than cvrp, vrptw, pcvrp.
            InvalidInstanceError: malformed instances (naming the instance).
        """
        augment = check_count(augment, "augment", 1)
        rng = as_generator(rng)
        self.check_problem(instances.problem)
        arrays = ProblemArrays.from_instances(instances)
        inst = np.repeat(np.arange(arrays.num_instances, dtype=np.int32), augment)
        state = start_solutions(arrays, inst, rng=rng)
        return DeconstructionBatch(instances, arrays, state, state.cost.copy())

    def warm_up(self, batch: DeconstructionBatch, destroy: DestroyProvider, steps: int,
                num_sets: int, rng: np.random.Generator) -> None:
        """``steps`` rounds of ``num_sets`` sets per slot from ``destroy``, applied in
        sequence with improvements only (NDS's training warm-up, ``T = 0``).

        Raises:
            TypeError: ``batch`` not :meth:`reset`'s; ``destroy`` not a provider object
                (a name such as ``"sisr"`` or a class is told what to pass); ``rng`` not a
                numpy ``Generator`` or None (a seed would replay the same draws every
                round).
            InvalidRemovalSetError: ``steps`` not an integer >= 0, ``num_sets`` not an
                integer >= 1.
        """
        _check_batch(batch, "warm_up")
        destroy = check_destroy(destroy, "DeconstructionEnv.warm_up",
                                " or PolicyDestroy(policy, instances)")
        steps = check_count(steps, "steps", 0)
        check_count(num_sets, "num_sets", 1)
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise TypeError(f"DeconstructionEnv.warm_up: `rng` must be a numpy Generator "
                            f"(np.random.default_rng(seed)) or None; a seed would replay the "
                            f"same draws every round; got {rng!r}")
        best = batch.state.clone()
        for _ in range(steps):                # rounds depend on each other: sequential
            sets = destroy.propose(batch.state, batch.arrays, num_sets, rng)
            apply_sets_sa(batch.state, best, batch.arrays, sets, None, 0.0, self.recreate_n,
                          rng)

    def improve(self, batch: DeconstructionBatch, sets: np.ndarray,
                rng: np.random.Generator) -> ImproveResult:
        """Repair every set of ``sets [S, K, k]`` against the current solutions and move
        every slot to its best candidate (unconditionally).

        Raises:
            TypeError: ``batch`` not :meth:`reset`'s; ``rng`` not a Generator or seed.
            InvalidRemovalSetError: ``sets`` not integer ``[S, K >= 1, k >= 1]`` (floats
                and bools are refused, not rounded), or a set with an id outside 1..N, the
                depot or a repeated customer (naming slot, set and customer).
        """
        _check_batch(batch, "improve")
        sets = check_sets(sets, len(batch.state), batch.state.num_customers)
        if sets.shape[1] < 1:
            raise InvalidRemovalSetError(f"`sets` must hold at least one set per slot, got "
                                         f"shape {sets.shape}")
        u = draw_uniforms(as_generator(rng), sets.shape[:2], sets.shape[2], self.recreate_n)
        current = batch.state.cost.copy()
        cost = evaluate_sets(batch.state, batch.arrays, sets, u, self.recreate_n)
        chosen = cost.argmin(axis=1)
        commit_sets(batch.state, batch.arrays, sets, u, chosen, self.recreate_n)
        return ImproveResult(cost, np.maximum(current[:, None] - cost, 0.0), chosen)

    def observe(self, batch: DeconstructionBatch, dtype: torch.dtype = torch.float32,
                device: torch.device | str | None = None) -> NDSObservation:
        """What NDS's policy sees of every slot's current solution (on ``device``,
        default the instances'); the instances' features are built once per batch."""
        dev = batch.instances.pos.device if device is None else torch.device(device)
        if batch.features is None or batch.features.device != dev:
            batch.features = NDSFeatures.from_instances(batch.instances, device=dev)
        return observe(batch.state, batch.features, dtype)

    def to_routes(self, batch: DeconstructionBatch) -> list[list[list[int]]]:
        """The slots' current solutions as routes in the instances' node ids (NDS's
        training rounds move every slot unconditionally, so there is no best-so-far to
        give)."""
        return to_data_routes(batch.state.to_routes(), batch.arrays.num_depots)

    def route_depots(self, batch: DeconstructionBatch) -> list[list[int]] | None:
        """Each route's depot per slot, in the order of :meth:`to_routes`; ``None`` with
        one depot."""
        return None if batch.arrays.num_depots == 1 else batch.state.route_depots()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(recreate_n={self.recreate_n})"


def _check_batch(batch: DeconstructionBatch, method: str) -> None:
    if not isinstance(batch, DeconstructionBatch):
        hint = (" (reset(instances) makes it from RoutingInstances)"
                if isinstance(batch, RoutingInstances) else "")
        raise TypeError(f"DeconstructionEnv.{method} takes the DeconstructionBatch of "
                        f"reset(){hint}, got {type(batch).__name__}")
