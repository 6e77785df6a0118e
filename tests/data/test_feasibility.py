import random

import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.data import RoutingData
from pyg_routing.data.evaluation import service_start_times
from pyg_routing.data.generators import PDTSPGenerator, VRPTWGenerator
from pyg_routing.data.naive import naive_start_times
from pyg_routing.errors import InfeasibleSolutionError, InvalidSolutionError, ZeroLengthRouteError
from tests.helpers import random_routes


def test_feasible_solution_passes(small_cvrp):
    data = RoutingData.from_routes(small_cvrp, [[1, 2, 3], [4]])
    assert data.check() is None
    assert bool(data.is_feasible())


def test_capacity_exceeded_names_instance_and_route(small_cvrp):
    data = RoutingData.from_routes(small_cvrp, [[1], [2, 3, 4]])
    with pytest.raises(InfeasibleSolutionError, match=r"route 1 exceeds the capacity 8"):
        data.check()
    batch = Batch.from_data_list([RoutingData.from_routes(small_cvrp, [[1, 2, 3], [4]]), data])
    assert batch.is_feasible().tolist() == [True, False]
    with pytest.raises(InfeasibleSolutionError, match=r"instance 1: route 1"):
        batch.check()


def test_single_vrptw_customers_are_always_feasible_and_windows_are_checked():
    inst = VRPTWGenerator(10, seed=0, capacity=100).sample(1)[0]
    # The generator guarantees every out-and-back route is feasible.
    RoutingData.from_routes(inst, [[v] for v in range(1, 11)]).check()
    # Visiting everything in one route in a random order is (almost surely) late somewhere.
    bad = RoutingData.from_routes(inst, [list(range(10, 0, -1))])
    with pytest.raises(InfeasibleSolutionError, match="time window|returns to the depot"):
        bad.check()


def test_time_window_violation_names_the_node():
    pos = torch.tensor([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    tw = torch.tensor([[0.0, 10.0], [0.0, 5.0], [0.0, 1.5]])
    inst = RoutingData.from_instance("vrptw", pos, demand=[0, 1, 1], capacity=5,
                                     time_window=tw, service_time=[0, 0, 0])
    with pytest.raises(InfeasibleSolutionError, match=r"node 2: service cannot start"):
        RoutingData.from_routes(inst, [[1, 2]]).check()
    late_return = RoutingData.from_instance(
        "vrptw", pos, demand=[0, 1, 1], capacity=5, service_time=[0, 0, 0],
        time_window=torch.tensor([[0.0, 3.0], [0.0, 5.0], [0.0, 5.0]]))
    with pytest.raises(InfeasibleSolutionError, match="returns to the depot"):
        RoutingData.from_routes(late_return, [[1, 2]]).check()


def test_waiting_is_allowed():
    pos = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    inst = RoutingData.from_instance("vrptw", pos, demand=[0, 1], capacity=5,
                                     time_window=[[0, 10], [4, 5]], service_time=[0, 1])
    RoutingData.from_routes(inst, [[1]]).check()


def test_start_times_match_the_sequential_recurrence():
    inst = VRPTWGenerator(25, seed=4).sample(1)[0]
    routes = random_routes(25, random.Random(4))
    data = RoutingData.from_routes(inst, routes)
    got = service_start_times(data.edge_index, data.depot_mask, data.arc_lengths(),
                              inst.time_window, inst.service_time)
    ref = torch.tensor(naive_start_times(inst.pos.double(), routes,
                                         inst.time_window.double(),
                                         inst.service_time.double()), dtype=torch.float64)
    torch.testing.assert_close(got[1:], ref[1:], rtol=1e-6, atol=1e-6)


def test_pickup_after_delivery_is_infeasible():
    inst = PDTSPGenerator(4, seed=0).sample(1)[0]   # pairs (1, 3) and (2, 4)
    RoutingData.from_routes(inst, [[1, 2, 3, 4]]).check()
    with pytest.raises(InfeasibleSolutionError, match=r"node 3: delivery is not visited after "
                                                       r"its pickup 1"):
        RoutingData.from_routes(inst, [[3, 2, 1, 4]]).check()


def test_tampered_route_graph_is_caught(small_cvrp):
    data = RoutingData.from_routes(small_cvrp, [[1, 2], [3, 4]])
    data.edge_index = torch.tensor([[0, 1, 2, 0, 3, 4], [1, 2, 0, 3, 2, 0]])
    data._set_route_quantities()
    with pytest.raises(InvalidSolutionError, match="visited more than once|not visited"):
        data.check()


def test_zero_length_route_is_reported():
    pos = torch.tensor([[0.5, 0.5], [0.5, 0.5], [0.9, 0.1]])
    inst = RoutingData.from_instance("cvrp", pos, demand=[0, 1, 1], capacity=5)
    data = RoutingData.from_routes(inst, [[1], [2]])
    assert data.route_length[1] == 0
    with pytest.raises(ZeroLengthRouteError, match="route 0, node 1"):
        data.check()
    data.check(allow_zero_length=True)


def test_pickup_delivery_capacity_counts_the_running_load():
    # Two pairs of 3 units, capacity 5: carrying both at once is infeasible, in turn is fine.
    pos = torch.rand(5, 2, generator=torch.Generator().manual_seed(0))
    inst = RoutingData.from_instance("pdptw", pos, demand=[0, 3, 3, -3, -3], capacity=5,
                                     pickup_delivery_index=[[1, 2], [3, 4]],
                                     time_window=[[0, 99]] * 5, service_time=[0] * 5)
    RoutingData.from_routes(inst, [[1, 3, 2, 4]]).check()
    with pytest.raises(InfeasibleSolutionError, match="largest load 6"):
        RoutingData.from_routes(inst, [[1, 2, 3, 4]]).check()
