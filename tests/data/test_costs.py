"""Explicit (asymmetric) cost matrices and open routes in the data layer: the one rule
of ``data/costs.py`` in costs, route quantities, feasibility and validation."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.data import (
    RoutingData,
    RoutingInstances,
    dense_route_quantities,
    edge_index_from_tours,
    route_quantities,
)
from pyg_routing.data.costs import dense_costs, euclidean_matrix, flat_matrix_index
from pyg_routing.data.problems import Problem
from pyg_routing.errors import InfeasibleSolutionError, InvalidInstanceError

ROUTES = [[1, 2, 3], [4, 5]]


def _pos(n: int = 6, seed: int = 0) -> torch.Tensor:
    return torch.rand(n, 2, generator=torch.Generator().manual_seed(seed))


def _norm_matrix(pos: torch.Tensor) -> torch.Tensor:
    """Euclidean distances with the arithmetic of the coordinate path (``arc_lengths``)."""
    return (pos[None, :, :] - pos[:, None, :]).norm(dim=-1)


def _cvrp(pos, **kw) -> RoutingData:
    n = pos.size(0)
    return RoutingData.from_instance("cvrp", pos, demand=[0] + [1] * (n - 1), capacity=3, **kw)


def _asym(pos: torch.Tensor) -> torch.Tensor:
    """Euclidean plus a toll for heading east that depends on where the arc starts
    (a toll that depends only on the displacement would cancel around closed tours)."""
    m = _norm_matrix(pos)
    return m + pos[:, None, 1] * (pos[None, :, 0] - pos[:, None, 0]).clamp(min=0)


def _hand_cost(m: torch.Tensor, routes, open_routes: bool = False) -> float:
    total = 0.0
    for r in routes:
        tour = [0, *r] if open_routes else [0, *r, 0]
        total += sum(float(m[a, b]) for a, b in zip(tour[:-1], tour[1:]))
    return total


def test_symmetric_matrix_equal_to_euclidean_is_bit_identical():
    pos = _pos()
    plain = RoutingData.from_routes(_cvrp(pos), ROUTES)
    explicit = RoutingData.from_routes(_cvrp(pos, cost_matrix=_norm_matrix(pos)), ROUTES)
    for key in ("cum_dist", "route_length", "route_pos", "route_index"):
        assert torch.equal(plain[key], explicit[key]), key
    assert torch.equal(plain.cost(), explicit.cost())
    assert torch.equal(plain.arc_lengths(), explicit.arc_lengths())
    batch = Batch.from_data_list([explicit, explicit])
    assert torch.equal(batch.cost(), plain.cost().repeat(2))


def test_asymmetric_costs_follow_the_matrix_and_the_direction():
    pos = _pos()
    m = _asym(pos)
    inst = _cvrp(pos, cost_matrix=m)
    fwd = RoutingData.from_routes(inst, ROUTES)
    rev = RoutingData.from_routes(inst, [r[::-1] for r in ROUTES])
    assert float(fwd.cost()) == pytest.approx(_hand_cost(m, ROUTES), rel=1e-6)
    assert float(rev.cost()) == pytest.approx(_hand_cost(m, [r[::-1] for r in ROUTES]),
                                              rel=1e-6)
    assert abs(float(fwd.cost()) - float(rev.cost())) > 1e-3
    # d_i accumulates the matrix along the route
    assert float(fwd.cum_dist[2]) == pytest.approx(float(m[0, 1] + m[1, 2]), rel=1e-6)
    assert float(fwd.route_length[5]) == pytest.approx(float(m[0, 4] + m[4, 5] + m[5, 0]),
                                                       rel=1e-6)
    assert torch.allclose(inst.cost_matrix, m.masked_fill(torch.eye(6, dtype=torch.bool), 0))


def test_open_routes_drop_the_return_arc():
    pos = _pos()
    m = _asym(pos)
    for matrix in (None, m):
        inst = _cvrp(pos, cost_matrix=matrix, open_routes=True)
        sol = RoutingData.from_routes(inst, ROUTES)
        ref = _norm_matrix(pos) if matrix is None else m
        assert float(sol.cost()) == pytest.approx(_hand_cost(ref, ROUTES, open_routes=True),
                                                  rel=1e-6)
        # route length = distance to the last customer
        assert float(sol.route_length[1]) == pytest.approx(float(sol.cum_dist[3]), rel=1e-6)
        assert bool(sol.open_routes) and bool((inst.cost_matrix[:, 0] == 0).all())


def test_open_vrptw_return_after_the_depot_closes_is_feasible():
    pos = torch.tensor([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    tw = [[0.0, 2.5], [0.0, 10.0], [0.0, 10.0]]
    kw = dict(demand=[0, 1, 1], capacity=5, time_window=tw, service_time=[0.0, 0.0, 0.0])
    # 0 -> 1 -> 2 arrives at 2 (fine), the return takes 2 more: back at 4 > 2.5
    closed = RoutingData.from_instance("vrptw", pos, **kw)
    opened = RoutingData.from_instance("vrptw", pos, open_routes=True, **kw)
    from pyg_routing.data.feasibility import check_servable_alone
    with pytest.raises(InvalidInstanceError, match="node 2: the customer cannot be served"):
        check_servable_alone(closed)
    check_servable_alone(opened)
    with pytest.raises(InfeasibleSolutionError, match="returns to the depot after"):
        RoutingData.from_routes(closed, [[1, 2]]).check()
    sol = RoutingData.from_routes(opened, [[1, 2]])
    sol.check()
    assert float(sol.cost()) == pytest.approx(2.0)


def test_asymmetric_travel_times_bind_time_windows():
    pos = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    m = torch.tensor([[0.0, 1.0], [3.0, 0.0]])          # back takes 3
    kw = dict(demand=[0, 1], capacity=5, service_time=[0.0, 0.0], cost_matrix=m)
    ok = RoutingData.from_instance("vrptw", pos, time_window=[[0.0, 4.0], [0.0, 9.0]], **kw)
    RoutingData.from_routes(ok, [[1]]).check()
    from pyg_routing.data.feasibility import check_servable_alone
    late = RoutingData.from_instance("vrptw", pos, time_window=[[0.0, 3.5], [0.0, 9.0]], **kw)
    with pytest.raises(InvalidInstanceError, match="back at 4"):
        check_servable_alone(late)
    dense = RoutingInstances(Problem.VRPTW, pos[None], demand=torch.tensor([[0.0, 1.0]]),
                             capacity=torch.tensor([5.0]),
                             time_window=torch.tensor([[[0.0, 3.5], [0.0, 9.0]]]),
                             service_time=torch.zeros(1, 2), cost_matrix=m[None])
    with pytest.raises(InvalidInstanceError, match="instance 0, node 1: .*back at 4"):
        dense.check()
    dense.open_routes = torch.tensor([True])
    dense.check()


def test_batch_of_mixed_sizes_equals_one_by_one():
    datas = []
    for n, seed in ((6, 0), (9, 1), (4, 2)):
        pos = _pos(n, seed)
        inst = _cvrp(pos, cost_matrix=_asym(pos), open_routes=seed == 1)
        routes = [list(range(1, n))] if n == 4 else [[1, 2, 3], list(range(4, n))]
        routes = [r for r in routes if r]
        datas.append(RoutingData.from_routes(inst, [r[:3] for r in routes] +
                                             [r[3:] for r in routes if r[3:]]))
    batch = Batch.from_data_list(datas)
    assert torch.allclose(batch.cost(), torch.stack([d.cost() for d in datas]))
    assert torch.equal(batch.cum_dist, torch.cat([d.cum_dist for d in datas]))
    assert batch.is_feasible().tolist() == [bool(d.is_feasible()) for d in datas]
    assert batch.to_data_list()[1].cost_matrix.shape == (9, 9)


def test_flat_matrix_index_is_row_major_per_graph():
    batch = torch.tensor([0, 0, 1, 1, 1])
    src, dst = torch.tensor([0, 1, 2, 4]), torch.tensor([1, 0, 4, 3])
    # graph 0: 2x2 at 0..3; graph 1: 3x3 at 4..12
    assert flat_matrix_index(src, dst, batch, 5).tolist() == [1, 2, 4 + 2, 4 + 2 * 3 + 1]


def test_a_batch_that_loses_a_matrix_is_refused():
    pos = _pos()
    plain = RoutingData.from_routes(_cvrp(pos), ROUTES)
    explicit = RoutingData.from_routes(_cvrp(pos, cost_matrix=_asym(pos)), ROUTES)
    with pytest.raises(InvalidInstanceError, match="instance 1: its cost matrix was lost"):
        Batch.from_data_list([plain, explicit]).cost()


@pytest.mark.parametrize("matrix, match", [
    (torch.zeros(5, 5), r"shape \[N, N\] = \(6, 6\)"),
    (torch.full((6, 6), -1.0), "negative cost -1.0 on the arc 0 -> 1"),
    (torch.ones(6, 6).index_put((torch.tensor([2]), torch.tensor([4])), torch.tensor(float("nan"))),
     "node 2: `cost_matrix` has a non-finite cost nan on the arc 2 -> 4"),
    ([["a"]], "not numeric"),
])
def test_bad_matrices_are_refused(matrix, match):
    with pytest.raises(InvalidInstanceError, match=match):
        _cvrp(_pos(), cost_matrix=matrix)


def test_the_diagonal_is_ignored_and_the_callers_matrix_is_not_mutated():
    pos = _pos()
    m = _asym(pos)
    m.fill_diagonal_(float("inf"))                 # TSPLIB style: "never stay put"
    before = m.clone()
    inst = _cvrp(pos, cost_matrix=m)
    assert torch.equal(m, before)
    assert bool((inst.cost_matrix.diagonal() == 0).all())


def test_open_routes_and_raw_matrix_options_are_checked():
    with pytest.raises(InvalidInstanceError, match="open routes are an option of cvrp, "
                                                   "vrptw, not 'tsp'"):
        RoutingData.from_instance("tsp", _pos(), open_routes=True)
    with pytest.raises(InvalidInstanceError, match="`raw_cost_matrix` needs `cost_matrix`"):
        _cvrp(_pos(), raw_cost_matrix=torch.ones(6, 6))
    with pytest.raises(InvalidInstanceError, match="`raw_pos` with `cost_matrix` needs "
                                                   "`raw_cost_matrix`"):
        _cvrp(_pos(), cost_matrix=torch.ones(6, 6), raw_pos=_pos() * 100)
    with pytest.raises(TypeError, match="index the batch"):
        Batch.from_data_list([_cvrp(_pos())]).cost_matrix  # noqa: B018


def _dense(b: int = 3, n: int = 6, **kw) -> RoutingInstances:
    pos = torch.rand(b, n, 2, generator=torch.Generator().manual_seed(7))
    return RoutingInstances(Problem.CVRP, pos, demand=torch.ones(b, n).index_fill(1,
                            torch.tensor([0]), 0), capacity=torch.full((b,), 3.0), **kw)


def test_dense_rule_matches_the_flat_rule():
    inst = _dense()
    m = inst.pos.new_empty(3, 6, 6)
    for i in range(3):
        m[i] = _asym(inst.pos[i])
    inst.cost_matrix = m
    inst.open_routes = torch.tensor([False, True, False])
    inst.check()
    costs = inst.costs()
    for i in range(3):
        assert torch.allclose(costs[i], inst[i].cost_matrix)
        assert bool(inst[i].open_routes) == (i == 1)
    sliced = inst[1:]
    assert torch.equal(sliced.cost_matrix, m[1:]) and sliced.open_routes.tolist() == [True, False]
    assert torch.equal(dense_costs(inst.pos), euclidean_matrix(inst.pos))


@pytest.mark.parametrize("field, value, match", [
    ("cost_matrix", torch.zeros(3, 6, 5), r"`cost_matrix` must have shape \[B, N, N\]"),
    ("cost_matrix", -torch.ones(3, 6, 6), "instance 0, node 0: `cost_matrix` has a negative "
                                          "cost -1.0 on the arc 0 -> 1"),
    ("open_routes", torch.tensor([1, 0, 1]), "`open_routes` must be a bool tensor"),
])
def test_dense_checks(field, value, match):
    inst = _dense(**{field: value})
    with pytest.raises(InvalidInstanceError, match=match):
        inst.check()


def test_dense_open_routes_only_for_cvrp_and_vrptw():
    pos = torch.rand(2, 5, 2)
    inst = RoutingInstances(Problem.TSP, pos, open_routes=torch.tensor([True, False]))
    with pytest.raises(InvalidInstanceError, match="not 'tsp'"):
        inst.check()


def test_route_quantities_with_arc_costs_in_any_arc_order():
    pos = _pos(8)
    m = _asym(pos)
    tours = torch.tensor([[0, 3, 1, 0, 2, 5, 7, 0, 6, 4, 0]])
    ei = edge_index_from_tours(tours, 8)
    depot = torch.zeros(8, dtype=torch.bool)
    depot[0] = True
    cost = m[ei[0], ei[1]]
    ordered = route_quantities(pos, ei, depot, arc_cost=cost)
    perm = torch.randperm(ei.size(1), generator=torch.Generator().manual_seed(3))
    shuffled = route_quantities(pos, ei[:, perm], depot, arc_cost=cost[perm])
    for a, b in zip(ordered, shuffled):
        assert torch.allclose(a.double(), b.double())
    assert float(ordered.cum_dist[7]) == pytest.approx(float(m[0, 2] + m[2, 5] + m[5, 7]))
    dense = dense_route_quantities(pos[None], tours[:, 1:-1], costs=m[None])
    assert torch.allclose(dense.cum_dist, ordered.cum_dist)
    assert torch.allclose(dense.route_length, ordered.route_length)


# ---------------------------------------------------------------- the streets generator
def test_street_costs_by_hand():
    from pyg_routing.data.cost_models import street_costs

    # 3 x 3 grid, step 0.5; the middle row is one-way east, the middle column one-way
    # south; A and B sit on the middle row's ends, C walks 0.15 to A's intersection.
    pos = torch.tensor([[[0.0, 0.5], [1.0, 0.5], [0.1, 0.45]]], dtype=torch.float64)
    directions = torch.tensor([[[0, 1, 0], [0, -1, 0]]])
    m = street_costs(pos, directions, 3)[0]
    assert m[0, 1].item() == pytest.approx(1.0)           # straight along the one-way row
    assert m[1, 0].item() == pytest.approx(2.0)           # round by the boundary streets
    assert m[2, 1].item() == pytest.approx(1.15)          # walk 0.15, then drive
    assert m[0, 2].item() == pytest.approx(0.15)          # same intersection: walk
    assert m.diagonal().abs().max().item() == 0


def test_streets_generator_keeps_the_layout_and_is_asymmetric():
    from pyg_routing.data import make_generator

    plain = make_generator("vrptw", 20, seed=3).sample(8)
    street = make_generator("vrptw", 20, seed=3, costs="streets", grid=8).sample(8)
    again = make_generator("vrptw", 20, seed=3, costs="streets", grid=8).sample(8)
    street.check()                                        # every customer servable alone
    assert torch.equal(plain.pos, street.pos) and torch.equal(plain.demand, street.demand)
    assert torch.equal(street.cost_matrix, again.cost_matrix)
    m = street.cost_matrix.double()
    assert (m - m.transpose(1, 2)).abs().max() > 0.1
    # shortest paths: the triangle inequality holds (float32 rounding aside)
    assert not bool((m[:, :, None, :] > m[:, :, :, None] + m[:, None, :, :] + 1e-5).any())
    assert plain.cost_matrix is None and plain.open_routes is None
    opened = make_generator("cvrp", 20, seed=3, open_routes=True).sample(2)
    assert opened.open_routes.tolist() == [True, True]
    assert bool((opened.costs()[:, :, 0] == 0).all())


@pytest.mark.parametrize("kw, match", [
    (dict(costs="wind"), "unknown cost model 'wind'; choose from euclidean, streets"),
    (dict(grid=5), "grid and one_way apply to costs='streets' only"),
    (dict(costs="streets", grid=2), "grid must be >= 3"),
    (dict(costs="streets", one_way=1.5), r"one_way is a probability in \[0, 1\]"),
    (dict(open_routes="yes"), "open_routes must be True or False"),
    (dict(bogus=1), "problem 'cvrp' has no generator option 'bogus'; its options: "),
])
def test_generator_cost_options_are_checked(kw, match):
    from pyg_routing.data import make_generator

    with pytest.raises(InvalidInstanceError, match=match):
        make_generator("cvrp", 10, seed=0, **kw)


def test_options_a_generator_lacks_are_refused_by_name():
    from pyg_routing.data import make_generator

    with pytest.raises(InvalidInstanceError, match="problem 'pcvrp' has no generator option "
                                                   "'costs'"):
        make_generator("pcvrp", 10, costs="streets")
    with pytest.raises(InvalidInstanceError, match="problem 'cvrp' of preset 'nds' has no "
                                                   "generator option 'open_routes'"):
        make_generator("cvrp", 100, preset="nds", open_routes=True)


# ------------------------------------------------------------ IPE's direction="auto"
def test_auto_direction_is_aware_for_asymmetric_or_open_instances():
    from pyg_routing.data.costs import asymmetric_graphs
    from pyg_routing.transforms import EncodingInputs

    pos = _pos()
    sym = RoutingData.from_routes(_cvrp(pos, cost_matrix=_norm_matrix(pos)), ROUTES)
    asym = RoutingData.from_routes(_cvrp(pos, cost_matrix=_asym(pos)), ROUTES)
    opened = RoutingData.from_routes(_cvrp(pos, open_routes=True), ROUTES)
    plain = RoutingData.from_routes(_cvrp(pos), ROUTES)
    for data, aware in ((sym, False), (asym, True), (opened, True), (plain, False)):
        assert EncodingInputs.from_data(data).direction_sensitive.tolist() == [aware]
    small = _pos(4, 9)
    tiny = RoutingData.from_routes(_cvrp(small, cost_matrix=_asym(small)), [[1, 2, 3]])
    batch = Batch.from_data_list([sym, tiny, asym, sym])
    assert EncodingInputs.from_data(batch).direction_sensitive.tolist() == [False, True,
                                                                            True, False]
    assert asymmetric_graphs(batch.travel_cost, batch.batch, batch.num_nodes,
                             4).tolist() == [False, True, True, False]


def test_ipe_auto_follows_the_costs_in_the_transform_and_the_search():
    from pyg_routing.envs.observation import tour_encoding_inputs
    from pyg_routing.envs.two_opt.env import TwoOptEnv
    from pyg_routing.transforms import IPE

    pos = _pos()
    asym = RoutingData.from_routes(_cvrp(pos, cost_matrix=_asym(pos)), ROUTES)
    auto = IPE(dim=8)(asym.clone()).ipe
    assert torch.equal(auto, IPE(dim=8, direction="aware")(asym.clone()).ipe)
    assert not torch.equal(auto, IPE(dim=8, direction="invariant")(asym.clone()).ipe)
    inst = RoutingInstances(Problem.CVRP, pos[None], demand=asym.demand[None],
                            capacity=asym.capacity, cost_matrix=_asym(pos)[None])
    state = TwoOptEnv().reset(inst, init="nearest_neighbor")
    assert tour_encoding_inputs(state).direction_sensitive.tolist() == [True]
    inst.cost_matrix = _norm_matrix(pos)[None]           # symmetric: invariant again
    state = TwoOptEnv().reset(inst, init="nearest_neighbor")
    assert tour_encoding_inputs(state).direction_sensitive.tolist() == [False]
