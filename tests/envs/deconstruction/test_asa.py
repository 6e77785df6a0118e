"""Augmented simulated annealing (:class:`pyg_routing.search.DestroyRepairSearch`):
checked solutions with exact costs, determinism, the Metropolis rule in distribution,
the augmentation sync, the temperature schedule and the stopping criteria."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pyg_routing.data import RoutingData
from pyg_routing.envs.deconstruction import (
    ProblemArrays,
    RandomDestroy,
    SISRDestroy,
    ToursState,
    apply_sets_sa,
    evaluate_sets,
    start_solutions,
)
from pyg_routing.search import (
    DestroyRepairSearch,
    MaxIterations,
    MaxRuntime,
    SearchResult,
    TemperatureSchedule,
    budget,
    sync_slots,
)

from .common import PROBLEMS, make_instances

SMALL = DestroyRepairSearch(augment=2, rollouts=12)
STOP = MaxIterations(3)


@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("destroy", [RandomDestroy(6), SISRDestroy(c_bar=6)])
def test_search_returns_checked_routes_with_exact_costs(problem, destroy):
    inst, _ = make_instances(problem, 30, seed=3, b=3)
    res = SMALL.run(inst, destroy, STOP, seed=0)
    assert isinstance(res, SearchResult) and res.best_copy is None
    assert res.cost.dtype == res.initial_cost.dtype == torch.float64
    assert res.iterations == 3 and len(res.routes) == 3 and len(res.trace) == 3
    for b in range(3):
        data = RoutingData.from_routes(inst[b], res.routes[b])
        data.check()
        assert float(data.cost()) == pytest.approx(float(res.cost[b]), rel=1e-6, abs=1e-6)
        assert res.cost[b] <= res.initial_cost[b] + 1e-12          # the incumbent only improves
    assert 0.0 <= res.accepted <= 1.0


def test_same_seed_same_search_and_instances_do_not_interact():
    inst, _ = make_instances("cvrp", 25, seed=1, b=3)
    a = SMALL.run(inst, SISRDestroy(c_bar=5), STOP, seed=7)
    b = SMALL.run(inst, SISRDestroy(c_bar=5), STOP, seed=7)
    assert a.routes == b.routes and torch.equal(a.cost, b.cost)
    c = SMALL.run(inst, SISRDestroy(c_bar=5), STOP, seed=8)
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
    c = DestroyRepairSearch(schedule=TemperatureSchedule(t_start=0.1, t_final=0.001))
    assert c.schedule(0.0) == pytest.approx(0.1)
    assert c.schedule(1.0) == pytest.approx(0.001)
    assert c.schedule(0.5) == pytest.approx(0.01)
    assert c.schedule(2.0) == pytest.approx(0.001)
    assert DestroyRepairSearch().schedule == TemperatureSchedule(0.1, 0.001)   # NDS's


def test_zero_temperature_search_only_improves():
    """t_start = t_final = 0: NDS's validation search, improvements only."""
    c = DestroyRepairSearch(augment=2, rollouts=10, schedule=TemperatureSchedule(0.0, 0.0))
    assert c.schedule(0.0) == c.schedule(1.0) == 0.0
    inst, _ = make_instances("cvrp", 30, seed=1, b=2)
    traces = []
    res = c.run(inst, RandomDestroy(5), MaxIterations(4), seed=0,
                callback=lambda i, s, best: traces.append(best.copy()))
    assert res.iterations == 4 and (res.cost <= res.initial_cost + 1e-12).all()
    assert all((b <= a + 1e-12).all() for a, b in zip(traces, traces[1:]))


def test_time_limit_stops_the_search_and_counts_the_start():
    inst, _ = make_instances("cvrp", 60, seed=0, b=1)
    res = DestroyRepairSearch(augment=2, rollouts=20).run(inst, RandomDestroy(10),
                                                          MaxRuntime(0.5), seed=0)
    assert res.iterations >= 1 and 0.5 < res.seconds < 5.0
    assert res.start_seconds < res.seconds


