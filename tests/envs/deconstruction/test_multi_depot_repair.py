"""NDS's repair on several depots: the kernels against the pure-Python reference
decision for decision, against brute force on tiny instances (insertion keeps its
tour's depot, a new tour opens at the cheapest depot with a vehicle to spare), the
one-depot numbers through the same code, batch against one by one, and bad input."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyg_routing.data import RoutingData, make_generator, read_cordeau
from pyg_routing.data.benchmarks import BUNDLED_DIR
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.solvers import stack_instances
from pyg_routing.envs.deconstruction import (
    ProblemArrays,
    SISRDestroy,
    ToursState,
    apply_sets_sa,
    commit_sets,
    draw_start_randomness,
    draw_uniforms,
    evaluate_sets,
    start_solutions,
)
from pyg_routing.envs.deconstruction import repair_reference as ref
from pyg_routing.envs.deconstruction.depots import (
    data_solutions,
    kernel_order,
    to_kernel_routes,
)
from pyg_routing.errors import InfeasibleSolutionError, InvalidSolutionError
from pyg_routing.search import DestroyRepairSearch, MaxIterations
from tests.envs.deconstruction.common import TWO_SLOTS, hypothesis_settings, random_sets

SETTINGS = hypothesis_settings(20)
INST = TWO_SLOTS


def _instances(n: int, k: int, seed: int, b: int = 2, slack: int | None = None
               ) -> RoutingInstances:
    """``b`` CVRP instances with ``k`` depots; ``slack``: limit each depot to
    ``ceil(total demand / capacity / k) + slack`` vehicles (None: unlimited)."""
    inst = make_generator("cvrp", n, seed=seed, depots=k).sample(b)
    if slack is None:
        return inst
    need = torch.ceil(inst.demand.sum(1) / inst.capacity.reshape(-1) / k).long() + slack
    return dataclasses.replace(inst, depot_vehicles=need[:, None].expand(b, k).contiguous())


def _tours(state: ToursState, s: int) -> list:
    """Slot ``s`` in the reference's form: ``(depot, route)`` per tour."""
    return list(zip(state.route_depots()[s], state.to_routes()[s]))


def _assert_same(state: ToursState, arrays: ProblemArrays, solutions: list) -> None:
    for s, tours in enumerate(solutions):
        assert _tours(state, s) == ref.canonical(tours)
        assert state.cost[s] == ref.cost(arrays, int(state.inst[s]), tours)   # bit for bit


def _assert_valid(state: ToursState, inst: RoutingInstances, arrays: ProblemArrays) -> None:
    """The state's own check and the data layer's: own-depot routes, vehicles, cost."""
    state.check(arrays)
    routes, depots = data_solutions(state, arrays.num_depots)
    for s in range(len(state)):
        data = RoutingData.from_routes(inst[int(state.inst[s])], routes[s], depots=depots[s])
        data.check()
        assert abs(float(data.cost()) - state.cost[s]) <= 1e-5 * max(1.0, state.cost[s])


@settings(**SETTINGS)
@given(n=st.integers(8, 30), k=st.integers(2, 4), seed=st.integers(0, 10**6),
       rounds=st.integers(0, 15), slack=st.sampled_from([None, None, 0, 1]))
