"""Every kind of bad input gives a clear, typed error that says where."""

import re

import numpy as np
import pytest
import torch

from pyg_routing.data import (
    RoutingData,
    dense_route_quantities,
    edge_index_from_tours,
    make_generator,
    route_quantities,
)
from pyg_routing.data.benchmarks import BUNDLED_DIR
from pyg_routing.data.instance_files import read_instance_file
from pyg_routing.errors import InstanceFormatError, InvalidInstanceError, InvalidSolutionError

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


# ----------------------------------------------------------------- node ids in routes
@pytest.mark.parametrize("routes, route, value", [
    ([[1.5, 2], [3]], 0, "1.5 (float) at position 0"),
    ([[1, 2.0, 3]], 0, "2.0 (float) at position 1"),              # integral floats too
    # NumPy scalars as their repr: np.float64(3.0) under NumPy 2, 3.0 under NumPy 1
    ([[1, 2], [np.float64(3.0)]], 1, f"{np.float64(3.0)!r} (float64) at position 0"),
    ([[1, True, 3]], 0, "True (bool) at position 1"),
    ([[1, 2], [np.bool_(True), 3]], 1,
     f"{np.bool_(True)!r} ({type(np.bool_(True)).__name__}) at position 0"),
    ([[1, torch.tensor(2.5), 3]], 0, "2.5 (torch.float32 Tensor) at position 1"),
    ([[1, torch.tensor(True), 3]], 0, "True (torch.bool Tensor) at position 1"),
    ([torch.tensor([1.0, 2.5, 3.0])], 0, "2.5 (torch.float32 Tensor) at position 1"),
    ([torch.tensor([1.0, 2.0, 3.0])], 0, "1.0 (torch.float32 Tensor) at position 0"),
    ([torch.tensor([True, False, True])], 0, "True (torch.bool Tensor) at position 0"),
    ([np.array([1, 2]), np.array([3.5])], 1, "3.5 (float64 ndarray) at position 0"),
])
def test_non_integer_node_ids_are_refused(routes, route, value):
    with pytest.raises(InvalidSolutionError) as info:
        RoutingData.from_routes(cvrp(), routes)
    assert str(info.value) == (f"instance 'toy', route {route}: a route must be a sequence "
                               f"of integer node ids, got {value}")


def test_integer_node_ids_of_every_kind_are_accepted():
    inst = cvrp()
    for routes in ([[1, 2], [3]], [np.array([1, 2]), [np.int64(3)]],
                   [torch.tensor([1, 2]), [torch.tensor(3)]],
                   [np.array([1, 2], dtype=np.uint8), torch.tensor([3], dtype=torch.int32)]):
        assert RoutingData.from_routes(inst, routes).routes() == [[1, 2], [3]]


def test_refused_routes_are_left_untouched():
    routes = [torch.tensor([1.0, 2.0]), [3.5]]
    before = [routes[0].clone(), list(routes[1])]
    with pytest.raises(InvalidSolutionError):
        RoutingData.from_routes(cvrp(), routes)
    assert torch.equal(routes[0], before[0]) and routes[1] == before[1]


# ----------------------------------------------------------------- infinite coordinates
@pytest.mark.parametrize("bad", [float("inf"), float("nan")])
def test_dense_route_quantities_refuse_non_finite_coordinates(bad):
    inst = make_generator("cvrp", 6, seed=0).sample(3)
    pos = inst.pos.clone()
    pos[2, 4, 1] = bad
    before = pos.clone()
    tours = torch.tensor([[0, 1, 2, 3, 0, 4, 5, 6, 0]] * 3)
    with pytest.raises(InvalidInstanceError, match=r"^instance 2, node 4: `pos` has a non-fin"):
        dense_route_quantities(pos, tours)
    torch.testing.assert_close(pos, before, rtol=0, atol=0, equal_nan=True)


