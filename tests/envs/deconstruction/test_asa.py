"""Augmented simulated annealing: checked solutions with exact costs, determinism, the
Metropolis rule in distribution, the augmentation sync and the temperature schedule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pyg_routing.data import RoutingData
from pyg_routing.envs.deconstruction import (
    ASAConfig,
    ProblemArrays,
    RandomDestroy,
    SISRDestroy,
    ToursState,
    apply_sets_sa,
    augmented_simulated_annealing,
    evaluate_sets,
    start_solutions,
    sync_slots,
)

from .common import PROBLEMS, make_instances

SMALL = dict(max_iterations=3, time_limit=None, augment=2, rollouts=12)


@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("destroy", [RandomDestroy(6), SISRDestroy(c_bar=6)])
def test_search_returns_checked_routes_with_exact_costs(problem, destroy):
    inst, _ = make_instances(problem, 30, seed=3, b=3)
    res = augmented_simulated_annealing(inst, destroy, ASAConfig(**SMALL), seed=0)
    assert res.iterations == 3 and len(res.routes) == 3 and len(res.trace) == 3
    for b in range(3):
        data = RoutingData.from_routes(inst[b], res.routes[b])
        data.check()
        assert float(data.cost()) == pytest.approx(res.cost[b], rel=1e-6, abs=1e-6)
        assert res.cost[b] <= res.start_cost[b] + 1e-12            # the incumbent only improves
    assert 0.0 <= res.accepted <= 1.0


def test_same_seed_same_search_and_instances_do_not_interact():
    inst, _ = make_instances("cvrp", 25, seed=1, b=3)
    config = ASAConfig(**SMALL)
    a = augmented_simulated_annealing(inst, SISRDestroy(c_bar=5), config, seed=7)
    b = augmented_simulated_annealing(inst, SISRDestroy(c_bar=5), config, seed=7)
    assert a.routes == b.routes and np.array_equal(a.cost, b.cost)
    c = augmented_simulated_annealing(inst, SISRDestroy(c_bar=5), config, seed=8)
    assert c.routes != a.routes


def test_metropolis_acceptance_frequency_matches_exp_minus_delta_over_t():
    """One worsening set applied to many copies of one solution: the share accepted is
    exp(-Δ/T) (binomial test at 4 standard deviations)."""
    inst, arrays = make_instances("cvrp", 40, seed=5, b=1)
    base = start_solutions(arrays, np.zeros(1, np.int32), rng=0)
    rng = np.random.default_rng(0)
    # find a set whose best repair is worse than the current solution
    for _ in range(200):
        cand = rng.permutation(40)[:6].astype(np.int32) + 1
        sets = cand[None, None, :]
        u = rng.random((1, 1, 64))[..., :_u_len(sets)]
        delta = float(evaluate_sets(base, arrays, sets, u, recreate_n=1)[0, 0] - base.cost[0])
        if delta > 1e-6:
            break
    else:
        pytest.skip("no worsening removal set found")
    copies = 4000
    state = base.take(np.zeros(copies, np.int64))
    best = state.clone()
    temperature = delta / math.log(2.0)                    # P(accept) = 1/2
    uu = np.repeat(u, copies, 0)
    uu[:, 0, -1] = rng.random(copies)                       # a fresh Metropolis uniform each
    accepted = apply_sets_sa(state, best, arrays, np.repeat(sets, copies, 0), uu, temperature,
                             recreate_n=1)
    p, share = math.exp(-delta / temperature), accepted.mean()
    assert abs(share - p) <= 4 * math.sqrt(p * (1 - p) / copies)
    # the rule itself, decision by decision: accepted iff delta < -T ln u
    expected = delta < -temperature * np.log(uu[:, 0, -1])
    assert np.array_equal(accepted.astype(bool), expected)


def _u_len(sets: np.ndarray) -> int:
    from pyg_routing.envs.deconstruction import uniforms_per_set

    return uniforms_per_set(sets.shape[-1], 1)


def test_sync_replaces_exactly_the_slots_above_the_threshold_by_donors_below():
    inst, arrays = make_instances("cvrp", 20, seed=2, b=2)
    state = start_solutions(arrays, np.repeat(np.arange(2, dtype=np.int32), 4), rng=1)
    state.cost[:] = [5.0, 1.0, 3.0, 9.0, 2.0, 2.5, 7.0, 2.2]   # labels only, to steer the sync
    tours_before = state.to_routes()
    replaced = sync_slots(state, 4, np.array([3.0, 2.4]), np.random.default_rng(0))
    assert replaced == 4                                         # slots 0, 3 and 5, 6
    after = state.to_routes()
    for above, below in [((0, 3), (1, 2)), ((5, 6), (4, 7))]:
        for s in above:
            assert after[s] in [tours_before[d] for d in below]
        for s in below:
            assert after[s] == tours_before[s]
    assert sync_slots(state, 4, np.array([100.0, 100.0]), np.random.default_rng(0)) == 0


def test_temperature_schedule_is_exponential_in_progress():
    c = ASAConfig(t_start=0.1, t_final=0.001)
    assert c.temperature(0.0) == pytest.approx(0.1)
    assert c.temperature(1.0) == pytest.approx(0.001)
    assert c.temperature(0.5) == pytest.approx(0.01)
    assert c.temperature(2.0) == pytest.approx(0.001)


def test_zero_temperature_search_only_improves():
    """t_start = t_final = 0: NDS's validation search, improvements only."""
    c = ASAConfig(time_limit=None, max_iterations=4, augment=2, rollouts=10, t_start=0.0,
                  t_final=0.0)
    assert c.temperature(0.0) == c.temperature(1.0) == 0.0
    inst, _ = make_instances("cvrp", 30, seed=1, b=2)
    traces = []
    res = augmented_simulated_annealing(inst, RandomDestroy(5), c, seed=0,
                                        callback=lambda i, s, best: traces.append(best.copy()))
    assert res.iterations == 4 and (res.cost <= res.start_cost + 1e-12).all()
    assert all((b <= a + 1e-12).all() for a, b in zip(traces, traces[1:]))


