"""Several depots as data: nodes ``0 .. K-1`` are depots, each route leaves from and
returns to its own (``route_depot``). Costs against a brute force, batch equals one by
one, the one-depot case equal to the single-depot code bit for bit, bad input refused
in one line, and PyVRP's references against the exhaustive optimum."""

from __future__ import annotations

import math

import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.data import RoutingData, RoutingInstances, make_generator
from pyg_routing.data.problems import Problem
from pyg_routing.data.search_inputs import search_instances
from pyg_routing.data.solvers import solve_instances, solve_pyvrp, stack_instances
from pyg_routing.errors import (
    InfeasibleSolutionError,
    InvalidInstanceError,
    InvalidSolutionError,
    UnsupportedProblemError,
)
from pyg_routing.transforms import IPEXPE
from tests.helpers import all_route_sets


def _instance(k: int = 2, n: int = 6, seed: int = 0, **kw) -> RoutingData:
    return make_generator("cvrp", n, seed=seed, depots=k).sample(1)[0] if not kw else \
        RoutingData.from_instance("cvrp", torch.rand(n + k, 2, generator=torch.Generator()
                                                      .manual_seed(seed)),
                                  demand=[0] * k + [1] * n, capacity=3, num_depots=k, **kw)


def _length(pos: torch.Tensor, route: list[int], depot: int) -> float:
    tour = [depot, *route, depot]
    return sum(math.dist(pos[a].tolist(), pos[b].tolist()) for a, b in zip(tour, tour[1:]))


def test_cost_is_the_sum_of_each_route_from_its_own_depot():
    inst = _instance(k=3, n=7)
    routes, depots = [[3, 4], [5, 6, 7], [8, 9]], [2, 0, 2]
    sol = RoutingData.from_routes(inst, routes, depots)
    want = sum(_length(inst.pos.double(), r, d) for r, d in zip(routes, depots))
    assert float(sol.cost()) == pytest.approx(want, rel=1e-6)
    assert sol.route_depot.tolist() == depots
    assert sol.routes() == routes
    # d_i and d_L are measured from the route's own depot (IPE's inputs)
    first = routes[1][0]
    assert float(sol.cum_dist[first]) == pytest.approx(math.dist(inst.pos[0].tolist(),
                                                                 inst.pos[first].tolist()))
    assert float(sol.route_length[8]) == pytest.approx(_length(inst.pos.double(), [8, 9], 2),
                                                       rel=1e-6)
    assert sol.depot_mask.tolist() == [True] * 3 + [False] * 7 and sol.depot_count == 3


def test_a_batch_equals_its_instances_one_by_one():
    sols = [RoutingData.from_routes(_instance(k=2, n=5, seed=s), [[2, 3, 4], [5, 6]], d)
            for s, d in ((0, [0, 1]), (1, [1, 1]), (2, [0, 0]))]
    single = RoutingData.from_routes(make_generator("cvrp", 5, seed=3).sample(1)[0],
                                     [[1, 2, 3], [4, 5]])
    batch = Batch.from_data_list(sols)
    assert torch.equal(batch.cost(), torch.stack([s.cost() for s in sols]))
    assert batch.route_depot.tolist() == [0, 1, 1, 1, 0, 0]
    assert torch.equal(batch.depot_mask, torch.cat([s.depot_mask for s in sols]))
    assert batch.routes() == [s.routes() for s in sols]
    assert bool(batch.is_feasible().all())
    mixed = Batch.from_data_list([sols[0], single])             # K = 2 beside K = 1
    assert mixed.depot_mask.tolist() == [True, True] + [False] * 5 + [True] + [False] * 5
    assert torch.equal(mixed.cost(), torch.stack([sols[0].cost(), single.cost()]))