def test_start_solutions_match_reference(n, k, seed, rounds, slack):
    inst = _instances(n, k, seed, slack=slack)
    arrays = ProblemArrays.from_instances(inst)
    removal, u = draw_start_randomness(len(INST), n, rounds, max(1, n // 4), rng=seed)
    try:
        routes = ref.start_solutions(arrays, INST, removal, u)
    except ValueError:                     # the construction does not fit the fleet
        with pytest.raises(InfeasibleSolutionError, match="cannot fit every customer"):
            start_solutions(arrays, INST, rounds=rounds, removal=removal, u=u)
        return
    state = start_solutions(arrays, INST, rounds=rounds, removal=removal, u=u)
    _assert_same(state, arrays, routes)
    _assert_valid(state, inst, arrays)


@settings(**SETTINGS)
@given(n=st.integers(8, 30), k=st.integers(2, 4), seed=st.integers(0, 10**6),
       width=st.integers(1, 8), num_sets=st.integers(1, 8), recreate_n=st.integers(1, 4),
       temperature=st.sampled_from([0.0, 0.05, 1.0]), slack=st.sampled_from([None, 1, 2]))
def test_sets_match_reference(n, k, seed, width, num_sets, recreate_n, temperature, slack):
    inst = _instances(n, k, seed, slack=slack)
    arrays = ProblemArrays.from_instances(inst)
    state = start_solutions(arrays, INST, rounds=5, num_removed=max(1, n // 4), rng=seed)
    before = [_tours(state, s) for s in range(len(state))]
    rng = np.random.default_rng(seed)
    sets = random_sets(rng, len(INST), num_sets, width, n)
    u = draw_uniforms(rng, sets.shape[:2], width, recreate_n)
    costs = evaluate_sets(state, arrays, sets, u, recreate_n)
    np.testing.assert_array_equal(costs, ref.evaluate_sets(arrays, before, INST, sets, u,
                                                           recreate_n))
    which = np.argmin(costs, axis=1)
    committed = state.clone()
    commit_sets(committed, arrays, sets, u, which, recreate_n)
    _assert_same(committed, arrays, ref.commit_sets(arrays, before, INST, sets, u, which,
                                                    recreate_n))
    best = state.clone()
    accepted = apply_sets_sa(state, best, arrays, sets, u, temperature, recreate_n)
    cur, _, top, _, acc = ref.apply_sets_sa(arrays, before, INST, sets, u, temperature,
                                            recreate_n)
    _assert_same(state, arrays, cur)
    _assert_same(best, arrays, top)
    assert accepted.tolist() == acc
    _assert_valid(state, inst, arrays)


def _tiny(vehicles: list[int] | None = None, demand: list[int] | None = None
          ) -> tuple[RoutingInstances, ProblemArrays]:
    """Two depots and six customers (unit demands by default), capacity 4."""
    pos = torch.tensor([[0.1, 0.1], [0.9, 0.8], [0.2, 0.3], [0.35, 0.15], [0.7, 0.9],
                        [0.95, 0.6], [0.5, 0.5], [0.15, 0.9]])
    n = 6 if demand is None else len(demand)
    data = RoutingData.from_instance("cvrp", pos[:2 + n],
                                     demand=[0, 0] + ([1] * 6 if demand is None else demand),
                                     capacity=4, num_depots=2, depot_vehicles=vehicles)
    inst = stack_instances([data])
    return inst, ProblemArrays.from_instances(inst)


def _data_cost(inst: RoutingInstances, routes: list, depots: list) -> float:
    return float(RoutingData.from_routes(inst[0], routes, depots=depots).cost())


def test_reinsertion_keeps_its_tours_depot_brute_force():
    # every customer of every route removed alone: its best position in the rebuilt
    # route, brute-forced over the data layer's costs (the route's own depot at both ends)
    inst, arrays = _tiny()
    routes, depots = [[2, 3, 4], [5, 6, 7]], [1, 0]      # data ids; each far from its depot
    state = ToursState.from_routes(arrays, to_kernel_routes([routes], 2), [0],
                                   depots=[depots])
    for r, route in enumerate(routes):
        for c in route:
            rest = [v for v in route if v != c]
            best = min(_data_cost(inst, [*routes[:r], rest[:p] + [c] + rest[p:],
                                         *routes[r + 1:]], depots)
                       for p in range(len(rest) + 1))
            got = evaluate_sets(state, arrays, np.array([[[c - 1]]], np.int32),
                                recreate_n=1, rng=0)[0, 0]
            assert got == pytest.approx(best, rel=1e-6)


@pytest.mark.parametrize("vehicles", [None, [1, 2], [2, 1]])
def test_new_tour_opens_at_the_cheapest_depot_with_a_vehicle_brute_force(vehicles):
    # a customer alone in its route is removed: its route is dropped and it opens a new
    # one, at the depot of the cheapest out-and-back trip among those with a vehicle left
    inst, arrays = _tiny(vehicles)
    for c in range(2, 8):
        rest = [v for v in range(2, 8) if v != c]
        # the others: one route of depot 0; c alone at depot 1 (or 0 when 1 has one car)
        home = 1 if (vehicles is None or vehicles[1] >= 1) else 0
        routes, depots = [rest[:4], rest[4:], [c]], [0, 1 if home == 0 else 0, home]
        counts = np.bincount(depots, minlength=2)
        if vehicles is not None and (counts > np.asarray(vehicles)).any():
            continue
        state = ToursState.from_routes(arrays, to_kernel_routes([routes], 2), [0],
                                       depots=[depots])
        used = np.bincount(depots[:2], minlength=2)
        allowed = [d for d in range(2) if vehicles is None or used[d] < vehicles[d]]
        best = min(_data_cost(inst, [*routes[:2], [c]], [*depots[:2], d]) for d in allowed)
        got = evaluate_sets(state, arrays, np.array([[[c - 1]]], np.int32), recreate_n=1,
                            rng=0)[0, 0]
        assert got == pytest.approx(best, rel=1e-6)


def test_over_the_fleet_is_never_accepted_nor_committed():
    # demands 1, 1, 3, 3 and one vehicle per depot: removed together and reinserted in
    # this order, the two 1s share a tour, each 3 needs its own: a third tour, and no
    # depot has a vehicle left
    inst, arrays = _tiny([1, 1], demand=[1, 1, 3, 3])
    routes, depots = [[2, 4], [3, 5]], [0, 1]
    state = ToursState.from_routes(arrays, to_kernel_routes([routes], 2), [0], depots=[depots])
    sets = np.array([[[1, 2, 3, 4]]], np.int32)
    u = draw_uniforms(0, (1, 1), 4, 1)
    assert evaluate_sets(state, arrays, sets, u, recreate_n=1)[0, 0] == np.inf
    assert ref.evaluate_sets(arrays, [list(zip(depots, to_kernel_routes([routes], 2)[0]))],
                             [0], sets, u, 1)[0, 0] == np.inf
    before = state.to_routes()
    commit_sets(state, arrays, sets, u, np.array([0]), 1)
    assert state.to_routes() == before
    best = state.clone()
    assert apply_sets_sa(state, best, arrays, sets, u, temperature=1e9,
                         recreate_n=1).tolist() == [0]
    assert state.to_routes() == before
    state.check(arrays)


def test_one_depot_numbers_through_the_multi_depot_code():
    # a second depot far outside the square is never the cheapest: the tours and the
    # costs equal those of the one-depot instance bit for bit
    one = make_generator("cvrp", 25, seed=5).sample(2)
    pos = torch.cat([one.pos[:, :1], torch.full((2, 1, 2), 50.0), one.pos[:, 1:]], dim=1)
    demand = torch.cat([one.demand[:, :1], torch.zeros(2, 1), one.demand[:, 1:]], dim=1)
    two = RoutingInstances(one.problem, pos, demand=demand, capacity=one.capacity,
                           num_depots=2)
    removal, u = draw_start_randomness(4, 25, 10, 6, rng=1)
    states = []
    for inst in (one, two):
        arrays = ProblemArrays.from_instances(inst)
        state = start_solutions(arrays, INST, rounds=10, removal=removal, u=u)
        best = state.clone()
        rng = np.random.default_rng(2)
        for _ in range(3):
            sets = SISRDestroy().propose(state, arrays, 10, rng)
            apply_sets_sa(state, best, arrays, sets, temperature=0.05, rng=rng)
        states.append(best)
    assert states[0].to_routes() == states[1].to_routes()
    assert set(itertools.chain(*states[1].route_depots())) == {0}
    np.testing.assert_array_equal(states[0].cost, states[1].cost)


def test_batch_equals_one_by_one():
    inst = _instances(15, 3, seed=7, b=3, slack=1)
    arrays = ProblemArrays.from_instances(inst)
    slots = np.repeat(np.arange(3, dtype=np.int32), 2)
    removal, u = draw_start_randomness(6, 15, 6, 4, rng=3)
    whole = start_solutions(arrays, slots, rounds=6, removal=removal, u=u)
    for b in range(3):
        single = ProblemArrays.from_instances(stack_instances([inst[b]]))
        part = start_solutions(single, np.zeros(2, np.int32), rounds=6,
                               removal=removal[2 * b:2 * b + 2], u=u[2 * b:2 * b + 2])
        assert part.to_routes() == whole.to_routes()[2 * b:2 * b + 2]
        assert part.route_depots() == whole.route_depots()[2 * b:2 * b + 2]
        np.testing.assert_array_equal(part.cost, whole.cost[2 * b:2 * b + 2])


def test_kernel_order_and_arrays():
    assert kernel_order(1, 5).tolist() == [0, 1, 2, 3, 4]
    assert kernel_order(3, 7).tolist() == [0, 3, 4, 5, 6, 1, 2]
    inst, arrays = _tiny([1, 2])
    assert arrays.num_customers == 6 and arrays.num_depots == 2
    d = inst.travel.dense()[0].double().numpy()
    order = kernel_order(2, 8)
    np.testing.assert_allclose(arrays.dist[0], d[np.ix_(order, order)], atol=1e-6)
    assert arrays.fleet.tolist() == [[1, 2]]


def test_bad_routes_and_fleets_are_refused_by_name():
    _, arrays = _tiny([1, 2])
    routes = [[[1, 2, 3], [4, 5, 6]]]
    with pytest.raises(InvalidSolutionError, match="2 depots: give each route's depot"):
        ToursState.from_routes(arrays, routes, [0])
    with pytest.raises(InvalidSolutionError, match="slot 0, route 1: depot 2 is not one of "
                                                   "the depots 0..1"):
        ToursState.from_routes(arrays, routes, [0], depots=[[0, 2]])
    with pytest.raises(InvalidSolutionError, match="one depot per route \\(2\\), got 1"):
        ToursState.from_routes(arrays, routes, [0], depots=[[0]])
    with pytest.raises(InfeasibleSolutionError, match="slot 0: depot 0 opens 2 routes, but "
                                                      "has 1 vehicles"):
        ToursState.from_routes(arrays, routes, [0], depots=[[0, 0]])
    tight = _instances(12, 2, seed=0, b=1)
    tight = dataclasses.replace(tight, depot_vehicles=torch.ones(1, 2, dtype=torch.long))
    with pytest.raises(InfeasibleSolutionError, match="instance 0: NDS's start cannot fit "
                                                      "every customer"):
        start_solutions(ProblemArrays.from_instances(tight), np.zeros(1, np.int32), rng=0)


def test_sisr_search_on_cordeau_keeps_each_depots_vehicles():
    data = read_cordeau(BUNDLED_DIR / "cordeau" / "p01.txt")
    inst = stack_instances([data])
    res = DestroyRepairSearch(augment=2, rollouts=20).run(inst, SISRDestroy(),
                                                          MaxIterations(5), seed=0)
    routed = RoutingData.from_routes(inst[0], res.routes[0], depots=res.depots[0])
    routed.check()                                      # own depots, 4 vehicles each
    assert float(routed.cost()) == pytest.approx(float(res.cost[0]), rel=1e-5)
    assert np.bincount(res.depots[0], minlength=4).max() <= 4
    assert res.cost[0] <= res.initial_cost[0]
