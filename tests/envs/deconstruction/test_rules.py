"""NDS's repair rules on tiny hand-built instances whose results are worked out by
hand, the VRPTW slack test against schedule simulation, and the uniform layout."""

import math

import numpy as np
import torch

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.envs.deconstruction import (
    ProblemArrays,
    ToursState,
    apply_sets_sa,
    commit_sets,
    draw_uniforms,
    evaluate_sets,
    start_solutions,
    uniforms_per_set,
)
from pyg_routing.envs.deconstruction import repair_reference as ref
from pyg_routing.envs.deconstruction._core import (
    _departures,
    _latest_arrivals,
    tw_insertion_ok,
)
from tests.envs.deconstruction.common import assert_valid, make_instances, random_sets

# depot (0,0); 1 (1,0); 2 (2,0); 3 (0,1); 4 (0,2): distances 1, 2, sqrt 2, sqrt 5, sqrt 8
LINE = [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 2.0]]


def _hand(problem, pos, demand, capacity, **extra):
    fields = {k: torch.tensor([v], dtype=torch.float64) for k, v in extra.items()}
    inst = RoutingInstances(Problem(problem), torch.tensor([pos], dtype=torch.float64),
                            demand=torch.tensor([demand], dtype=torch.float64),
                            capacity=torch.tensor([float(capacity)], dtype=torch.float64),
                            **fields)
    return inst, ProblemArrays.from_instances(inst)


def _one(arrays, routes):
    return ToursState.from_routes(arrays, [routes], [0])


def _u(k, recreate_n, **slots):
    u = np.full((1, 1, uniforms_per_set(k, recreate_n)), 0.99)
    for index, value in slots.items():
        u[0, 0, int(index[1:])] = value
    return u


def test_ties_go_to_the_first_position_and_a_zero_delta_is_rejected_at_t0():
    inst, arrays = _hand("cvrp", LINE, [0, 1, 1, 1, 1], 10)
    state = _one(arrays, [[1, 2], [3, 4]])
    sets, u = np.array([[[2, 3]]]), _u(2, 1)
    # 2 into [1]: 2 + 1 - 1 = 2 at position 0 and 1 + 2 - 1 = 2 at position 1 -> [2, 1];
    # 3 into [4]: 1 + 1 - 2 = 0 at position 0 (ties position 1) -> [3, 4]; Δ = 4 - 4 = 0.
    assert evaluate_sets(state, arrays, sets, u, 1)[0, 0] == state.cost[0] == 4.0 + 4.0
    assert apply_sets_sa(state, state.clone(), arrays, sets, u, 0.0, 1)[0] == 0
    assert state.to_routes() == [[[1, 2], [3, 4]]]
    commit_sets(state, arrays, sets, u, np.array([0]), 1)
    assert state.to_routes() == [[[2, 1], [3, 4]]]
    assert_valid(state, arrays, inst)


def test_an_emptied_touched_tour_is_dropped():
    inst, arrays = _hand("cvrp", LINE, [0, 1, 1, 1, 1], 10)
    state = _one(arrays, [[1], [2, 3, 4]])
    best = state.clone()
    # [1] is emptied and dropped; the only candidate is [2, 4]: 1 goes to position 0
    # (cost 0), then 3 to the end (1 + 1 - 2 = 0): one tour [1, 2, 4, 3].
    accepted = apply_sets_sa(state, best, arrays, np.array([[[1, 3]]]), _u(2, 1), 0.0, 1)
    assert accepted[0] == 1
    assert state.to_routes() == [[[1, 2, 4, 3]]]
    assert math.isclose(state.cost[0], 4 + 2 * math.sqrt(2), rel_tol=1e-15)
    assert (state.size[0] > 0).sum() == 1
    assert best.to_routes() == state.to_routes() and best.cost[0] == state.cost[0]
    assert_valid(state, arrays, inst)


def test_untouched_tours_are_never_candidates():
    # 3 sits next to customer 1, whose tour [1] is untouched; [2] (touched) is full once
    # 4 went back in, so 3 gets a new tour instead of joining [1].
    pos = [[0.0, 0.0], [1.0, 0.0], [0.0, 5.0], [1.0, 0.2], [0.0, 4.5]]
    inst, arrays = _hand("cvrp", pos, [0, 1, 3, 1, 1], 4)
    state = _one(arrays, [[1], [3, 2], [4]])
    sets, u = np.array([[[4, 3]]]), _u(2, 1)
    commit_sets(state, arrays, sets, u, np.array([0]), 1)
    assert state.to_routes() == [[[1], [3], [4, 2]]]
    assert_valid(state, arrays, inst)


