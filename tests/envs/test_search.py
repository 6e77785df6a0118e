"""The search seam: improve() with any environment and acceptance rule, and its
refusals of bad input."""

import math
from dataclasses import replace

import pytest
import torch

from pyg_routing.data import CVRPGenerator, RoutingData, TSPGenerator, make_generator
from pyg_routing.envs import (
    TwoOptEnv,
)
from pyg_routing.envs.base import UnsupportedProblemError
from pyg_routing.errors import InvalidInstanceError
from pyg_routing.models import DACTPolicy
from pyg_routing.search import (
    AlwaysAccept,
    ImprovementOnly,
    SimulatedAnnealing,
    TemperatureSchedule,
    improve,
)


def _feasible(inst, result):
    for i, routes in enumerate(result.routes):
        data = RoutingData.from_routes(inst[i], routes)
        data.check()
        assert math.isclose(float(data.cost()), float(result.cost[i]), rel_tol=1e-5)


def test_default_acceptance_is_the_plain_search():
    inst = CVRPGenerator(12, seed=1).sample(4)
    a = improve(inst, steps=30, generator=torch.Generator().manual_seed(0))
    b = improve(inst, steps=30, generator=torch.Generator().manual_seed(0),
                env=TwoOptEnv(), acceptance=AlwaysAccept())
    assert a.routes == b.routes and torch.equal(a.cost, b.cost) and b.iterations == 30


def test_improvement_only_never_worsens_the_current_solution():
    """Step by step, the kept solution's cost never rises, and every kept move is a
    2-opt move of the environment (or no move at all)."""
    env, rule = TwoOptEnv(), ImprovementOnly()
    gen = torch.Generator().manual_seed(2)
    state = env.reset(CVRPGenerator(10, seed=2).sample(6), init="random", generator=gen)
    for _ in range(40):
        new, _ = env.step(state, env.random_action(state, generator=gen))
        keep = rule(state.cost, new.cost, 0.0)
        kept = env.accept(state, new, keep)
        assert (kept.cost <= state.cost + 1e-6).all()
        assert torch.equal(kept.order[~keep], state.order[~keep])
        assert torch.equal(kept.order[keep], new.order[keep])
        # the best-so-far comes from the new state either way
        assert torch.equal(kept.best_cost, new.best_cost)
        state = kept
    res = improve(CVRPGenerator(10, seed=2).sample(6), steps=40, init="random",
                  acceptance=rule, generator=torch.Generator().manual_seed(2))
    _feasible(CVRPGenerator(10, seed=2).sample(6), res)


def test_simulated_annealing_schedule_and_metropolis_rule():
    sa = SimulatedAnnealing(TemperatureSchedule(0.1, 0.001))
    assert sa.temperature(0.0) == pytest.approx(0.1)
    assert sa.temperature(1.0) == pytest.approx(0.001)
    assert sa.temperature(0.5) == pytest.approx(0.01)          # geometric midpoint
    assert sa.temperature(7.0) == pytest.approx(0.001)         # clamped
    cur = torch.zeros(20000, dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    assert sa(cur, cur - 1.0, 0.3, gen).all()                  # improvements: always
    worse = sa(cur, cur + 0.01, 0.0, gen).double().mean()      # exp(-0.01 / 0.1)
    assert float(worse) == pytest.approx(math.exp(-0.1), abs=0.02)
    assert not sa(cur, cur + 1.0, 1.0, gen).any()              # exp(-1000) at T_f
    for bad in ((0.0, 0.001), (0.1, 0.2), (math.inf, 0.001), (0.1, 0.0), (-1.0, -2.0)):
        with pytest.raises(ValueError, match="t_start|t_final"):
            TemperatureSchedule(*bad)
    with pytest.raises(TypeError, match="TemperatureSchedule, got str"):
        SimulatedAnnealing("epochs")
    assert SimulatedAnnealing(TemperatureSchedule(0, 0)).temperature(0.3) == 0.0


def test_simulated_annealing_search_over_time_and_steps():
    inst = CVRPGenerator(12, seed=3).sample(3)
    hot = improve(inst, steps=60, init="random", generator=torch.Generator().manual_seed(1),
                  acceptance=SimulatedAnnealing(TemperatureSchedule(1.0, 0.01)))
    _feasible(inst, hot)
    assert (hot.cost <= hot.initial_cost + 1e-6).all()
    timed = improve(inst, steps=None, time_limit=0.5, init="random",
                    generator=torch.Generator().manual_seed(1),
                    acceptance=SimulatedAnnealing(TemperatureSchedule(0.1, 0.001)))
    assert timed.iterations > 0 and timed.seconds >= 0.5
    _feasible(inst, timed)


def test_a_policy_search_with_annealing_and_augmentation():
    torch.manual_seed(0)
    inst = TSPGenerator(10, seed=4).sample(2)
    pol = DACTPolicy.build("tsp", pe="ipexpe", dim=16, heads=2, num_layers=1, pe_dim=8)
    res = improve(inst, pol, steps=10, augment=4, acceptance=SimulatedAnnealing(
        TemperatureSchedule(0.5, 0.05)), generator=torch.Generator().manual_seed(0))
    _feasible(inst, res)
    assert pol.training                                     # mode restored


def test_improve_refuses_bad_input_by_name():
    inst = CVRPGenerator(8, seed=0).sample(2)
    pos = inst.pos.clone()
    with pytest.raises(ValueError, match="steps must be an integer >= 0, got -1"):
        improve(inst, steps=-1)
    with pytest.raises(ValueError, match="needs steps or a time_limit"):
        improve(inst, steps=None)
    with pytest.raises(ValueError, match="time_limit must be > 0"):
        improve(inst, steps=None, time_limit=0)
    with pytest.raises(ValueError, match="augment must be an integer in 1..8, got 9"):
        improve(inst, steps=1, augment=9)
    with pytest.raises(TypeError, match=r"takes a RoutingInstances batch, got one RoutingData"
                                        r".*stack_instances\(\[data\]\).*load_search_instance"):
        improve(inst[0], steps=1)
    with pytest.raises(TypeError, match="takes a RoutingInstances batch .*got list"):
        improve([inst[0]], steps=1)
    far = inst.pos.clone()
    far[1, 2, 0] = math.inf
    with pytest.raises(InvalidInstanceError, match="instance 1"):
        improve(replace(inst, pos=far), steps=1)
    with pytest.raises(InvalidInstanceError):
        improve(inst[0:0], steps=1)                          # no instance at all
    over = inst.demand.clone()
    over[1, 3] = 10 * float(inst.capacity[1])
    with pytest.raises(InvalidInstanceError, match="instance 1"):
        improve(replace(inst, demand=over), steps=1)
    with pytest.raises(UnsupportedProblemError,
                       match="supports tsp, cvrp, vrptw, pdtsp, not 'pcvrp'"):
        improve(make_generator("pcvrp", 10, seed=0).sample(2), steps=1)
    pol = DACTPolicy.build("tsp", pe="none", dim=16, heads=2, num_layers=1)
    with pytest.raises(ValueError, match="built for 'tsp', but the instances are 'cvrp'"):
        improve(inst, pol, steps=1)
    assert torch.equal(inst.pos, pos)                        # nothing mutated
