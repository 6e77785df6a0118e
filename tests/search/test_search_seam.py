"""The search seam: stopping criteria, the temperature schedule, the gap rule, and both
searches behind one ``run(instances, policy, stop, seed)``."""

from __future__ import annotations

import math

import pytest
import torch

from pyg_routing.data import CVRPGenerator, PDTSPGenerator
from pyg_routing.envs import PairReinsertionEnv, TwoOptEnv
from pyg_routing.envs.deconstruction import SISRDestroy
from pyg_routing.search import (
    DestroyRepairSearch,
    FirstOf,
    MaxIterations,
    MaxRuntime,
    Search,
    StepSearch,
    TemperatureSchedule,
    budget,
    gap_percent,
    improve,
    instance_gap_percent,
)
from pyg_routing.training import backbones


def test_max_iterations_and_max_runtime():
    cap = MaxIterations(3)
    assert [cap(i, 1e9) for i in range(5)] == [False, False, False, True, True]
    assert cap.progress(0, 5.0) == 0.0 and cap.progress(3, 0.0) == 1.0
    assert MaxIterations(0)(0, 0.0) and MaxIterations(0).progress(0, 0.0) == 0.0
    clock = MaxRuntime(2.0)
    assert not clock(10**6, 2.0) and clock(0, 2.0001)           # strictly past the limit
    assert clock.progress(0, 0.5) == 0.25


def test_first_of_stops_at_the_first_budget_and_reports_the_larger_progress():
    both = FirstOf(MaxIterations(10), MaxRuntime(100.0))
    assert not both(9, 99.0) and both(10, 0.0) and both(0, 100.5)
    assert both.progress(5, 10.0) == 0.5 and both.progress(1, 50.0) == 0.5
    assert both.progress(2, 80.0) == pytest.approx(0.8)
    assert budget(4) == MaxIterations(4) and budget(None, 1.5) == MaxRuntime(1.5)
    assert isinstance(budget(4, 1.5), FirstOf)


@pytest.mark.parametrize("make, match", [
    (lambda: MaxIterations(-1), "max_iterations must be an integer >= 0, got -1"),
    (lambda: MaxIterations(2.5), "max_iterations must be an integer >= 0, got 2.5"),
    (lambda: MaxIterations(True), "max_iterations must be an integer >= 0, got True"),
    (lambda: MaxRuntime(0), "max_runtime must be a finite number of seconds > 0, got 0"),
    (lambda: MaxRuntime(math.nan), "max_runtime must be a finite"),
    (lambda: MaxRuntime("60"), "max_runtime must be a finite"),
    (lambda: FirstOf(), "at least one stopping criterion"),
    (lambda: budget(), "needs an iteration cap or a time limit"),
])
def test_bad_budgets_are_refused_by_name(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_a_search_refuses_what_is_not_a_stopping_criterion():
    inst = CVRPGenerator(8, seed=0).sample(2)
    with pytest.raises(TypeError, match="stop must be a stopping criterion .* got int"):
        StepSearch(TwoOptEnv()).run(inst, None, 10)
    with pytest.raises(TypeError, match="got the class MaxIterations"):
        FirstOf(MaxIterations(1), MaxIterations)          # the class, not an object


def test_one_temperature_schedule():
    sched = TemperatureSchedule(0.1, 0.001)
    assert sched(0.0) == pytest.approx(0.1) and sched(1.0) == pytest.approx(0.001)
    assert sched(0.5) == pytest.approx(0.01) and sched(-3) == sched(0.0)
    assert TemperatureSchedule(0, 0)(0.2) == 0.0


def test_gap_is_that_of_the_mean_objectives():
    cost, ref = torch.tensor([17.0, 17.84]), torch.tensor([15.0, 16.16])
    assert gap_percent(cost, ref) == pytest.approx(100 * (17.42 / 15.58 - 1))
    assert instance_gap_percent(cost, ref) == pytest.approx(
        50 * (17.0 / 15.0 - 1) + 50 * (17.84 / 16.16 - 1))
    assert gap_percent(11.0, 10.0) == pytest.approx(10.0)
    with pytest.raises(ValueError, match=r"shape \(2,\) against references of shape \(3,\)"):
        gap_percent(cost, torch.ones(3))


def test_both_searches_are_the_one_seam():
    assert isinstance(StepSearch(), Search) and isinstance(DestroyRepairSearch(), Search)
    inst = CVRPGenerator(10, seed=1).sample(3)
    for search, policy in ((StepSearch(TwoOptEnv(), init="random", augment=2), None),
                           (DestroyRepairSearch(augment=2, rollouts=4), SISRDestroy(c_bar=3))):
        res = search.run(inst, policy, MaxIterations(5), seed=7)
        again = search.run(inst, policy, MaxIterations(5), seed=7)
        assert res.iterations == 5 and len(res.routes) == 3
        assert torch.equal(res.cost, again.cost) and res.routes == again.routes
        assert (res.cost <= res.initial_cost + 1e-6).all()


def test_step_search_seed_equals_improve_with_that_generator():
    inst = PDTSPGenerator(10, seed=2).sample(2)
    env = PairReinsertionEnv()
    res = StepSearch(env, init="random", augment=2, independent_starts=True).run(
        inst, None, MaxIterations(12), seed=5)
    ref = improve(inst, None, steps=12, init="random", augment=2, env=env,
                  independent_starts=True, generator=torch.Generator().manual_seed(5))
    assert torch.equal(res.cost, ref.cost) and res.routes == ref.routes


def test_each_backbone_names_its_search_and_baselines():
    assert set(backbones.get("dact").baselines) == {"random"}
    assert set(backbones.get("nds").baselines) == {"random", "sisr"}
    sisr = backbones.get("nds").baselines["sisr"][1](7)
    assert isinstance(sisr, SISRDestroy) and sisr.c_bar == 7
