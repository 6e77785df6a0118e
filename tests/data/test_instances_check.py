"""``RoutingInstances.check``: vectorized validation of a dense batch."""

from dataclasses import fields, replace

import pytest
import torch

from pyg_routing.data import RoutingInstances, make_generator
from pyg_routing.data.solvers.constructive import nearest_neighbor, sweep
from pyg_routing.data.solvers.insertion import cheapest_insertion
from pyg_routing.errors import InvalidInstanceError

PROBLEMS = ["tsp", "cvrp", "vrptw", "pcvrp", "pdtsp"]


def snapshot(inst: RoutingInstances) -> dict:
    return {f.name: (getattr(inst, f.name).clone() if torch.is_tensor(getattr(inst, f.name))
                     else getattr(inst, f.name)) for f in fields(inst)}


def assert_unchanged(inst: RoutingInstances, before: dict) -> None:
    for key, value in before.items():
        now = getattr(inst, key)
        if torch.is_tensor(value):
            torch.testing.assert_close(now, value, rtol=0, atol=0, equal_nan=True)
        else:
            assert now == value


def sample(problem: str, **changes) -> RoutingInstances:
    """A valid batch of 4 instances of 10 customers, with copies of its tensors
    (so a test can break them) and ``changes`` applied."""
    inst = make_generator(problem, 10, seed=0).sample(4)
    copies = {f.name: getattr(inst, f.name).clone() for f in fields(inst)
              if torch.is_tensor(getattr(inst, f.name))}
    return replace(inst, **{**copies, **changes})


def fails(inst: RoutingInstances, message: str) -> None:
    """``inst.check()`` raises InvalidInstanceError with exactly ``message`` as its
    start, and leaves ``inst`` as it was."""
    before = snapshot(inst)
    with pytest.raises(InvalidInstanceError) as info:
        inst.check()
    assert str(info.value).startswith(message), str(info.value)
    assert_unchanged(inst, before)


@pytest.mark.parametrize("problem", PROBLEMS)
def test_a_generated_batch_passes_and_is_not_modified(problem):
    inst = make_generator(problem, 10, seed=0).sample(4)
    before = snapshot(inst)
    assert inst.check() is None
    assert_unchanged(inst, before)


# ----------------------------------------------------------------- structure
def test_empty_batch():
    inst = sample("cvrp")
    fails(inst[torch.zeros(4, dtype=torch.bool)], "no instances: `pos` has shape (0, 11, 2)")


def test_pos_shape_dtype_and_size():
    fails(sample("tsp", pos=torch.rand(10, 2)), "`pos` must have shape [B, N, 2], got (10, 2)")
    fails(sample("tsp", pos=torch.rand(4, 10, 3)), "`pos` must have shape [B, N, 2], got (4, ")
    fails(sample("tsp", pos=torch.rand(4, 1, 2)),
          "an instance needs a depot and at least one customer, got 1 node(s)")
    fails(sample("tsp", pos=torch.randint(0, 9, (4, 10, 2))),
          "`pos` must be a floating-point tensor, got torch.int64")
    fails(sample("tsp", pos=[[0.0, 0.0]]), "`pos` must be a torch.Tensor, got list")


@pytest.mark.parametrize("problem, missing", [("cvrp", "demand"), ("cvrp", "capacity"),
                                              ("vrptw", "time_window"),
                                              ("vrptw", "service_time"), ("pcvrp", "prize"),
                                              ("pdtsp", "pickup_delivery_index")])
def test_fields_the_problem_needs(problem, missing):
    fails(sample(problem, **{missing: None}), f"problem '{problem}' needs `{missing}`")


@pytest.mark.parametrize("key, value, message", [
    ("demand", torch.zeros(4, 10), "`demand` must have shape [B, N] = (4, 11), got (4, 10)"),
    ("capacity", torch.full((4, 1), 30.0), "`capacity` must have shape [B] = (4,), got (4, 1)"),
    ("time_window", torch.zeros(4, 11), "`time_window` must have shape [B, N, 2] = (4, 11, 2)"),
    ("service_time", torch.zeros(3, 11), "`service_time` must have shape [B, N] = (4, 11)"),
    ("demand", torch.zeros(4, 11, dtype=torch.bool), "`demand` must hold real numbers, got "
                                                      "torch.bool"),
    ("demand", torch.zeros(4, 11, device="meta"), "`demand` is on meta but `pos` is on cpu"),
    ("capacity", [30.0] * 4, "`capacity` must be a torch.Tensor, got list"),
])
def test_field_shapes_dtypes_and_devices(key, value, message):
    fails(sample("vrptw", **{key: value}), message)


def test_pickup_delivery_pairs():
    fails(sample("pdtsp", pickup_delivery_index=torch.tensor([[1, 2], [11, 7]])),
          "node 11: pickup/delivery node id out of range 1..10")
    fails(sample("pdtsp", pickup_delivery_index=torch.tensor([[1, 2], [3, 1]])),
          "node 1: node appears in more than one pickup/delivery pair")
    fails(sample("pdtsp", pickup_delivery_index=torch.tensor([[1.0], [6.0]])),
          "`pickup_delivery_index` must hold integer node ids, got torch.float32")