def test_one_depot_through_the_depot_code_is_the_single_depot_instance_bit_for_bit():
    gen, one = make_generator("cvrp", 10, seed=4), make_generator("cvrp", 10, seed=4, depots=1)
    a, b = gen.sample(3), one.sample(3)
    assert torch.equal(a.pos, b.pos) and torch.equal(a.demand, b.demand) and b.num_depots == 1
    # K depots draw the single-depot stream first: the customers are the same
    three = make_generator("cvrp", 10, seed=4, depots=3).sample(3)
    assert torch.equal(three.pos[:, 3:], a.pos[:, 1:]) and torch.equal(three.pos[:, 0], a.pos[:, 0])
    data = a[0]
    explicit = RoutingData.from_instance("cvrp", data.pos, demand=data.demand,
                                         capacity=data.capacity, num_depots=1)
    routes = [[1, 2, 3, 4], [5, 6, 7], [8, 9, 10]]
    plain = RoutingData.from_routes(data, routes)
    through = RoutingData.from_routes(explicit, routes, depots=[0, 0, 0])
    for key in ("edge_index", "cum_dist", "route_length", "route_pos", "route_depot"):
        assert torch.equal(plain[key], through[key]), key
    assert torch.equal(plain.cost(), through.cost())
    # data saved before depots were a node set (no num_depots) reads as one depot
    legacy = plain.clone()
    del legacy.num_depots
    assert torch.equal(legacy.depot_mask, plain.depot_mask) and legacy.depot_count == 1


def test_open_routes_end_anywhere_but_leave_from_their_depot():
    inst = RoutingData.from_instance("cvrp", _instance(k=2, n=4).pos, demand=[0, 0, 1, 1, 1, 1],
                                     capacity=4, num_depots=2, open_routes=True)
    sol = RoutingData.from_routes(inst, [[2, 3], [4, 5]], [1, 0])
    pos = inst.pos.double()
    want = math.dist(pos[1].tolist(), pos[2].tolist()) + math.dist(pos[2].tolist(),
                                                                   pos[3].tolist()) \
        + math.dist(pos[0].tolist(), pos[4].tolist()) + math.dist(pos[4].tolist(),
                                                                  pos[5].tolist())
    assert float(sol.cost()) == pytest.approx(want, rel=1e-6)
    assert torch.equal(inst.travel.dense()[0, :, :2], torch.zeros(6, 2))


@pytest.mark.parametrize("kw, message", [
    (dict(num_depots=0), "at least one depot, got num_depots=0"),
    (dict(num_depots=8), "num_depots=8 leaves no customer among the 8 nodes"),
    (dict(num_depots=True), "`num_depots` must be an integer, got True"),
    (dict(num_depots=2.0), "`num_depots` must be an integer, got 2.0"),
    (dict(num_depots=2, depot_vehicles=[1]), "one limit per depot \\(2\\)"),
    (dict(num_depots=2, depot_vehicles=[1, 0]), "node 1: depot 1 allows 0 routes"),
    (dict(num_depots=2, depot_vehicles=[1.0, 2.0]), "`depot_vehicles` must hold integer"),
])
def test_bad_depots_are_refused_in_one_line(kw, message):
    pos = torch.rand(8, 2)
    with pytest.raises(InvalidInstanceError, match=message) as err:
        RoutingData.from_instance("cvrp", pos, demand=[0, 0] + [1] * 6, capacity=3, name="m",
                                  **kw)
    assert "\n" not in str(err.value) and str(err.value).startswith("instance 'm'")


def test_depots_with_a_demand_or_on_another_problem_are_refused():
    pos = torch.rand(5, 2)
    with pytest.raises(InvalidInstanceError, match="node 1: the depot must have demand 0"):
        RoutingData.from_instance("cvrp", pos, demand=[0, 2, 1, 1, 1], capacity=3, num_depots=2)
    with pytest.raises(InvalidInstanceError, match="several depots are a variant of cvrp, "
                                                   "not 'tsp'"):
        RoutingData.from_instance("tsp", pos, num_depots=2)
    base = make_generator("cvrp", 6, seed=0, depots=2).sample(2)
    bad = RoutingInstances(Problem.CVRP, base.pos, demand=base.demand.clone(),
                           capacity=base.capacity, num_depots=2)
    bad.demand[1, 1] = 3
    with pytest.raises(InvalidInstanceError, match="instance 1, node 1: the depot must have "
                                                   "demand 0"):
        bad.check()
    bad = RoutingInstances(Problem.CVRP, base.pos, demand=base.demand, capacity=base.capacity,
                           num_depots=2, depot_vehicles=torch.ones(2, 3, dtype=torch.long))
    with pytest.raises(InvalidInstanceError, match="shape \\[B, K\\] = \\(2, 2\\)"):
        bad.check()
    with pytest.raises(InvalidInstanceError, match="several depots are a variant of cvrp, "
                                                   "not 'vrptw'"):
        make_generator("vrptw", 6, depots=2)


