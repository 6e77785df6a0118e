"""Every kind of bad input gives a clear, typed error that says where."""

import pytest
import torch

from pyg_routing.data import RoutingData
from pyg_routing.errors import InvalidInstanceError, InvalidSolutionError

POS = [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]


def cvrp(**overrides):
    kwargs = dict(demand=[0, 1, 2, 3], capacity=5)
    kwargs.update(overrides)
    pos = kwargs.pop("pos", POS)
    return RoutingData.from_instance("cvrp", pos, name="toy", **kwargs)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_coordinates(bad):
    pos = [row[:] for row in POS]
    pos[2][1] = bad
    with pytest.raises(InvalidInstanceError, match=r"instance 'toy', node 2: `pos` has a non-fin"):
        cvrp(pos=pos)


@pytest.mark.parametrize("pos", [[0.0, 1.0, 2.0], [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]], [[0.0, 0.0]]])
def test_wrong_coordinate_shapes(pos):
    with pytest.raises(InvalidInstanceError, match="pos|depot and at least one customer"):
        cvrp(pos=pos, demand=[0] * len(pos))


def test_wrong_demand_shape():
    with pytest.raises(InvalidInstanceError, match=r"`demand` must have shape \(4,\)"):
        cvrp(demand=[0, 1, 2])


def test_negative_demand_and_capacity():
    with pytest.raises(InvalidInstanceError, match="node 2: negative demand"):
        cvrp(demand=[0, 1, -2, 3])
    with pytest.raises(InvalidInstanceError, match="capacity must be positive"):
        cvrp(capacity=-1)


def test_demand_above_capacity_is_an_infeasible_instance():
    with pytest.raises(InvalidInstanceError, match="node 3: demand 9.0 exceeds the vehicle capac"):
        cvrp(demand=[0, 1, 2, 9])


def test_window_that_opens_after_it_closes():
    with pytest.raises(InvalidInstanceError, match="node 1: time window opens at 5.0 after it cl"):
        RoutingData.from_instance("vrptw", POS, demand=[0, 1, 1, 1], capacity=5,
                                  time_window=[[0, 9], [5, 2], [0, 9], [0, 9]],
                                  service_time=[0, 0, 0, 0])


def test_missing_problem_fields_and_unknown_problem():
    with pytest.raises(InvalidInstanceError, match="needs `time_window`"):
        RoutingData.from_instance("vrptw", POS, demand=[0, 1, 1, 1], capacity=5)
    with pytest.raises(InvalidInstanceError, match="unknown problem 'cvrpx'.*valid problems"):
        RoutingData.from_instance("cvrpx", POS)


@pytest.mark.parametrize("routes, pattern", [
    ([[1, 2]], r"1 customer\(s\) not visited: 3"),
    ([[1, 2], [3, 2]], r"route 1, node 2: customer visited twice \(already in route 0\)"),
    ([[1, 2, 7]], r"route 0, node 7: node id out of range"),
    ([[1, -1, 2, 3]], r"route 0, node -1: node id out of range"),
    ([[1, 0, 2, 3]], r"route 0, node 0: the depot must not appear inside a route"),
    ([[1, 2, 3], []], r"route 1: empty route"),
    ([[1, "x"]], r"route 0: a route must be a sequence of integer node ids"),
])
def test_broken_routes(routes, pattern):
    inst = cvrp()
    with pytest.raises(InvalidSolutionError, match=pattern):
        RoutingData.from_routes(inst, routes)


def test_tsp_must_have_one_route():
    inst = RoutingData.from_instance("tsp", POS)
    with pytest.raises(InvalidSolutionError, match="single vehicle, got 2 routes"):
        RoutingData.from_routes(inst, [[1], [2, 3]])


def test_bad_pickup_delivery_pairs():
    with pytest.raises(InvalidInstanceError, match="node 5: pickup/delivery node id out of range"):
        RoutingData.from_instance("pdtsp", POS, pickup_delivery_index=[[1], [5]])
    with pytest.raises(InvalidInstanceError, match="more than one pickup/delivery pair"):
        RoutingData.from_instance("pdtsp", POS, pickup_delivery_index=[[1, 2], [3, 1]])


def test_errors_leave_the_callers_objects_untouched():
    pos = torch.tensor(POS)
    demand = torch.tensor([0.0, 1.0, 2.0, 9.0])
    with pytest.raises(InvalidInstanceError):
        RoutingData.from_instance("cvrp", pos, demand=demand, capacity=5)
    assert torch.equal(demand, torch.tensor([0.0, 1.0, 2.0, 9.0]))
    routes = [[1, 2], [3, 2]]
    with pytest.raises(InvalidSolutionError):
        RoutingData.from_routes(cvrp(), routes)
    assert routes == [[1, 2], [3, 2]]


def test_raw_coordinates_of_a_time_window_problem_need_raw_times():
    with pytest.raises(InvalidInstanceError, match="needs `raw_time_window`"):
        RoutingData.from_instance("vrptw", POS, demand=[0, 1, 1, 1], capacity=5,
                                  time_window=[[0, 9]] * 4, service_time=[0] * 4,
                                  raw_pos=[[0, 0], [10, 0], [0, 10], [10, 10]], scale=10)