@pytest.mark.parametrize("make, message", [
    (lambda: MaxRuntime(0), "max_runtime must be a finite number of seconds > 0"),
    (lambda: MaxRuntime(-1.0), "max_runtime must be a finite number of seconds > 0"),
    (lambda: budget(None, None), "needs an iteration cap or a time limit"),
    (lambda: MaxIterations(-1), "max_iterations must be an integer >= 0"),
    (lambda: MaxIterations(2.5), "max_iterations must be an integer >= 0"),
    (lambda: DestroyRepairSearch(augment=0), "augment must be an integer >= 1"),
    (lambda: DestroyRepairSearch(rollouts=2.5), "rollouts must be an integer >= 1"),
    (lambda: DestroyRepairSearch(recreate_n=0), "recreate_n must be an integer >= 1"),
    (lambda: DestroyRepairSearch(remove=True), "remove must be an integer >= 1"),
    (lambda: TemperatureSchedule(t_start=0.001, t_final=0.1),
     "t_final 0.1 must not exceed t_start 0.001"),
    (lambda: DestroyRepairSearch(sync_delta=-1), "sync_delta must be a finite number >= 0"),
    (lambda: TemperatureSchedule(t_start=0.1, t_final=0.0),
     "must both be > 0 \\(annealing\\) or both 0"),
    (lambda: TemperatureSchedule(t_start=-0.1), "t_start must be a finite number >= 0"),
])
def test_bad_settings_are_refused_by_name(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_a_stop_that_is_not_a_stopping_criterion_is_a_type_error():
    inst, _ = make_instances("cvrp", 10, seed=0, b=1)
    with pytest.raises(TypeError, match="stopping criterion"):
        SMALL.run(inst, RandomDestroy(3), 3)
    with pytest.raises(TypeError, match="TemperatureSchedule"):
        DestroyRepairSearch(schedule=(0.1, 0.001))


def test_unsupported_problem_is_refused_before_searching():
    from pyg_routing.data.generators import make_generator
    from pyg_routing.envs.base import UnsupportedProblemError

    with pytest.raises(UnsupportedProblemError, match="cvrp, vrptw, pcvrp"):
        SMALL.run(make_generator("tsp", 10, seed=0).sample(1), RandomDestroy(3), STOP)


def test_arrays_and_state_types_are_the_search_state():
    inst, arrays = make_instances("vrptw", 20, seed=4, b=1)
    assert isinstance(arrays, ProblemArrays)
    state = start_solutions(arrays, np.zeros(2, np.int32), rng=0)
    assert isinstance(state, ToursState) and state.neighbours().shape == (2, 20, 2)


@pytest.mark.parametrize("k", [0, 1, 5])
def test_max_iterations_runs_exactly_k_iterations(k):
    inst, _ = make_instances("cvrp", 20, seed=6, b=2)
    calls = []
    res = SMALL.run(inst, RandomDestroy(4), MaxIterations(k), seed=0,
                    callback=lambda i, s, best: calls.append(i))
    assert res.iterations == k and len(res.trace) == k and calls == list(range(1, k + 1))
    if k == 0:                                      # no iteration: the start solutions
        assert torch.equal(res.cost, res.initial_cost)


class _Recording:
    """A destroy provider that records the current cost of every slot it is shown."""

    name = "recording"

    def __init__(self, inner):
        self.inner, self.seen = inner, []

    def propose(self, state, arrays, num_sets, rng):
        self.seen.append(state.cost.copy())
        return self.inner.propose(state, arrays, num_sets, rng)


@pytest.mark.parametrize("problem", PROBLEMS)
def test_zero_temperature_schedule_never_accepts_a_worsening_set(problem):
    """T = 0: no slot's current solution ever gets worse (nor does the sync, whose
    threshold is then the instance's minimum), so the result never exceeds the start."""
    inst, _ = make_instances(problem, 30, seed=4, b=3)
    destroy = _Recording(RandomDestroy(6))
    search = DestroyRepairSearch(augment=3, rollouts=15,
                                 schedule=TemperatureSchedule(0, 0))
    res = search.run(inst, destroy, MaxIterations(5), seed=1)
    assert res.iterations == 5 and len(destroy.seen) == 5
    assert all((b <= a + 1e-12).all() for a, b in zip(destroy.seen, destroy.seen[1:]))
    assert (res.cost <= res.initial_cost + 1e-12).all()


@pytest.mark.parametrize("destroy", ["sisr", None, 15])
def test_a_destroy_that_is_neither_a_provider_nor_a_policy_is_a_type_error(destroy):
    inst, _ = make_instances("cvrp", 10, seed=0, b=1)
    with pytest.raises(TypeError, match="destroy provider"):
        SMALL.run(inst, destroy, STOP)
