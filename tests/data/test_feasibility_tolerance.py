"""The tolerance of the feasibility tests on floats (issue 28, class 6c): stated once
(:data:`TIME_RTOL`, :data:`CAPACITY_RTOL`) and used by the solution check and the
load-time reachability rule alike. An arrival 5e-8 after a window's end (float32
schedules such as NDS's start solutions) is accepted; 1e-3 late is refused."""

import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.data import RoutingData, RoutingInstances, feasibility
from pyg_routing.data.feasibility import (
    CAPACITY_RTOL,
    TIME_RTOL,
    capacity_limit,
    check_servable_alone,
    time_tolerance,
)
from pyg_routing.errors import InfeasibleSolutionError, InvalidInstanceError

ACCEPTED, REFUSED = 5e-8, 1e-3
# depot (0, 0), customer 1 at (3, 4), customer 2 at (0, 4): d(0,1) = 5, d(0,2) = 4,
# d(2,1) = 3, all exact in float64; no service; the depot closes at 20 (tol = 2e-5).
POS = [[0.0, 0.0], [3.0, 4.0], [0.0, 4.0]]


def _vrptw(c1_close: float = 20.0, depot_close: float = 20.0) -> RoutingData:
    """An instance in float64 "raw" units (as a benchmark's), so 5e-8 is exact."""
    tw = [[0.0, depot_close], [0.0, c1_close], [0.0, 20.0]]
    return RoutingData.from_instance(
        "vrptw", POS, demand=[0, 1, 1], capacity=10, time_window=tw, service_time=[0, 0, 0],
        raw_pos=POS, raw_time_window=tw, raw_service_time=[0.0, 0.0, 0.0], rounding="none")


def test_the_tolerances_are_stated_once():
    assert TIME_RTOL == 1e-6 and CAPACITY_RTOL == 1e-9
    assert time_tolerance(torch.tensor([0.5, 20.0])).tolist() == [1e-6, 1e-6 * 20.0]
    assert float(capacity_limit(torch.tensor(10.0))) == 10.0 * (1 + 1e-9)
    source = open(feasibility.__file__).read()
    assert source.count("1e-6") == 1 and source.count("1e-9") == 1


@pytest.mark.parametrize("late, ok", [(ACCEPTED, True), (REFUSED, False)])
def test_a_late_arrival_at_a_customer(late, ok):
    # route [2, 1]: arrives at customer 1 at 4 + 3 = 7; its window closes at 7 - late
    sol = RoutingData.from_routes(_vrptw(c1_close=7.0 - late), [[2, 1]])
    assert bool(sol.is_feasible()) is ok
    if ok:
        sol.check()
    else:
        with pytest.raises(InfeasibleSolutionError, match="node 1: service cannot start"):
            sol.check()


@pytest.mark.parametrize("late, ok", [(ACCEPTED, True), (REFUSED, False)])
def test_a_late_return_to_the_depot(late, ok):
    # route [1, 2]: back at 5 + 3 + 4 = 12; the depot closes at 12 - late
    sol = RoutingData.from_routes(_vrptw(depot_close=12.0 - late), [[1, 2]])
    assert bool(sol.is_feasible()) is ok
    if not ok:
        with pytest.raises(InfeasibleSolutionError, match="returns to the depot after it closes"):
            sol.check()


@pytest.mark.parametrize("late, ok", [(ACCEPTED, True), (REFUSED, False)])
def test_the_load_time_rule_has_the_same_tolerance(late, ok):
    # the direct trip reaches customer 1 at 5; its window closes at 5 - late
    data = _vrptw(c1_close=5.0 - late)
    dense = RoutingInstances(
        "vrptw", torch.tensor([POS], dtype=torch.float64),
        demand=torch.tensor([[0.0, 1, 1]]), capacity=torch.tensor([10.0]),
        time_window=torch.tensor([[[0.0, 20], [0, 5 - late], [0, 20]]], dtype=torch.float64),
        service_time=torch.zeros(1, 3, dtype=torch.float64))
    if ok:
        check_servable_alone(data)
        dense.check()
    else:
        for check in (lambda: check_servable_alone(data), dense.check):
            with pytest.raises(InvalidInstanceError, match="node 1: the customer cannot be "
                                                           "served even alone"):
                check()


def test_a_float32_schedule_one_rounding_step_late_is_accepted():
    """NDS-like float32 windows (horizon 1.8): the direct arrival at 0.625 is one float32
    step (~6e-8) after the window's end."""
    close = torch.nextafter(torch.tensor(0.625), torch.tensor(0.0))
    assert 0 < 0.625 - float(close) < 1e-7
    tw = torch.tensor([[[0.0, 1.8], [0.0, float(close)]]])
    inst = RoutingInstances("vrptw", torch.tensor([[[0.0, 0.0], [0.375, 0.5]]]),
                            demand=torch.tensor([[0.0, 1.0]]), capacity=torch.tensor([1.0]),
                            time_window=tw, service_time=torch.zeros(1, 2))
    inst.check()
    sol = RoutingData.from_routes(inst[0], [[1]])
    sol.check()
    inst.time_window[0, 1, 1] = 0.625 - REFUSED
    with pytest.raises(InvalidInstanceError, match="node 1: the customer cannot be served"):
        inst.check()


def test_the_tolerance_is_per_instance_in_a_batch():
    """An instance's verdict does not depend on its batch-mates: with a long-horizon
    instance in the batch (tol 5e-3), 1e-3 late is still late for a short one."""
    short = RoutingData.from_routes(_vrptw(c1_close=7.0 - REFUSED), [[2, 1]])
    tw = [[0.0, 5000.0], [0.0, 5000.0], [0.0, 5000.0]]
    long = RoutingData.from_routes(RoutingData.from_instance(
        "vrptw", POS, demand=[0, 1, 1], capacity=10, time_window=tw, service_time=[0, 0, 0],
        raw_pos=POS, raw_time_window=tw, raw_service_time=[0.0, 0.0, 0.0]), [[1, 2]])
    batch = Batch.from_data_list([long, short])
    assert batch.is_feasible().tolist() == [True, False]
    with pytest.raises(InfeasibleSolutionError, match="instance 1: route 0, node 1"):
        batch.check()


@pytest.mark.parametrize("excess, ok", [(1e-10, True), (1e-6, False)])
def test_the_capacity_tolerance(excess, ok):
    data = RoutingData.from_instance("cvrp", POS, demand=[0, 0.5, 0.5 + excess],
                                     capacity=torch.tensor(1.0, dtype=torch.float64))
    data.demand = data.demand.double()
    data.demand[2] = 0.5 + excess
    sol = RoutingData.from_routes(data, [[1, 2]])
    assert bool(sol.is_feasible()) is ok
