"""A ``Batch`` of different problems keeps every field or is refused."""

import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.data import RoutingData
from pyg_routing.errors import InfeasibleSolutionError, InvalidInstanceError

POS = [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]


def over_capacity_cvrp() -> RoutingData:
    """One route serving demand 6 with capacity 4: infeasible."""
    inst = RoutingData.from_instance("cvrp", POS, demand=[0, 3, 3], capacity=4, name="heavy")
    return RoutingData.from_routes(inst, [[1, 2]])


def tsp() -> RoutingData:
    return RoutingData.from_routes(RoutingData.from_instance("tsp", POS, name="tour"), [[1, 2]])


def vrptw() -> RoutingData:
    inst = RoutingData.from_instance("vrptw", POS, demand=[0, 1, 1], capacity=4,
                                     time_window=[[0, 10], [0, 10], [0, 10]],
                                     service_time=[0, 0, 0], name="windows")
    return RoutingData.from_routes(inst, [[1], [2]])


def pcvrp() -> RoutingData:
    inst = RoutingData.from_instance("pcvrp", POS, demand=[0, 1, 1], capacity=4,
                                     prize=[0, 5, 5], name="prizes")
    return RoutingData.from_routes(inst, [[1, 2]])


@pytest.mark.parametrize("method", ["check", "cost", "is_feasible", "arc_lengths"])
def test_over_capacity_cvrp_batched_after_a_tsp_is_refused(method):
    data = [tsp(), over_capacity_cvrp()]
    batch = Batch.from_data_list(data)
    assert "demand" not in batch          # what PyG does: the first instance's fields only
    with pytest.raises(InvalidInstanceError) as info:
        getattr(batch, method)()
    assert str(info.value) == (
        "batch mixes problems 'tsp' and 'cvrp'; their fields (demand, capacity) cannot be "
        "batched (PyG keeps only the fields of the first instance, problem 'tsp'): batch "
        "one problem at a time")
    assert "demand" in data[1] and "demand" not in data[0]   # the inputs are untouched


def test_over_capacity_cvrp_batched_before_a_tsp_is_refused_by_pyg():
    # PyG itself fails when a later instance lacks a field of the first one.
    with pytest.raises(KeyError, match="demand"):
        Batch.from_data_list([over_capacity_cvrp(), tsp()])


@pytest.mark.parametrize("first, second, fields", [
    (over_capacity_cvrp, vrptw, "time_window, service_time"),
    (over_capacity_cvrp, pcvrp, "prize"),
    (tsp, vrptw, "demand, capacity, time_window, service_time"),
])
def test_every_lost_field_is_named(first, second, fields):
    batch = Batch.from_data_list([first(), second()])
    a, b = batch.problem
    with pytest.raises(InvalidInstanceError,
                       match=rf"^batch mixes problems '{a}' and '{b}'; their fields "
                             rf"\({fields}\) cannot be batched"):
        batch.check()


def test_problems_with_the_same_fields_still_batch():
    ok = RoutingData.from_routes(
        RoutingData.from_instance("cvrp", POS, demand=[0, 1, 1], capacity=4, name="light"),
        [[1, 2]])
    batch = Batch.from_data_list([ok, over_capacity_cvrp()])
    assert batch.is_feasible().tolist() == [True, False]
    with pytest.raises(InfeasibleSolutionError,
                       match=r"^instance 'heavy': route 0 exceeds the capacity 4"):
        batch.check()
    assert torch.allclose(batch.cost(), torch.stack([ok.cost(), over_capacity_cvrp().cost()]))
    two_tsps = Batch.from_data_list([tsp(), tsp()])
    two_tsps.check()
    assert two_tsps.is_feasible().all()