# ----------------------------------------------------------------- values
def broken(problem: str, key: str, index: tuple, value: float) -> RoutingInstances:
    inst = sample(problem)
    getattr(inst, key)[index] = value
    return inst


@pytest.mark.parametrize("bad", [float("inf"), -float("inf"), float("nan")])
def test_non_finite_coordinates(bad):
    inst = broken("cvrp", "pos", (2, 7, 1), bad)
    fails(inst, "instance 2, node 7: `pos` has a non-finite value ([")
    with pytest.raises(InvalidInstanceError, match=r"^instance 2, node 7: `pos` has a non-fin"):
        nearest_neighbor(inst)          # heuristics validate their input first


@pytest.mark.parametrize("problem, key, index, message", [
    ("cvrp", "demand", (1, 3), "instance 1, node 3: `demand` has a non-finite value (inf)"),
    ("cvrp", "capacity", (3,), "instance 3: `capacity` has a non-finite value (inf)"),
    ("vrptw", "time_window", (0, 9, 1),
     "instance 0, node 9: `time_window` has a non-finite value ([0."),
    ("vrptw", "service_time", (2, 4), "instance 2, node 4: `service_time` has a non-finite"),
    ("pcvrp", "prize", (1, 5), "instance 1, node 5: `prize` has a non-finite value (inf)"),
])
def test_non_finite_values(problem, key, index, message):
    fails(broken(problem, key, index, float("inf")), message)


def test_nan_capacity():
    fails(broken("cvrp", "capacity", (1,), float("nan")),
          "instance 1: `capacity` has a non-finite value (nan)")


def test_demand_rules():
    fails(broken("cvrp", "demand", (2, 0), 1.0),
          "instance 2, node 0: the depot must have demand 0, got 1.0")
    fails(broken("cvrp", "demand", (1, 6), -2.0), "instance 1, node 6: negative demand -2.0")
    fails(broken("cvrp", "demand", (3, 4), 31.0), "instance 3, node 4: demand 31.0 exceeds "
                                                  "the vehicle capacity 30.0")
    fails(broken("cvrp", "capacity", (2,), 0.0), "instance 2: capacity must be positive, got 0.0")
    fails(broken("cvrp", "capacity", (1,), -5.0), "instance 1: capacity must be positive")


def test_window_service_and_prize_rules():
    inst = sample("vrptw")
    inst.time_window[1, 8] = torch.tensor([0.75, 0.25])
    fails(inst, "instance 1, node 8: time window opens at 0.75 after it closes at 0.25")
    fails(broken("vrptw", "service_time", (3, 2), -0.5),
          "instance 3, node 2: negative service time -0.5")
    fails(broken("pcvrp", "prize", (0, 10), -1.0), "instance 0, node 10: negative prize -1.0")


def test_signed_pickup_delivery_demands():
    inst = sample("pdtsp")
    demand = torch.tensor([0.0, 1, 2, 3, 4, 5, -1, -2, -3, -4, -5]).repeat(4, 1)
    good = replace(inst, demand=demand, capacity=torch.full((4,), 15.0))
    good.check()                                         # negative deliveries are fine
    bad_demand = demand.clone()
    bad_demand[2, 9] = -3.0
    fails(replace(good, demand=bad_demand),
          "instance 2, node 9: a delivery must carry minus its pickup's demand (pickup 4: 4.0")
    fails(replace(good, capacity=torch.full((4,), 4.0)),
          "instance 0, node 5: demand 5.0 exceeds the vehicle capacity 4.0")


def test_the_first_offending_instance_is_named():
    inst = sample("cvrp")
    inst.pos[3, 2, 0] = float("inf")
    inst.demand[1, 9] = -1.0
    inst.demand[1, 4] = 99.0               # same instance: the earlier rule, then the node
    fails(inst, "instance 1, node 9: negative demand -1.0")
    inst.demand[0, 5] = float("nan")
    fails(inst, "instance 0, node 5: `demand` has a non-finite value (nan)")


def test_a_problem_given_as_a_string_is_parsed():
    inst = sample("cvrp")
    replace(inst, problem="cvrp").check()
    fails(replace(inst, problem="cvrpx"), "unknown problem 'cvrpx'")


@pytest.mark.parametrize("heuristic, problem", [(nearest_neighbor, "vrptw"),
                                                (sweep, "cvrp"),
                                                (cheapest_insertion, "tsp")])
def test_heuristics_refuse_invalid_batches(heuristic, problem):
    inst = broken(problem, "pos", (1, 0, 0), float("nan"))
    with pytest.raises(InvalidInstanceError, match=r"^instance 1, node 0: `pos` has a non-fin"):
        heuristic(inst)