@pytest.mark.parametrize("routes, depots, message", [
    ([[2, 3, 4], [5, 6, 7]], None, "the instance has 2 depots: give each route's depot"),
    ([[2, 3, 4], [5, 6, 7]], [0, 2], "route 1, node 2: not a depot"),
    ([[2, 3, 4], [5, 6, 7]], [0], "1 depots for 2 routes"),
    ([[1, 3, 4], [5, 6, 7, 2]], [0, 0], "route 0, node 1: the depot must not appear inside"),
    ([[2, 3, 4], [5, 6]], [0, 1], "1 customer\\(s\\) not visited: 7"),
])
def test_bad_multi_depot_routes_are_refused_in_one_line(routes, depots, message):
    inst = _instance(k=2, n=6)
    with pytest.raises(InvalidSolutionError, match=message) as err:
        RoutingData.from_routes(inst, routes, depots)
    assert "\n" not in str(err.value)


def test_a_route_that_returns_to_another_depot_is_refused():
    sol = RoutingData.from_routes(_instance(k=2, n=4), [[2, 3], [4, 5]], [1, 0])
    sol.edge_index = torch.tensor([[1, 2, 3, 0, 4, 5], [2, 3, 0, 4, 5, 0]])   # 1 -> .. -> 0
    with pytest.raises(InvalidSolutionError, match="route 0, node 3: the route returns to "
                                                   "depot 0, not to its own depot 1"):
        sol._set_route_quantities()


def test_check_counts_the_routes_of_each_depot_against_its_vehicles():
    inst = RoutingData.from_instance("cvrp", torch.rand(7, 2), demand=[0, 0, 1, 1, 1, 1, 1],
                                     capacity=5, num_depots=2, depot_vehicles=[2, 1],
                                     name="v")
    RoutingData.from_routes(inst, [[2, 3], [4], [5, 6]], [0, 1, 0]).check()
    over = RoutingData.from_routes(inst, [[2, 3], [4], [5, 6]], [0, 1, 1])
    with pytest.raises(InfeasibleSolutionError, match="instance 'v': depot 1 sends out 2 "
                                                      "routes; it has 1 vehicle$"):
        over.check()
    good = RoutingData.from_routes(inst, [[2, 3], [4], [5, 6]], [0, 1, 0])
    assert Batch.from_data_list([good, over]).is_feasible().tolist() == [True, False]


def test_dense_batches_keep_their_depots_on_every_path():
    inst = make_generator("cvrp", 6, seed=0, depots=2).sample(3)
    assert inst.travel.variants == ("euclidean", "multi_depot")
    one = inst[1]
    assert one.depot_count == 2 and torch.equal(one.pos, inst.pos[1])
    back = stack_instances(inst.to_data_list())
    assert back.num_depots == 2 and torch.equal(back.pos, inst.pos)
    assert inst[0:2].num_depots == 2
    with pytest.raises(ValueError, match="instance 1 has 1 depots, instance 0 2"):
        stack_instances([inst[0], make_generator("cvrp", 7, seed=0).sample(1)[0]])
    rescaled = search_instances(RoutingData.from_instance(
        "cvrp", one.pos, demand=one.demand, capacity=one.capacity, num_depots=2,
        depot_vehicles=[2, 2], raw_pos=one.pos * 10, scale=10.0), scale=5.0)
    assert rescaled.num_depots == 2 and rescaled.depot_vehicles.tolist() == [[2, 2]]
    assert torch.allclose(rescaled.pos[0], one.pos * 2)