def test_dense_route_quantities_refuse_malformed_tours():
    pos = make_generator("cvrp", 6, seed=0).sample(2).pos
    good = torch.tensor([[0, 1, 2, 3, 0, 4, 5, 6, 0]] * 2)
    with pytest.raises(InvalidSolutionError, match=r"^instance 1: tour position 3: node id 9 "
                                                   r"out of range 0\.\.6"):
        dense_route_quantities(pos, torch.tensor([[0, 1, 2, 3, 0, 4, 5, 6, 0],
                                                  [0, 1, 2, 9, 0, 4, 5, 6, 0]]))
    with pytest.raises(InvalidSolutionError, match="must hold integer node ids, got torch.float"):
        dense_route_quantities(pos, good.float())
    with pytest.raises(InvalidSolutionError, match=r"`tours` must have shape \[B, L\] with B = 2"):
        dense_route_quantities(pos, good[:1])
    with pytest.raises(InvalidInstanceError, match=r"`pos` must have shape \[B, N, 2\]"):
        dense_route_quantities(pos[0], good)


def test_route_quantities_refuse_non_finite_coordinates():
    inst = make_generator("cvrp", 6, seed=0).sample(3)
    tours = torch.tensor([[0, 1, 2, 3, 0, 4, 5, 6, 0]] * 3)
    pos = inst.pos.clone()
    pos[1, 5, 0] = -float("inf")
    depot = torch.zeros(21, dtype=torch.bool)
    depot[::7] = True
    batch = torch.arange(3).repeat_interleave(7)
    with pytest.raises(InvalidInstanceError, match=r"^instance 1, node 5: `pos` has a non-fin"):
        route_quantities(pos.reshape(-1, 2), edge_index_from_tours(tours, 7), depot, batch, 3)
    with pytest.raises(InvalidInstanceError, match=r"^node 5: `pos` has a non-finite value"):
        route_quantities(pos[1], edge_index_from_tours(tours[:1], 7), depot[:7])


def test_huge_but_finite_coordinates_are_not_refused():
    # Their sum overflows; only truly non-finite coordinates are refused.
    pos = torch.tensor([[[0.0, 0.0], [3e38, 0.0], [3e38, 1.0]]])
    rq = dense_route_quantities(pos, torch.tensor([[0, 1, 2, 0]]))
    assert rq.route_id.tolist() == [-1, 0, 0]


@pytest.mark.parametrize("option, value", [("capacity", float("inf")),
                                           ("capacity", float("nan")),
                                           ("capacity", "big"), ("kappa", float("inf")),
                                           ("kappa", float("nan")), ("kappa", -1.0)])
def test_generators_refuse_non_finite_options(option, value):
    with pytest.raises(InvalidInstanceError, match=rf"^{option} must be"):
        make_generator("pcvrp", 10, seed=0, **{option: value})


@pytest.mark.parametrize("count", [2.5, float("inf"), float("nan"), True])
def test_generators_refuse_non_whole_sizes(count):
    with pytest.raises(InvalidInstanceError, match=r"^num_customers must be"):
        make_generator("cvrp", count, seed=0)
    with pytest.raises(InvalidInstanceError, match=r"^num_customers must be"):
        make_generator("pdtsp", count, seed=0)


def test_benchmark_reader_refuses_non_finite_coordinates(tmp_path):
    src = BUNDLED_DIR / "X-n101-k25.vrp"
    lines = src.read_text().splitlines()
    start = lines.index(next(x for x in lines if x.startswith("NODE_COORD_SECTION"))) + 1
    row = lines[start + 3].split()          # file node 4 = our node 3 (the depot is first)
    lines[start + 3] = f"{row[0]} 1e400 {row[2]}"
    path = tmp_path / "X-n101-k25.vrp"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InstanceFormatError, match=re.escape(str(path)) +
                       r": instance 'X-n101-k25', node 3: coordinates \[inf, .*\] are not fin"):
        read_instance_file(path)
