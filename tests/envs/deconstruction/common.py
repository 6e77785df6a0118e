"""Shared builders and assertions of the NDS repair tests."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck

from pyg_routing.data import RoutingData
from pyg_routing.data.generators import make_generator
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.envs.deconstruction import ProblemArrays, ToursState

PROBLEMS = ("cvrp", "vrptw", "pcvrp")
#: two solution slots per instance, as augmentations
TWO_SLOTS = np.array([0, 0, 1, 1], np.int32)


def hypothesis_settings(max_examples: int) -> dict:
    """Hypothesis settings of the kernel tests: no deadline (numba compiles on first use)."""
    return dict(max_examples=max_examples, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def make_instances(problem: str, n: int, seed: int, b: int = 2
                   ) -> tuple[RoutingInstances, ProblemArrays]:
    inst = make_generator(problem, n, seed=seed).sample(b)
    return inst, ProblemArrays.from_instances(inst)


def random_sets(rng: np.random.Generator, num_slots: int, num_sets: int, k: int, n: int,
                pad: bool = True) -> np.ndarray:
    """``int32 [S, R, k]`` random removal sets of 1..k distinct customers, -1 padded."""
    sets = np.full((num_slots, num_sets, k), -1, np.int32)
    for s in range(num_slots):
        for r in range(num_sets):
            m = int(rng.integers(1, min(k, n) + 1)) if pad else min(k, n)
            sets[s, r, :m] = rng.permutation(n)[:m] + 1
    return sets


def assert_valid(state: ToursState, arrays: ProblemArrays, inst: RoutingInstances) -> None:
    """The state passes its own check, and every slot converted to RoutingData passes
    RoutingData.check with the same cost."""
    state.check(arrays)
    for s, routes in enumerate(state.to_routes()):
        data = RoutingData.from_routes(inst[int(state.inst[s])], routes)
        data.check()
        scale = float(state.length[s].sum() + state.prize[s].sum())
        assert abs(float(data.cost()) - state.cost[s]) <= 1e-6 * max(1.0, scale)


def assert_same(state: ToursState, routes: list, costs) -> None:
    """Identical tours, and costs equal to 1e-9 (they are in fact bit-identical)."""
    assert state.to_routes() == routes
    np.testing.assert_allclose(state.cost, np.asarray(costs, dtype=np.float64), rtol=0,
                               atol=1e-9)
