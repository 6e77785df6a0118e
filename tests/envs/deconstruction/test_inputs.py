"""Bad inputs to the repair and start wrappers: typed errors naming the slot, set and
customer; and the inputs that are not meant to change stay unchanged."""

import numpy as np
import pytest

from pyg_routing.envs.deconstruction import (
    InvalidRemovalSetError,
    apply_sets_sa,
    commit_sets,
    draw_start_randomness,
    draw_uniforms,
    evaluate_sets,
    start_solutions,
    uniforms_per_set,
)
from pyg_routing.errors import InvalidSolutionError, RoutingError
from tests.envs.deconstruction.common import make_instances, random_sets


@pytest.fixture(scope="module")
def case():
    _, arrays = make_instances("pcvrp", 12, seed=4)
    state = start_solutions(arrays, np.array([0, 1], np.int32), rounds=5, rng=0)
    return arrays, state


def _sets(row=(5, 6)):
    """Slot 0: a good set; slot 1: ``row`` (padded with -1)."""
    out = np.full((2, 1, 4), -1, np.int64)
    out[0, 0] = [1, 2, 3, 4]
    out[1, 0, :len(row)] = row
    return out


@pytest.mark.parametrize("row, match", [
    ([5, 7, 5], r"slot 1, set 0, customer 5: the customer appears twice"),
    ([3, 0, 2], r"slot 1, set 0, customer 0 \(position 1\): the depot cannot be removed"),
    ([3, 13], r"slot 1, set 0, customer 13 \(position 1\): customer id out of range"),
    ([3, -7], r"slot 1, set 0, customer -7 \(position 1\): customer id out of range"),
    ([-1, 4], r"slot 1, set 0, customer -1 \(position 0\): -1 padding must come after"),
])
def test_bad_sets_name_slot_set_and_customer(case, row, match):
    arrays, state = case
    sets = _sets(row)
    before = state.clone()
    for call in (lambda: evaluate_sets(state, arrays, sets, rng=0),
                 lambda: apply_sets_sa(state, state.clone(), arrays, sets, rng=0),
                 lambda: commit_sets(state, arrays, sets, draw_uniforms(0, (2, 1), 4, 5),
                                     np.array([0, 0]))):
        with pytest.raises(InvalidRemovalSetError, match=match):
            call()
    assert state.to_routes() == before.to_routes()


def test_bad_shapes_and_parameters(case):
    arrays, state = case
    sets = _sets()
    u = draw_uniforms(0, (2, 1), 4, 5)
    with pytest.raises(InvalidRemovalSetError, match=r"`sets` must have shape \[S=2"):
        evaluate_sets(state, arrays, sets[:1], rng=0)
    with pytest.raises(InvalidRemovalSetError, match="integer customer ids"):
        evaluate_sets(state, arrays, sets.astype(float), rng=0)
    with pytest.raises(InvalidRemovalSetError, match=r"`u` must have shape \(2, 1, 33\)"):
        evaluate_sets(state, arrays, sets, u[..., :-1])
    bad_u = u.copy()
    bad_u[1, 0, 3] = 1.5
    with pytest.raises(InvalidRemovalSetError, match=r"slot 1, set 0: uniform 3 is 1.5"):
        evaluate_sets(state, arrays, sets, bad_u)
    with pytest.raises(InvalidRemovalSetError, match="recreate_n must be an integer >= 1"):
        evaluate_sets(state, arrays, sets, recreate_n=0, rng=0)
    with pytest.raises(InvalidRemovalSetError, match="slot 1: temperature -0.1"):
        apply_sets_sa(state, state.clone(), arrays, sets, u, np.array([0.0, -0.1]))
    with pytest.raises(InvalidRemovalSetError, match="slot 0: which = 1 is not a set index"):
        commit_sets(state, arrays, sets, u, np.array([1, 0]))
    with pytest.raises(InvalidSolutionError, match="same slots"):
        apply_sets_sa(state, state.take([0]), arrays, sets, u)
    with pytest.raises(InvalidSolutionError, match="must not share memory"):
        apply_sets_sa(state, state, arrays, sets, u)
    with pytest.raises(InvalidSolutionError, match=r"ToursState.succ .* \(N = 12"):
        evaluate_sets(state.take([0, 1]).__class__(**{**state.arrays(),
                                                      "succ": state.succ[:, :5].copy()}),
                      arrays, sets, u)


def test_inputs_are_not_mutated(case):
    arrays, state = case
    rng = np.random.default_rng(0)
    sets = random_sets(rng, 2, 6, 5, 12).astype(np.int64)      # converted, not written
    u = draw_uniforms(rng, (2, 6), 5, 5)
    temps = np.array([0.5, 0.0])
    copies = [x.copy() for x in (sets, u, temps)]
    dist = arrays.dist.copy()
    work = state.clone()
    before = state.clone()
    evaluate_sets(work, arrays, sets, u)
    assert work.to_routes() == before.to_routes() and np.array_equal(work.cost, before.cost)
    apply_sets_sa(work, work.clone(), arrays, sets, u, temps)
    commit_sets(work, arrays, sets, u, np.array([2, -1]))
    for x, y in zip((sets, u, temps), copies):
        assert np.array_equal(x, y)
    assert np.array_equal(arrays.dist, dist)
    assert state.to_routes() == before.to_routes()


def test_start_solution_inputs():
    _, arrays = make_instances("cvrp", 10, seed=0, b=1)
    with pytest.raises(RoutingError, match="instance rows in 0..0"):
        start_solutions(arrays, np.array([1], np.int32))
    removal, u = draw_start_randomness(1, 10, 3, 2, rng=0)
    removal[0, 1, 1] = removal[0, 1, 0]
    with pytest.raises(InvalidRemovalSetError, match="slot 0, set 1, customer .* twice"):
        start_solutions(arrays, np.zeros(1, np.int32), rounds=3, removal=removal, u=u)
    with pytest.raises(InvalidRemovalSetError, match=r"`u` must have shape \(1, 3, 3\)"):
        start_solutions(arrays, np.zeros(1, np.int32), rounds=3,
                        removal=np.ones((1, 3, 2), np.int32) * [[[1, 2]]], u=u[..., :2])
    assert uniforms_per_set(2, 1) == 3
    state = start_solutions(arrays, np.zeros(2, np.int32), rounds=0)
    assert state.to_routes() == [[[c] for c in range(1, 11)]] * 2          # singletons
