"""NDS's destroy-and-repair search on explicit (asymmetric) cost matrices and open
routes: the numba kernels against the pure-Python reference, feasibility under
``RoutingData.check``, direction-correct insertions, the Euclidean path unchanged."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pyg_routing.data import RoutingData, make_generator
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.envs.deconstruction import (
    DeconstructionEnv,
    ProblemArrays,
    RandomDestroy,
    SISRDestroy,
    ToursState,
    apply_sets_sa,
    commit_sets,
    draw_start_randomness,
    draw_uniforms,
    euclidean_distances,
    evaluate_sets,
    start_solutions,
)
from pyg_routing.envs.deconstruction import repair_reference as ref
from pyg_routing.errors import InvalidInstanceError
from pyg_routing.search.destroy_repair import DestroyRepairSearch
from pyg_routing.search.schedule import TemperatureSchedule
from pyg_routing.search.stop import MaxIterations
from tests.envs.deconstruction.common import assert_same, assert_valid, random_sets

INST = np.array([0, 0, 1, 1, 2, 2], np.int32)
#: (costs, open_routes) of the generator: asymmetric streets, open, both, open on some
VARIANTS = {"streets": ("streets", False), "open": ("euclidean", True),
            "streets_open": ("streets", True), "mixed_open": ("streets", None)}


def _instances(problem: str, variant: str, seed: int, n: int = 7, b: int = 3
               ) -> RoutingInstances:
    costs, opened = VARIANTS[variant]
    kw = {"costs": costs, "grid": 4 + seed % 2} if costs == "streets" else {}
    inst = make_generator(problem, n, seed=seed, open_routes=bool(opened), **kw).sample(b)
    if opened is None:                           # open and closed instances in one batch
        inst.open_routes = torch.arange(b) % 2 == 0
    return inst


CASES = [(p, v, s) for p in ("cvrp", "vrptw") for v in VARIANTS for s in (0, 1, 2)]


def test_arrays_follow_the_cost_rule():
    for problem, variant, seed in CASES[:8]:
        inst = _instances(problem, variant, seed)
        arrays = ProblemArrays.from_instances(inst)
        want = inst.costs().double().numpy()
        np.testing.assert_allclose(arrays.dist, want, rtol=0, atol=1e-6)
        if inst.cost_matrix is not None:
            assert not np.array_equal(arrays.dist, arrays.dist.transpose(0, 2, 1))
        opened = inst.open_routes.numpy() if inst.open_routes is not None else False
        assert (arrays.open_routes == opened).all()


@pytest.mark.parametrize("problem,variant,seed", CASES)
def test_kernels_match_reference(problem, variant, seed):
    """(a) start solutions, SA, evaluate and commit: numba == reference, tour for tour."""
    inst = _instances(problem, variant, seed)
    arrays = ProblemArrays.from_instances(inst)
    n = arrays.num_customers
    removal, u = draw_start_randomness(len(INST), n, 10, 3, rng=seed)
    state = start_solutions(arrays, INST, rounds=10, removal=removal, u=u)
    routes = ref.start_solutions(arrays, INST, removal, u)
    assert_same(state, routes, [ref.cost(arrays, int(i), r) for i, r in zip(INST, routes)])
    assert_valid(state, arrays, inst)

    rng = np.random.default_rng(seed)
    for temperature in (0.0, 0.5):
        sets = random_sets(rng, len(INST), 6, 4, n)
        u = draw_uniforms(rng, sets.shape[:2], 4, 3)
        before, best = state.to_routes(), state.clone()
        accepted = apply_sets_sa(state, best, arrays, sets, u, temperature, 3)
        r_routes, r_costs, r_best, r_best_costs, r_acc = ref.apply_sets_sa(
            arrays, before, INST, sets, u, temperature, 3)
        assert_same(state, r_routes, r_costs)
        assert_same(best, r_best, r_best_costs)
        assert accepted.tolist() == r_acc
        assert_valid(state, arrays, inst)
        assert_valid(best, arrays, inst)

    sets = random_sets(rng, len(INST), 5, 4, n)
    u = draw_uniforms(rng, sets.shape[:2], 4, 2)
    before = state.to_routes()
    cost = evaluate_sets(state, arrays, sets, u, 2)
    np.testing.assert_allclose(cost, ref.evaluate_sets(arrays, before, INST, sets, u, 2),
                               rtol=0, atol=1e-9)
    which = cost.argmin(1)
    commit_sets(state, arrays, sets, u, which, 2)
    want = ref.commit_sets(arrays, before, INST, sets, u, which, 2)
    assert_same(state, want, [ref.cost(arrays, int(i), r) for i, r in zip(INST, want)])
    assert_valid(state, arrays, inst)


@pytest.mark.parametrize("problem", ["cvrp", "vrptw"])
@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("destroy", [SISRDestroy(), RandomDestroy(k=3)], ids=["sisr", "random"])
def test_search_solutions_are_feasible_with_their_cost(problem, variant, destroy):
    """(b) a short search: every returned solution passes check() at its reported cost."""
    inst = _instances(problem, variant, seed=3, n=8)
    search = DestroyRepairSearch(augment=2, rollouts=6, recreate_n=2,
                                 schedule=TemperatureSchedule(0.5, 0.01))
    result = search.run(inst, destroy, MaxIterations(6), seed=5)
    assert result.iterations == 6
    for b, routes in enumerate(result.routes):
        data = RoutingData.from_routes(inst[b], routes)
        data.check()
        assert sorted(c for r in routes for c in r) == list(range(1, 9))
        assert abs(float(data.cost()) - float(result.cost[b])) <= 1e-5
    again = search.run(inst, destroy, MaxIterations(6), seed=5)
    assert again.routes == result.routes and torch.equal(again.cost, result.cost)


def _one_tour_instance(matrix: torch.Tensor) -> RoutingInstances:
    n1 = matrix.size(0)
    return RoutingInstances(Problem.CVRP, pos=torch.rand(1, n1, 2, generator=torch.Generator()
                                                         .manual_seed(0)),
                            demand=torch.tensor([[0.0] + [1.0] * (n1 - 1)]),
                            capacity=torch.tensor([10.0]), cost_matrix=matrix[None])


def test_insertion_uses_the_driven_direction():
    """(c) removing 3 from the tour 0-1-2-3-0 and repairing it: with ``d[1,3] = 1``
    (all else 10) the best place is between 1 and 2 (the arc INTO 3 from 1 is cheap);
    with the transposed matrix the cheap arc is 3 -> 1, so 3 goes first. Reading
    ``d[3,p]`` for the arc into 3 would tie every position (3 first); reading
    ``d[n,3]`` for the arc out of 3 would put 3 first too. Kernel and reference agree."""
    matrix = torch.full((4, 4), 10.0)
    matrix[1, 3] = 1.0
    chosen = {}
    for name, m in (("given", matrix), ("transposed", matrix.T.contiguous())):
        inst = _one_tour_instance(m)
        arrays = ProblemArrays.from_instances(inst)
        state = ToursState.from_routes(arrays, [[[1, 2, 3]]], [0])
        sets = np.array([[[3]]], np.int32)
        u = draw_uniforms(0, (1, 1), 1, 1)
        before = state.to_routes()
        commit_sets(state, arrays, sets, u, np.array([0]), 1)
        want = ref.commit_sets(arrays, before, np.zeros(1, np.int32), sets, u, [0], 1)
        assert state.to_routes() == want
        assert_valid(state, arrays, inst)
        chosen[name] = want[0]
    assert chosen == {"given": [[1, 3, 2]], "transposed": [[3, 1, 2]]}


@pytest.mark.parametrize("problem", ["cvrp", "vrptw"])
def test_euclidean_matrix_gives_identical_search(problem):
    """(d) a symmetric matrix computed as the Euclidean ``dist`` is computed: the same
    arrays bit for bit, and the same search, route for route and cost for cost."""
    plain = make_generator(problem, 9, seed=4).sample(2)
    pos = plain.pos.double().numpy()
    matrix = RoutingInstances(**{**plain.__dict__,
                                 "cost_matrix": torch.from_numpy(euclidean_distances(pos))})
    a, b = ProblemArrays.from_instances(plain), ProblemArrays.from_instances(matrix)
    assert np.array_equal(a.dist, b.dist)
    search = DestroyRepairSearch(augment=2, rollouts=5, recreate_n=2)
    for destroy in (SISRDestroy(), RandomDestroy(k=3)):
        r1 = search.run(plain, destroy, MaxIterations(5), seed=1)
        r2 = search.run(matrix, destroy, MaxIterations(5), seed=1)
        assert r1.routes == r2.routes
        assert torch.equal(r1.cost, r2.cost) and torch.equal(r1.initial_cost, r2.initial_cost)


def test_open_vrptw_ignores_the_depot_closing_time():
    """(e) open VRPTW whose depot closes before any customer's service ends: closed it
    is refused (no customer can return in time), open the start solutions and the
    search are feasible under check()."""
    inst = make_generator("vrptw", 8, seed=6, costs="streets", grid=5,
                          open_routes=True).sample(3)
    inst.time_window = inst.time_window.clone()
    inst.time_window[:, 0, 1] = 0.5
    ends = inst.time_window[:, 1:, 0] + inst.service_time[:, 1:]
    assert (ends > 0.5).all()
    closed = RoutingInstances(**{**inst.__dict__, "open_routes": None})
    with pytest.raises(InvalidInstanceError):
        ProblemArrays.from_instances(closed)
    arrays = ProblemArrays.from_instances(inst)
    slots = np.repeat(np.arange(3, dtype=np.int32), 2)
    removal, u = draw_start_randomness(len(slots), 8, 20, 3, rng=2)
    state = start_solutions(arrays, slots, rounds=20, removal=removal, u=u)
    routes = ref.start_solutions(arrays, slots, removal, u)
    assert_same(state, routes, [ref.cost(arrays, int(i), r) for i, r in zip(slots, routes)])
    assert_valid(state, arrays, inst)
    # customers were merged into tours that end long after the depot closed
    assert max(len(r) for sol in routes for r in sol) >= 2
    result = DestroyRepairSearch(augment=2, rollouts=6, recreate_n=2).run(
        inst, SISRDestroy(), MaxIterations(5), seed=2)
    for b, routes in enumerate(result.routes):
        data = RoutingData.from_routes(inst[b], routes)
        data.check()
        assert abs(float(data.cost()) - float(result.cost[b])) <= 1e-5


def test_env_and_arrays_checks_accept_the_new_costs():
    env = DeconstructionEnv(recreate_n=2)
    assert set(env.variants) == {"euclidean", "explicit", "open", "multi_depot"}
    inst = _instances("cvrp", "streets_open", seed=0, n=8)
    batch = env.reset(inst, augment=2, rng=0)
    env.warm_up(batch, SISRDestroy(), 2, 4, np.random.default_rng(0))
    assert_valid(batch.state, batch.arrays, inst)
    # the search takes the matrix arrays as the instances' own ...
    search = DestroyRepairSearch(augment=2, rollouts=3, recreate_n=1)
    search.run(inst, SISRDestroy(), MaxIterations(1), seed=0, arrays=batch.arrays)
    # ... and refuses the coordinates' arrays, or the closed-route ones
    coords = ProblemArrays.from_instances(
        RoutingInstances(**{**inst.__dict__, "cost_matrix": None}))
    with pytest.raises(InvalidInstanceError, match="cost matrix gives"):
        search.run(inst, SISRDestroy(), MaxIterations(1), seed=0, arrays=coords)
    closed = ProblemArrays.from_instances(RoutingInstances(**{**inst.__dict__,
                                                              "open_routes": None}))
    with pytest.raises(InvalidInstanceError, match="closed routes"):
        search.run(inst, SISRDestroy(), MaxIterations(1), seed=0, arrays=closed)


def test_dist_in_is_the_transpose_and_no_copy_when_symmetric():
    from pyg_routing.data import make_generator
    from pyg_routing.envs.deconstruction.problem import ProblemArrays

    plain = ProblemArrays.from_instances(make_generator("cvrp", 8, seed=0).sample(2))
    assert plain.dist_in is plain.dist
    streets = ProblemArrays.from_instances(
        make_generator("cvrp", 8, seed=0, costs="streets", grid=4).sample(2))
    assert streets.dist_in.flags.c_contiguous
    assert np.array_equal(streets.dist_in, streets.dist.transpose(0, 2, 1))
    assert streets.dist_in is streets.dist_in                     # cached
