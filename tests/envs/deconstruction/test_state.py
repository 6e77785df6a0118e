"""ProblemArrays and ToursState: construction, views, copies and typed errors."""

import numpy as np
import pytest
import torch

from pyg_routing.data import RoutingData
from pyg_routing.data.generators import make_generator
from pyg_routing.envs.base import UnsupportedProblemError
from pyg_routing.envs.deconstruction import ProblemArrays, ToursState, start_solutions
from pyg_routing.errors import InfeasibleSolutionError, InvalidInstanceError, InvalidSolutionError
from tests.envs.deconstruction.common import PROBLEMS, assert_valid, make_instances


def test_problem_arrays_fields_and_distances():
    inst, arrays = make_instances("vrptw", 12, seed=0, b=3)
    assert arrays.dist.shape == (3, 13, 13) and arrays.dist.dtype == np.float64
    assert np.array_equal(arrays.dist, arrays.dist.transpose(0, 2, 1))   # bit-symmetric
    ref = torch.cdist(inst.pos.double(), inst.pos.double()).numpy()
    np.testing.assert_allclose(arrays.dist, ref, atol=1e-12)
    assert arrays.problem.value == "vrptw" and arrays.num_customers == 12
    assert np.array_equal(arrays.tw, inst.time_window.double().numpy())
    _, cvrp = make_instances("cvrp", 12, seed=0)
    assert not cvrp.tw.any() and not cvrp.prize.any() and not cvrp.service.any()


def test_unsupported_problem_lists_the_supported_ones():
    with pytest.raises(UnsupportedProblemError, match="cvrp, vrptw, pcvrp.*'tsp'"):
        ProblemArrays.from_instances(make_generator("tsp", 10, seed=0).sample(1))


def test_vrptw_customer_that_cannot_be_served_alone():
    inst = make_generator("vrptw", 10, seed=0).sample(2)
    late = inst.time_window.clone()
    late[1, 4] = torch.tensor([0.0, 0.01])          # closes before anyone can get there
    with pytest.raises(InvalidInstanceError, match="instance 1, node 4: .*cannot be served"):
        ProblemArrays.from_instances(type(inst)(**{**inst.__dict__, "time_window": late}))
    back = inst.time_window.clone()
    back[0, 0, 1] = 0.0                             # the depot closes at once
    with pytest.raises(InvalidInstanceError, match="instance 0, node 1: .*back"):
        ProblemArrays.from_instances(type(inst)(**{**inst.__dict__, "time_window": back}))


@pytest.mark.parametrize("problem", PROBLEMS)
def test_from_routes_round_trip_and_views(problem):
    inst, arrays = make_instances(problem, 15, seed=1)
    # At most 3 customers (demand <= 27 <= capacity 30) per route; PCVRP leaves some out.
    routes = [[[3, 1, 7], [2], [5, 4, 6], [8, 9], [15, 14, 13], [12, 11, 10]],
              [[15, 14], [13, 12, 11], [10, 9], [1, 2, 3], [4, 5, 6], [7, 8]]]
    if problem == "pcvrp":
        routes = [routes[0][:3], routes[1][1:]]
    if problem == "vrptw":                        # singletons are always feasible
        routes = [[[c] for c in range(1, 16)], [[c] for c in range(15, 0, -1)]]
    state = ToursState.from_routes(arrays, routes, [0, 1])
    assert state.to_routes() == [sorted(r, key=lambda t: t[0]) for r in routes]
    assert_valid(state, arrays, inst)
    nb, labels = state.neighbours(), state.tour_labels()
    assert nb.shape == (2, 15, 2) and nb.dtype == torch.long and labels.dtype == torch.long
    for s, slot_routes in enumerate(routes):
        data = RoutingData.from_routes(inst[s], slot_routes)
        rid = data.route_id[1:]
        assert torch.equal(labels[s] >= 0, rid >= 0)
        for route in slot_routes:
            ext = [0, *route, 0]
            for j, c in enumerate(route):
                assert nb[s, c - 1].tolist() == [ext[j], ext[j + 2]]
                assert labels[s, c - 1] == labels[s, route[0] - 1]


