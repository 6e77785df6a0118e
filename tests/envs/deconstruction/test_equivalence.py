"""The numba kernels against the independent pure-Python reference: identical tours
and costs on random CVRP / VRPTW / PCVRP cases, and every result a valid solution."""

import numba
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pyg_routing.envs.deconstruction import (
    apply_sets_sa,
    commit_sets,
    draw_start_randomness,
    draw_uniforms,
    evaluate_sets,
    start_solutions,
)
from pyg_routing.envs.deconstruction import repair_reference as ref
from tests.envs.deconstruction.common import (
    PROBLEMS,
    TWO_SLOTS,
    assert_same,
    assert_valid,
    hypothesis_settings,
    make_instances,
    random_sets,
)

SETTINGS = hypothesis_settings(25)
INST = TWO_SLOTS


def _start(problem: str, n: int, seed: int, rounds: int = 8):
    inst, arrays = make_instances(problem, n, seed)
    state = start_solutions(arrays, INST, rounds=rounds, num_removed=max(1, n // 4), rng=seed)
    return inst, arrays, state


@settings(**SETTINGS)
@given(problem=st.sampled_from(PROBLEMS), n=st.integers(10, 40), seed=st.integers(0, 10**6),
       rounds=st.integers(0, 25), frac=st.floats(0.05, 0.6))
def test_start_solutions_match_reference(problem, n, seed, rounds, frac):
    inst, arrays = make_instances(problem, n, seed)
    removal, u = draw_start_randomness(len(INST), n, rounds, max(1, int(n * frac)), rng=seed)
    state = start_solutions(arrays, INST, rounds=rounds, removal=removal, u=u)
    routes = ref.start_solutions(arrays, INST, removal, u)
    assert_same(state, routes, [ref.cost(arrays, int(i), r) for i, r in zip(INST, routes)])
    assert_valid(state, arrays, inst)


@settings(**SETTINGS)
@given(problem=st.sampled_from(PROBLEMS), n=st.integers(10, 40), seed=st.integers(0, 10**6),
       k=st.integers(1, 10), num_sets=st.integers(1, 12), recreate_n=st.integers(1, 5),
       temperature=st.sampled_from([0.0, 0.0, 0.01, 0.1, 1.0]))
def test_apply_sets_sa_matches_reference(problem, n, seed, k, num_sets, recreate_n,
                                         temperature):
    inst, arrays, state = _start(problem, n, seed)
    rng = np.random.default_rng(seed)
    sets = random_sets(rng, len(INST), num_sets, k, n)
    u = draw_uniforms(rng, sets.shape[:2], k, recreate_n)
    routes = state.to_routes()
    best = state.clone()
    accepted = apply_sets_sa(state, best, arrays, sets, u, temperature, recreate_n)
    r_routes, r_costs, r_best, r_best_costs, r_acc = ref.apply_sets_sa(
        arrays, routes, INST, sets, u, temperature, recreate_n)
    assert_same(state, r_routes, r_costs)
    assert_same(best, r_best, r_best_costs)
    assert accepted.tolist() == r_acc
    assert (best.cost <= state.cost).all()
    assert_valid(state, arrays, inst)
    assert_valid(best, arrays, inst)


@settings(**SETTINGS)
@given(problem=st.sampled_from(PROBLEMS), n=st.integers(10, 40), seed=st.integers(0, 10**6),
       k=st.integers(1, 10), num_sets=st.integers(1, 10), recreate_n=st.integers(1, 5))
def test_evaluate_and_commit_match_reference(problem, n, seed, k, num_sets, recreate_n):
    inst, arrays, state = _start(problem, n, seed)
    rng = np.random.default_rng(seed + 1)
    sets = random_sets(rng, len(INST), num_sets, k, n)
    u = draw_uniforms(rng, sets.shape[:2], k, recreate_n)
    routes = state.to_routes()
    before = state.clone()
    costs = evaluate_sets(state, arrays, sets, u, recreate_n)
    assert state.to_routes() == routes and np.array_equal(state.cost, before.cost)
    np.testing.assert_array_equal(costs, ref.evaluate_sets(arrays, routes, INST, sets, u,
                                                           recreate_n))
    which = costs.argmin(axis=1)
    which[0] = -1                                              # -1 leaves a slot alone
    commit_sets(state, arrays, sets, u, which, recreate_n)
    r_routes = ref.commit_sets(arrays, routes, INST, sets, u, which, recreate_n)
    assert_same(state, r_routes, [ref.cost(arrays, int(i), r) for i, r in zip(INST, r_routes)])
    # The committed solution is the scored one: its exact cost is the evaluated cost.
    np.testing.assert_allclose(state.cost[1:], costs.min(axis=1)[1:], rtol=0, atol=1e-9)
    assert state.to_routes()[0] == routes[0]
    assert_valid(state, arrays, inst)


@settings(max_examples=5, deadline=None)
@given(problem=st.sampled_from(PROBLEMS), seed=st.integers(0, 10**6), cut=st.integers(0, 10))
def test_sets_apply_sequentially(problem, seed, cut):
    """R sets in one call = the first ``cut`` sets, then the rest (a later set just
    removes its ids from wherever they are now)."""
    _, arrays, state = _start(problem, 30, seed)
    rng = np.random.default_rng(seed)
    sets = random_sets(rng, len(INST), 10, 8, 30)
    u = draw_uniforms(rng, sets.shape[:2], 8, 5)
    one, one_best = state.clone(), state.clone()
    apply_sets_sa(one, one_best, arrays, sets, u, 0.05)
    two, two_best = state.clone(), state.clone()
    apply_sets_sa(two, two_best, arrays, sets[:, :cut], u[:, :cut], 0.05)
    apply_sets_sa(two, two_best, arrays, sets[:, cut:], u[:, cut:], 0.05)
    assert one.to_routes() == two.to_routes() and np.array_equal(one.cost, two.cost)
    assert one_best.to_routes() == two_best.to_routes()


def test_threads_do_not_change_results():
    _, arrays, state = _start("vrptw", 35, 3)
    rng = np.random.default_rng(0)
    sets = random_sets(rng, len(INST), 20, 10, 35)
    u = draw_uniforms(rng, sets.shape[:2], 10, 5)
    results = []
    before = numba.get_num_threads()
    try:
        for threads in {1, min(2, numba.config.NUMBA_NUM_THREADS)}:
            numba.set_num_threads(threads)
            s = state.clone()
            apply_sets_sa(s, s.clone(), arrays, sets, u, 0.05)
            results.append((s.to_routes(), s.cost.tolist()))
    finally:
        numba.set_num_threads(before)
    assert all(r == results[0] for r in results)