def test_time_limit_stops_the_search_and_counts_the_start():
    inst, _ = make_instances("cvrp", 60, seed=0, b=1)
    res = augmented_simulated_annealing(inst, RandomDestroy(10),
                                        ASAConfig(time_limit=0.5, augment=2, rollouts=20),
                                        seed=0)
    assert res.iterations >= 1 and 0.5 < res.seconds < 5.0
    assert res.start_seconds < res.seconds


@pytest.mark.parametrize("options, message", [
    (dict(time_limit=0), "time_limit must be a finite number > 0"),
    (dict(time_limit=-1.0), "time_limit must be a finite number > 0"),
    (dict(time_limit=None), "needs a time_limit or max_iterations"),
    (dict(augment=0), "augment must be an integer >= 1"),
    (dict(rollouts=2.5), "rollouts must be an integer >= 1"),
    (dict(t_start=0.001, t_final=0.1), "t_final 0.1 must not exceed t_start 0.001"),
    (dict(sync_delta=-1), "sync_delta must be a finite number >= 0"),
    (dict(t_start=0.1, t_final=0.0), "must both be > 0 \\(annealing\\) or both 0"),
    (dict(t_start=-0.1), "t_start must be a finite number >= 0"),
])
def test_bad_settings_are_refused_by_name(options, message):
    with pytest.raises(ValueError, match=message):
        ASAConfig(**options)


def test_unsupported_problem_is_refused_before_searching():
    from pyg_routing.data.generators import make_generator
    from pyg_routing.envs.base import UnsupportedProblemError

    with pytest.raises(UnsupportedProblemError, match="cvrp, vrptw, pcvrp"):
        augmented_simulated_annealing(make_generator("tsp", 10, seed=0).sample(1),
                                      RandomDestroy(3), ASAConfig(**SMALL))


def test_arrays_and_state_types_are_the_search_state():
    inst, arrays = make_instances("vrptw", 20, seed=4, b=1)
    assert isinstance(arrays, ProblemArrays)
    state = start_solutions(arrays, np.zeros(2, np.int32), rng=0)
    assert isinstance(state, ToursState) and state.neighbours().shape == (2, 20, 2)