def test_graph_encodings_refuse_several_depots_and_ipe_measures_from_the_routes_depot():
    sol = RoutingData.from_routes(_instance(k=2, n=6), [[2, 3, 4], [5, 6, 7]], [1, 0])
    from pyg_routing.transforms import LaplacianPE

    with pytest.raises(UnsupportedProblemError, match="LaplacianPE is computed on the route "
                                                      "graph around one depot; this solution "
                                                      "has 2 depots"):
        LaplacianPE()(sol.clone())
    assert IPEXPE()(sol.clone()).pe.shape[0] == 8


def _brute_force(inst: RoutingData) -> float:
    """Optimal cost of a tiny multi-depot CVRP: every assignment of customers to ordered
    routes, each from its best depot, every route within the capacity."""
    k, n = inst.depot_count, inst.num_nodes
    pos, demand, cap = inst.pos.double(), inst.demand.tolist(), float(inst.capacity)
    customers = list(range(k, n))
    best = math.inf
    for routes in all_route_sets(customers):
        if all(sum(demand[c] for c in r) <= cap for r in routes):
            best = min(best, sum(min(_length(pos, r, d) for d in range(k)) for r in routes))
    return best


def test_pyvrp_references_find_the_exhaustive_optimum_from_several_depots():
    g = torch.Generator().manual_seed(5)
    inst = RoutingData.from_instance("cvrp", torch.rand(7, 2, generator=g),
                                     demand=[0, 0, 2, 1, 2, 1, 1], capacity=4, num_depots=2)
    routes, depots = solve_pyvrp(inst, time_limit=0.3, return_depots=True)
    sol = RoutingData.from_routes(inst, routes, depots)
    sol.check()
    assert float(sol.cost()) == pytest.approx(_brute_force(inst), rel=1e-4)
    with pytest.raises(ValueError, match="the instance has 2 depots: routes alone would lose "
                                         "them; pass return_depots=True"):
        solve_pyvrp(inst, time_limit=0.1)
    [solved] = solve_instances([inst], "pyvrp", time_limit=0.3, progress=False)
    assert torch.equal(solved.route_depot, sol.route_depot) or \
        float(solved.cost()) == pytest.approx(float(sol.cost()), rel=1e-4)
    for other in ("ortools", "sweep"):
        with pytest.raises(ValueError, match="pyvrp' takes them"):
            solve_instances([inst], other, time_limit=0.1, progress=False)


def test_pyvrp_respects_the_vehicles_of_each_depot():
    pos = torch.tensor([[0.0, 0.0], [1.0, 1.0], [0.9, 0.9], [0.95, 1.0], [1.0, 0.9],
                        [0.1, 0.0]])
    inst = RoutingData.from_instance("cvrp", pos, demand=[0, 0, 2, 2, 2, 1], capacity=2,
                                     num_depots=2, depot_vehicles=[3, 1])
    routes, depots = solve_pyvrp(inst, time_limit=0.3, return_depots=True)
    sol = RoutingData.from_routes(inst, routes, depots)
    sol.check()                                   # depot 1 sends out one route at most
    assert depots.count(1) == 1 and depots.count(0) == 3


def test_a_batch_that_loses_the_vehicle_limits_is_refused_by_name():
    pos = torch.rand(7, 2, generator=torch.Generator().manual_seed(0))
    free = RoutingData.from_instance("cvrp", pos, demand=[0, 0, 1, 1, 1, 1, 1], capacity=5,
                                     num_depots=2)
    limited = RoutingData.from_instance("cvrp", pos, demand=[0, 0, 1, 1, 1, 1, 1], capacity=5,
                                        num_depots=2, depot_vehicles=[1, 1], name="tight")
    sols = [RoutingData.from_routes(d, [[2, 3], [4], [5, 6]], [0, 1, 0]) for d in (free, limited)]
    with pytest.raises(InvalidInstanceError, match="instance 1: its depots' vehicle "
                                                   "limits were lost in batching"):
        Batch.from_data_list(sols).check()
    with pytest.raises(KeyError, match="depot_vehicles"):       # PyG's own, as documented
        Batch.from_data_list(sols[::-1])