def test_pcvrp_coin_flip_and_leaving_out():
    pos = [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]
    inst, arrays = _hand("pcvrp", pos, [0, 1, 1], 10, prize=[0.0, 0.5, 3.0])
    base = _one(arrays, [[1], [2]])
    one = np.array([[[1]]])
    # Alone, 1 costs 2 - 0.5 > 0: heads (u < 0.5) reopen [1], tails leave it out.
    assert evaluate_sets(base, arrays, one, _u(1, 1, u0=0.3), 1)[0, 0] == base.cost[0]
    left = base.clone()
    commit_sets(left, arrays, one, _u(1, 1, u0=0.7), np.array([0]), 1)
    assert left.to_routes() == [[[2]]]
    assert left.tour_labels()[0, 0] == -1 and left.neighbours()[0, 0].tolist() == [0, 0]
    assert math.isclose(left.cost[0], 2.0 - 3.0)
    assert_valid(left, arrays, inst)
    # 2 - 3 < 0: a new tour [2] whatever the coin says.
    assert evaluate_sets(base, arrays, np.array([[[2]]]), _u(1, 1, u0=0.99), 1)[0, 0] \
        == base.cost[0]
    # [2] reopened first; 1 fits into it at a positive cost (1 + sqrt 2 - 1 - 0.5), so it
    # is not inserted: its coin (slot 1) decides between [1] and leaving it out.
    both = np.array([[[2, 1]]])
    for coin, routes in ((0.1, [[1], [2]]), (0.9, [[2]])):
        state = base.clone()
        commit_sets(state, arrays, both, _u(2, 1, u1=coin), np.array([0]), 1)
        assert state.to_routes() == [routes]
    # A negative insertion cost (prize 2) is taken: [1, 2] (position 0 wins the tie).
    _, rich = _hand("pcvrp", pos, [0, 1, 1], 10, prize=[0.0, 2.0, 3.0])
    state = _one(rich, [[1], [2]])
    commit_sets(state, rich, both, _u(2, 1), np.array([0]), 1)
    assert state.to_routes() == [[[1, 2]]]


def test_vrptw_checks_the_return_to_the_depot():
    # Served alone, 1 and 2 are back at 6 <= 7.5; together the return is at 6 + sqrt 18.
    pos = [[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]]
    tw = [[0.0, 7.5], [0.0, 10.0], [0.0, 10.0]]
    inst, arrays = _hand("vrptw", pos, [0, 1, 1], 10, time_window=tw,
                         service_time=[0.0, 0.0, 0.0])
    state = _one(arrays, [[1], [2]])
    sets, u = np.array([[[1, 2]]]), _u(2, 1)
    commit_sets(state, arrays, sets, u, np.array([0]), 1)
    assert state.to_routes() == [[[1], [2]]]
    assert ref.commit_sets(arrays, [[[1], [2]]], [0], sets, u, [0], 1) == [[[1], [2]]]
    assert_valid(state, arrays, inst)


def test_vrptw_slack_test_equals_schedule_simulation():
    _, arrays = make_instances("vrptw", 40, seed=5, b=1)
    state = start_solutions(arrays, np.zeros(3, np.int32), rounds=10, rng=1)
    ri = ref.ReferenceInstance(arrays, 0)
    d, tw, svc = arrays.dist[0], arrays.tw[0], arrays.service[0]
    t0, l0 = tw[0, 0] + svc[0], tw[0, 1]
    outcomes = []
    for s, routes in enumerate(state.to_routes()):
        succ, pred = state.succ[s], state.pred[s]
        arc = d[pred, np.arange(41)]
        dep, la = np.zeros(41), np.zeros(41)
        for tour in routes:
            _departures(tour[0], t0, succ, arc, dep, tw, svc)
            _latest_arrivals(tour[-1], l0, d[tour[-1], 0], pred, arc, la, tw, svc)
            for c in range(1, 41):
                if c in tour:
                    continue
                for pos in range(len(tour) + 1):
                    p = tour[pos - 1] if pos else 0
                    n = tour[pos] if pos < len(tour) else 0
                    fast = tw_insertion_ok(dep[p] if p else t0, d[p, c], d[c, n], tw[c, 0],
                                           tw[c, 1], svc[c], la[n] if n else l0)
                    slow = ri.on_time([0, *tour[:pos], c, *tour[pos:]])   # headed by its depot
                    assert fast == slow, (s, tour, c, pos)
                    outcomes.append(fast)
    assert len(outcomes) > 2000 and 100 < sum(outcomes) < len(outcomes) - 100


def test_best_of_n_never_worse_than_the_given_order():
    for problem in ("cvrp", "vrptw"):                     # attempt 0 uses no uniform
        _, arrays = make_instances(problem, 30, seed=2)
        state = start_solutions(arrays, np.array([0, 1], np.int32), rounds=5, rng=0)
        sets = random_sets(np.random.default_rng(0), 2, 20, 8, 30)
        once = evaluate_sets(state, arrays, sets, recreate_n=1, rng=0)
        five = evaluate_sets(state, arrays, sets, recreate_n=5, rng=1)
        assert (five <= once).all() and (five < once).any()


def test_uniform_layout():
    assert uniforms_per_set(15, 5) == 4 * 14 + 5 * 15 + 1
    assert uniforms_per_set(1, 1) == 2
    _, arrays = make_instances("cvrp", 25, seed=3)
    state = start_solutions(arrays, np.array([0, 1], np.int32), rounds=5, rng=0)
    sets = random_sets(np.random.default_rng(1), 2, 15, 6, 25, pad=False)
    u = draw_uniforms(2, sets.shape[:2], 6, 3)
    costs = evaluate_sets(state, arrays, sets, u, 3)
    coins = u.copy()
    coins[..., 2 * 5:-1] = 0.5                           # CVRP ignores the coin slots
    assert np.array_equal(evaluate_sets(state, arrays, sets, coins, 3), costs)
    shuffled = u.copy()
    shuffled[..., :5] = 1 - shuffled[..., :5]            # attempt 1's Fisher-Yates slots
    assert not np.array_equal(evaluate_sets(state, arrays, sets, shuffled, 3), costs)
    # At T = 0 the Metropolis uniform is unused.
    a, b = state.clone(), state.clone()
    apply_sets_sa(a, a.clone(), arrays, sets, u, 0.0, 3)
    metro = u.copy()
    metro[..., -1] = 0.0
    apply_sets_sa(b, b.clone(), arrays, sets, metro, 0.0, 3)
    assert a.to_routes() == b.to_routes()
