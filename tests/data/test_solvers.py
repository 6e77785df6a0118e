"""PyVRP / OR-Tools reference solvers and the parallel driver."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pyg_routing.data.generators import make_generator
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.data.solvers import (
    SOLVERS,
    available_solvers,
    integer_instance,
    nearest_neighbor,
    resolve_solver,
    solve_instances,
    solve_ortools,
    solve_pyvrp,
    tours_to_routes,
)
from pyg_routing.errors import InfeasibleSolutionError

LIMIT = 0.2


def _instances(problem: str, n: int = 20, count: int = 3, seed: int = 0, **kw):
    return make_generator(problem, n, seed=seed, **kw).sample(count)


def _nn_costs(batch) -> list[float]:
    routes = tours_to_routes(nearest_neighbor(batch))
    return [float(RoutingData.from_routes(batch[i], r).cost()) for i, r in enumerate(routes)]


@pytest.mark.parametrize("problem,kw", [("tsp", {}), ("cvrp", {}), ("vrptw", {}),
                                        ("pcvrp", {}), ("pcvrp", {"kappa": 0.1})])
def test_pyvrp_feasible_and_not_worse_than_nn(problem: str, kw: dict) -> None:
    batch = _instances(problem, **kw)
    nn = _nn_costs(batch)
    for i in range(len(batch)):
        inst = batch[i]
        routes = solve_pyvrp(inst, time_limit=LIMIT, seed=i)
        sol = RoutingData.from_routes(inst, routes)
        sol.check()
        assert float(sol.cost()) <= nn[i] + 1e-5
        assert not inst.has_solution                     # input left alone
        if problem == "tsp":
            assert len(routes) == 1


def test_pyvrp_pcvrp_collects_prizes() -> None:
    # With generous prizes the optimum visits customers and its cost is negative
    # (collected prizes exceed the distance), unlike the empty solution's 0.
    batch = _instances("pcvrp", kappa=0.2)
    for i in range(len(batch)):
        sol = RoutingData.from_routes(batch[i], solve_pyvrp(batch[i], LIMIT))
        sol.check()
        assert sol.visited.sum() > 0 and float(sol.cost()) < 0


def test_integer_instance_is_conservative() -> None:
    inst = _instances("vrptw", 10, 1)[0]
    ii = integer_instance(inst)
    n = inst.num_nodes
    exact = (inst.pos[:, None] - inst.pos[None]).norm(dim=-1).double().numpy()
    s = ii.scale
    assert (ii.duration / s >= exact - 1e-9).all()
    assert np.abs(ii.distance / s - exact).max() <= 0.5 / s + 1e-9
    tw = inst.time_window.double().numpy()
    assert (ii.time_window[:, 0] / s >= tw[:, 0] - 1e-9).all()
    assert (ii.time_window[:, 1] / s <= tw[:, 1] + 1e-9).all()
    assert (ii.service_time / s >= inst.service_time.double().numpy() - 1e-9).all()
    assert ii.demand.tolist() == inst.demand.long().tolist() and ii.capacity == 30
    assert ii.distance.shape == (n, n) and ii.distance.dtype == np.int64


def test_fractional_demands_are_scaled_conservatively() -> None:
    inst = RoutingData.from_instance("cvrp", torch.rand(6, 2, generator=torch.Generator()
                                                        .manual_seed(0)),
                                     demand=[0, 0.25, 0.5, 0.3, 0.7, 0.2], capacity=1.0)
    ii = integer_instance(inst)
    assert ii.capacity == 1_000_000 and ii.demand.tolist()[1] == 250_000
    sol = RoutingData.from_routes(inst, solve_pyvrp(inst, LIMIT))
    sol.check()


def test_benchmark_coordinates_are_exact() -> None:
    # Integer coordinates with TSPLIB nint rounding: PyVRP's integer objective is
    # the benchmark's own cost, with no scaling error at all.
    raw = torch.tensor([[0, 0], [3, 4], [10, 0], [7, 7], [1, 9], [6, 2]], dtype=torch.float64)
    inst = RoutingData.from_instance("cvrp", raw / 10, demand=[0, 3, 4, 5, 2, 6], capacity=10,
                                     raw_pos=raw, scale=10.0, rounding="nint", name="toy")
    ii = integer_instance(inst)
    assert ii.scale == 1.0
    assert ii.distance[0, 1] == 5 and ii.distance[0, 3] == 10       # sqrt(98) -> 10
    routes = solve_pyvrp(inst, LIMIT)
    sol = RoutingData.from_routes(inst, routes)
    sol.check()
    int_cost = sum(ii.distance[a, b] for r in routes for a, b in zip([0, *r], [*r, 0]))
    assert float(sol.cost()) == int_cost


@pytest.mark.filterwarnings("ignore::pyvrp.exceptions.PenaltyBoundWarning")
def test_pyvrp_infeasible_raises_with_name() -> None:
    inst = RoutingData.from_instance(
        "vrptw", [[0.0, 0.0], [1.0, 0.0], [0.0, 0.5]], demand=[0, 1, 1], capacity=10,
        time_window=[[0, 10], [0, 0.5], [0, 10]], service_time=[0, 0, 0], name="late")
    with pytest.raises(InfeasibleSolutionError, match="instance 'late': PyVRP found no feasible"):
        solve_pyvrp(inst, time_limit=0.1)
    # Unnamed: solve_instances names it by its position in the list.
    unnamed = RoutingData.from_instance("vrptw", inst.pos, demand=inst.demand,
                                        capacity=inst.capacity, time_window=inst.time_window,
                                        service_time=inst.service_time)
    good = _instances("vrptw", 2, 1)[0]
    with pytest.raises(InfeasibleSolutionError, match="^instance 1: PyVRP found no feasible"):
        solve_instances([good, unnamed], time_limit=0.1, num_workers=1, progress=False)


def _pdptw() -> RoutingData:
    pos = [[0, 0], [1, 0], [2, 0], [0, 1], [0, 2]]
    return RoutingData.from_instance(
        "pdptw", pos, demand=[0, 2, 3, -2, -3], capacity=4,
        time_window=[[0, 100], [0, 100], [0, 100], [0, 100], [0, 100]],
        service_time=[0, 1, 1, 1, 1], pickup_delivery_index=[[1, 2], [3, 4]])


def test_pyvrp_pickup_delivery_as_shipments() -> None:
    # PDTSP: one route, pickups first (checked by RoutingData.check).
    batch = _instances("pdtsp", 20)
    nn = _nn_costs(batch)
    for i in range(len(batch)):
        sol = RoutingData.from_routes(batch[i], solve_pyvrp(batch[i], LIMIT))
        sol.check()
        assert float(sol.cost()) <= nn[i] + 1e-5
    # PDPTW: capacity 4 cannot carry both shipments (2 + 3) at once.
    sol = RoutingData.from_routes(_pdptw(), solve_pyvrp(_pdptw(), LIMIT))
    sol.check()


def test_ortools_pdtsp_feasible_and_not_worse_than_nn() -> None:
    batch = _instances("pdtsp", 20)
    nn = _nn_costs(batch)
    for i in range(len(batch)):
        routes = solve_ortools(batch[i], time_limit=0.3)
        assert len(routes) == 1
        sol = RoutingData.from_routes(batch[i], routes)
        sol.check()
        assert float(sol.cost()) <= nn[i] + 1e-5


@pytest.mark.parametrize("problem", ["tsp", "cvrp", "vrptw", "pcvrp"])
def test_ortools_fallback_problems(problem: str) -> None:
    batch = _instances(problem, 12, 2, kappa=0.1) if problem == "pcvrp" else \
        _instances(problem, 12, 2)
    nn = _nn_costs(batch)
    for i in range(len(batch)):
        sol = RoutingData.from_routes(batch[i], solve_ortools(batch[i], time_limit=0.2))
        sol.check()
        assert float(sol.cost()) <= nn[i] + 1e-5


def test_unsupported_problem_errors() -> None:
    with pytest.raises(ValueError, match="solve_ortools does not support problem 'pdptw'"):
        solve_ortools(_pdptw())


def test_solver_names() -> None:
    assert set(available_solvers()) == set(SOLVERS) >= {
        "auto", "pyvrp", "ortools", "nearest_neighbor", "sweep", "insertion"}
    assert resolve_solver("auto", "pdtsp") == "pyvrp"
    assert resolve_solver("auto", "vrptw") == "pyvrp"
    with pytest.raises(ValueError, match="unknown solver 'lkh'; valid solvers: auto, pyvrp"):
        solve_instances(_instances("tsp", 5, 1).to_data_list(), solver="lkh")
    with pytest.raises(ValueError, match="unknown solver"):
        solve_instances([], solver="lkh")


def test_parallel_preserves_order() -> None:
    # Mixed problems and sizes, so a shuffled result would be visible.
    data = (_instances("cvrp", 10, 2, seed=1).to_data_list()
            + _instances("pdtsp", 8, 2, seed=2).to_data_list()
            + _instances("tsp", 12, 2, seed=3).to_data_list())
    out = solve_instances(data, time_limit=0.1, num_workers=2, progress=False)
    assert len(out) == len(data)
    for src, sol in zip(data, out):
        assert torch.equal(src.pos, sol.pos) and src.problem == sol.problem
        assert sol.has_solution and not src.has_solution
        sol.check()
    # In-process path: same instances, same order (optimal on these tiny sizes).
    seq = solve_instances(data, time_limit=0.1, num_workers=1, progress=False)
    for a, b in zip(out, seq):
        assert float(a.cost()) == pytest.approx(float(b.cost()), rel=1e-6)


def test_a_small_job_solves_in_this_process_unless_workers_are_asked(monkeypatch) -> None:
    import pyg_routing.data.solvers.parallel as parallel

    class NoPool:
        def __init__(self, *args, **kwargs):
            raise AssertionError("a process pool was started")

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", NoPool)
    data = _instances("cvrp", 8, 3, seed=4).to_data_list()
    # 3 x 0.1 s <= INLINE_SECONDS: no worker re-imports the caller's script
    out = solve_instances(data, time_limit=0.1, progress=False)
    assert all(sol.has_solution for sol in out)
    with pytest.raises(AssertionError, match="process pool was started"):
        solve_instances(data, time_limit=0.1, num_workers=2, progress=False)
    with pytest.raises(AssertionError, match="process pool was started"):
        solve_instances(data, time_limit=parallel.INLINE_SECONDS, progress=False)


@pytest.mark.parametrize("solver", ["nearest_neighbor", "sweep", "insertion"])
def test_parallel_constructive_batches_like_the_heuristic(solver: str) -> None:
    problem = {"nearest_neighbor": "vrptw", "sweep": "cvrp", "insertion": "pdtsp"}[solver]
    small = _instances(problem, 10, 3, seed=5)
    large = _instances(problem, 14, 2, seed=6)
    data = [small[0], large[0], small[1], large[1], small[2]]
    out = solve_instances(data, solver=solver, progress=False)
    fn = SOLVERS[solver]
    expected = tours_to_routes(fn(small)), tours_to_routes(fn(large))
    order = [expected[0][0], expected[1][0], expected[0][1], expected[1][1], expected[0][2]]
    assert [sol.routes() for sol in out] == order
    for sol in out:
        sol.check()


def test_parallel_rejects_unsupported_heuristic() -> None:
    with pytest.raises(ValueError, match="sweep does not support problem 'tsp'"):
        solve_instances(_instances("tsp", 6, 1).to_data_list(), solver="sweep", progress=False)


def test_empty_pcvrp_solutions_pass_through() -> None:
    # With small prizes that rarely pay for a detour some NN solutions are empty;
    # solve_instances must return them as valid solutions of cost 0.
    data = _instances("pcvrp", 10, 8, seed=0, kappa=0.02).to_data_list()
    out = solve_instances(data, solver="nearest_neighbor", progress=False)
    empty = [sol for sol in out if not sol.routes()]
    assert empty and len(empty) < len(out)
    for sol in empty:
        sol.check()
        assert float(sol.cost()) == 0.0 and not sol.visited.any()
