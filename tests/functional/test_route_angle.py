"""Per-route XPE angles (Tab. 9) and index-based IPE (Tab. 8): exact values against
hand-computed angles and phases, the ±π cut, batch = one-by-one, and the transforms."""

from __future__ import annotations

import math
import statistics

import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing import transforms as T
from pyg_routing.data import CVRPGenerator, RoutingData
from pyg_routing.errors import NoSolutionError
from pyg_routing.functional.route_angle import route_angle
from pyg_routing.functional.route_pe import index_ipe, ipe, ipe_amplitudes
from pyg_routing.options import AGGREGATIONS

PI = math.pi
# one graph: depot, route 0 = nodes 1..3, route 1 = nodes 4, 5 (straddles the ±π cut),
# node 6 unvisited (PCVRP-like)
THETA = torch.tensor([0.0, 0.1, 0.5, 1.2, 3.0, -3.0, 2.0], dtype=torch.float64)
ROUTE = torch.tensor([-1, 0, 0, 0, 1, 1, -1])
DEMAND = torch.tensor([0.0, 1.0, 1.0, 2.0, 1.0, 3.0, 5.0], dtype=torch.float64)
DEPOT = torch.tensor([True, False, False, False, False, False, False])


def hand(aggregation: str, angles: list[float], weights: list[float]) -> float:
    """The aggregate of one route's angles, written out."""
    if aggregation == "mean":
        return sum(angles) / len(angles)
    if aggregation == "circular_mean":
        return math.atan2(sum(map(math.sin, angles)), sum(map(math.cos, angles)))
    if aggregation == "demand_mean":
        return sum(a * w for a, w in zip(angles, weights, strict=True)) / sum(weights)
    if aggregation == "median":
        return statistics.median(angles)
    return (max(angles) + min(angles)) / 2                              # midpoint


@pytest.mark.parametrize("aggregation", AGGREGATIONS[1:])
def test_every_aggregation_equals_the_hand_computed_angle_per_route(aggregation):
    out = route_angle(THETA, ROUTE, aggregation, demand=DEMAND, depot_mask=DEPOT)
    for nodes in ([1, 2, 3], [4, 5]):
        want = hand(aggregation, THETA[nodes].tolist(), DEMAND[nodes].tolist())
        for v in nodes:
            assert float(out[v]) == pytest.approx(want, abs=1e-12)
    # the depot and an unvisited customer keep their own angle
    assert float(out[0]) == 0.0 and float(out[6]) == 2.0


def test_the_node_aggregation_is_the_identity():
    assert route_angle(THETA, ROUTE, "node") is THETA


def test_a_route_across_the_cut_points_the_wrong_way_except_with_the_circular_mean():
    # route 1 sits at ±3 rad (just either side of the negative x-axis): only the
    # circular mean says so; the others put it at 0, the opposite direction
    out = {a: float(route_angle(THETA, ROUTE, a, demand=DEMAND)[4]) for a in AGGREGATIONS[1:]}
    assert abs(out["circular_mean"]) == pytest.approx(PI, abs=1e-12)
    for a in ("mean", "median", "midpoint"):
        assert out[a] == pytest.approx(0.0, abs=1e-12)
    assert out["demand_mean"] == pytest.approx((3.0 - 9.0) / 4)         # pulled, still wrong


def test_even_routes_take_the_mean_of_the_two_middle_angles_and_odd_the_middle_one():
    theta = torch.tensor([0.0, 0.4, -0.2, 0.9, 0.1, 0.3, 0.8, -0.5])
    route = torch.tensor([-1, 0, 0, 0, 0, 1, 1, 1])
    out = route_angle(theta, route, "median")
    assert float(out[1]) == pytest.approx((0.1 + 0.4) / 2)
    assert float(out[5]) == pytest.approx(0.3)


def test_demand_mean_falls_back_to_the_mean_on_a_route_without_demand_and_needs_demands():
    zero = torch.zeros_like(DEMAND)
    torch.testing.assert_close(route_angle(THETA, ROUTE, "demand_mean", demand=zero),
                               route_angle(THETA, ROUTE, "mean"))
    with pytest.raises(ValueError, match="'demand_mean' needs node demands"):
        route_angle(THETA, ROUTE, "demand_mean")
    with pytest.raises(ValueError, match="unknown XPE aggregation 'avg'"):
        route_angle(THETA, ROUTE, "avg")


@pytest.mark.parametrize("aggregation", AGGREGATIONS)
def test_a_batch_of_graphs_equals_each_graph_alone(aggregation):
    inst = CVRPGenerator(9, seed=3).sample(3)
    datas = [RoutingData.from_routes(inst[i], r) for i, r in
             enumerate([[[1, 2, 3], [4, 5, 6, 7, 8, 9]], [[9, 1], [2, 3, 4], [5, 6, 7, 8]],
                        [list(range(1, 10))]])]
    xpe = T.XPE(3, aggregation=aggregation)
    batched = xpe.encode(Batch.from_data_list(datas))
    alone = torch.cat([xpe.encode(d) for d in datas])
    torch.testing.assert_close(batched, alone, rtol=0, atol=1e-6)