def test_clone_take_copy_slots_and_recompute():
    inst, arrays = make_instances("cvrp", 20, seed=2)
    state = start_solutions(arrays, np.array([0, 1, 0], np.int32), rounds=5, rng=0)
    twin = state.clone()
    twin.succ[:] = 0
    assert state.succ.any()
    taken = state.take([2, 2, 0])
    assert taken.to_routes() == [state.to_routes()[i] for i in (2, 2, 0)]
    target = state.clone()
    target.copy_slots([0, 1], [2, 0])                  # overlapping fancy copy
    assert target.to_routes() == [state.to_routes()[i] for i in (2, 0, 2)]
    assert_valid(target, arrays, inst)
    other = start_solutions(arrays, np.array([1, 1, 1], np.int32), rounds=5, rng=9)
    target.copy_slots([2], [0], src=other)
    assert target.to_routes()[2] == other.to_routes()[0] and target.inst[2] == 1
    saved = state.cost.copy()
    state.cost[:] = 0
    state.length[state.size > 0] += 1
    state.recompute_costs(arrays)
    assert np.array_equal(state.cost, saved)


@pytest.mark.parametrize("routes, match", [
    ([[1, 2], [2, 3]], r"slot 0, route 1, customer 2: customer visited twice \(already in "
                       r"route 0\)"),
    ([[1, 1, 2, 3]], r"slot 0, route 0, customer 1: customer visited twice"),
    ([[1, 2], [0, 3]], r"slot 0, route 1, customer 0: the depot"),
    ([[1, 2], [3, 9]], r"slot 0, route 1, customer 9: customer id out of range"),
    ([[1, 2], [], [3]], r"slot 0, route 1: empty route"),
    ([[1.0, 2], [3]], r"slot 0, route 0: customer ids must be integers"),
    ([[1, 2]], r"slot 0: 1 customer\(s\) not visited: 3"),
])
def test_malformed_start_solutions(routes, match):
    _, arrays = make_instances("cvrp", 3, seed=0, b=1)
    with pytest.raises(InvalidSolutionError, match=match):
        ToursState.from_routes(arrays, [routes], [0])


def test_infeasible_start_solutions_name_slot_route_and_customer():
    _, arrays = make_instances("cvrp", 20, seed=0, b=1)
    with pytest.raises(InfeasibleSolutionError, match=r"slot 1, route 0, customer 4: route "
                                                      r"demand .* exceeds the capacity"):
        ToursState.from_routes(arrays, [[[c] for c in range(1, 21)],
                                        [list(range(4, 21)), [1, 2, 3]]], [0, 0])
    inst = make_generator("vrptw", 20, seed=0).sample(1)
    inst.capacity[:] = 1000.0                     # only the windows can fail
    arrays = ProblemArrays.from_instances(inst)
    order = sorted(range(1, 21), key=lambda c: -float(inst.time_window[0, c, 1]))
    with pytest.raises(InfeasibleSolutionError, match=r"slot 0, route 0, customer \d+: the "
                                                      r"vehicle arrives after"):
        ToursState.from_routes(arrays, [[order]], [0])


def test_check_catches_corrupted_arrays():
    inst, arrays = make_instances("cvrp", 20, seed=0)
    state = start_solutions(arrays, np.array([0, 1], np.int32), rounds=5, rng=0)
    state.check(arrays)
    tours = np.nonzero(state.size[1] >= 3)[0]
    t = int(tours[0])
    a = int(state.first[1, t])
    b = int(state.succ[1, a])
    broken = state.clone()
    broken.succ[1, a] = 0                                          # cuts the tour
    with pytest.raises(InvalidSolutionError, match=rf"slot 1, route {t}, customer {a}: its "
                                                   r"successor|slot 1, route"):
        broken.check(arrays)
    cycle = state.clone()                                          # b -> b: a self-loop
    cycle.succ[1, b], cycle.pred[1, b] = b, b
    with pytest.raises(InvalidSolutionError, match="slot 1"):
        cycle.check(arrays)
    wrong = state.clone()
    wrong.cost[0] += 1.0
    with pytest.raises(InvalidSolutionError, match="slot 0: stored cost"):
        wrong.check(arrays)
    stale = state.clone()
    stale.length[1, t] += 1e-3
    with pytest.raises(InvalidSolutionError, match=rf"slot 1, route {t}: stored length"):
        stale.check(arrays)
    bad_dtype = state.clone()
    bad_dtype.succ = bad_dtype.succ.astype(np.int64)
    with pytest.raises(InvalidSolutionError, match="ToursState.succ must be a int32"):
        bad_dtype.check(arrays)
    unvisited = state.clone()
    unvisited.tour[0, 5] = -1
    with pytest.raises(InvalidSolutionError, match="slot 0, customer 5: customer not visited"):
        unvisited.check(arrays)