def test_per_route_xpe_needs_a_solution_and_per_node_xpe_does_not():
    inst = CVRPGenerator(5, seed=0).sample(1)[0]
    assert T.XPE(2).encode(RoutingData.from_instance(
        "cvrp", inst.pos, demand=inst.demand, capacity=inst.capacity)).shape == (6, 4)
    with pytest.raises(NoSolutionError, match=r"XPE\(aggregation='mean'\) needs a solution"):
        T.XPE(2, aggregation="mean").encode(RoutingData.from_instance(
            "cvrp", inst.pos, demand=inst.demand, capacity=inst.capacity))
    with pytest.raises(ValueError, match="unknown XPE aggregation"):
        T.XPE(2, aggregation="average")


def test_every_node_of_a_route_gets_one_xpe_code():
    inst = CVRPGenerator(8, seed=1).sample(1)[0]
    data = RoutingData.from_routes(inst, [[1, 2, 3], [4, 5, 6, 7, 8]])
    code = T.XPE(4, aggregation="circular_mean").encode(data)
    assert torch.equal(code[0], torch.zeros(8))                        # the depot
    for nodes in ([1, 2, 3], [4, 5, 6, 7, 8]):
        assert torch.equal(code[nodes], code[nodes[:1]].expand(len(nodes), -1))
    assert not torch.equal(code[1], code[4])


# ---------------------------------------------------------------- index-based IPE
def _route_data(routes):
    inst = CVRPGenerator(9, seed=4).sample(1)[0]
    return RoutingData.from_routes(inst, routes)


def test_index_phase_equals_the_formula_with_the_routes_arc_count():
    data = _route_data([[3, 1, 2], [4, 5, 6, 7, 8, 9]])
    code = T.IPE(6, direction="invariant", phase="index").encode(data)
    amp = ipe_amplitudes(6, dtype=torch.float64)
    for route in ([3, 1, 2], [4, 5, 6, 7, 8, 9]):
        arcs = len(route) + 1
        for i, v in enumerate(route, start=1):
            want = torch.tensor([math.cos((k + 1) * 2 * PI * i / arcs) for k in range(6)],
                                dtype=torch.float64) * amp
            torch.testing.assert_close(code[v].double(), want, rtol=0, atol=1e-6)
    torch.testing.assert_close(code[0].double(), amp, rtol=0, atol=1e-6)    # phase 0


def test_index_phase_is_circular_and_reversal_invariant_like_the_distance_phase():
    size = torch.tensor([4, 4, 4, 4, 4])
    pos = torch.arange(5)                                   # depot, then 4 customers
    closing = index_ipe(torch.tensor([5]), torch.tensor([4]), dim=8, direction="aware")
    torch.testing.assert_close(closing[0], index_ipe(pos, size, dim=8, direction="aware")[0],
                               rtol=0, atol=1e-6)           # i = L is the depot again
    fwd = index_ipe(pos, size, dim=8)
    # the reversed route visits customer j at position L - j: the invariant code agrees
    torch.testing.assert_close(index_ipe(5 - pos[1:], size[1:], dim=8), fwd[1:],
                               rtol=0, atol=1e-6)
    aware = index_ipe(pos[1:], size[1:], dim=8, direction="aware")
    assert not torch.allclose(index_ipe(5 - pos[1:], size[1:], dim=8, direction="aware"),
                              aware, atol=1e-3)
    # unvisited customers get zeros
    assert torch.equal(index_ipe(torch.tensor([-1]), torch.tensor([0]), dim=8),
                       torch.zeros(1, 8))


def test_index_phase_equals_the_distance_phase_on_evenly_spaced_routes_and_not_otherwise():
    pos = torch.tensor([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [3.0, 0.0],
                        [0.0, 3.0]])
    inst = RoutingData.from_instance("cvrp", pos, demand=[0, 1, 1, 1, 1, 1], capacity=10)
    square = RoutingData.from_routes(inst, [[1, 2, 3], [4, 5]])       # unit arcs on route 0
    by_index = T.IPE(8, phase="index").encode(square)
    by_distance = T.IPE(8).encode(square)
    torch.testing.assert_close(by_index[:4], by_distance[:4], rtol=0, atol=1e-6)
    assert not torch.allclose(by_index[4:], by_distance[4:], atol=1e-3)
    with pytest.raises(ValueError, match="unknown IPE phase 'time'"):
        T.IPE(8, phase="time")


def test_ipexpe_passes_phase_and_aggregation_to_its_parts():
    data = _route_data([[1, 2, 3, 4], [5, 6, 7, 8, 9]])
    both = T.IPEXPE(8, 3, phase="index", aggregation="midpoint")
    assert "phase='index'" in repr(both) and "aggregation='midpoint'" in repr(both)
    want = torch.cat([T.IPE(8, phase="index").encode(data),
                      T.XPE(3, aggregation="midpoint").encode(data)], dim=-1)
    torch.testing.assert_close(both.encode(data), want, rtol=0, atol=0)
    assert torch.equal(ipe(torch.zeros(1), torch.ones(1), 4), index_ipe(
        torch.zeros(1, dtype=torch.long), torch.ones(1, dtype=torch.long), 4))
