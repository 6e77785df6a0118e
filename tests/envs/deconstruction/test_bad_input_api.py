"""Bad input to the destroy-and-repair Python API (issue 28, class 1): each row of the
tables is a call, the typed error it raises and a regex of the message naming the
offending argument, value, slot, set or customer. Then: what is passed in is never
modified, and valid input in its other spellings gives the very same numbers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pyg_routing.data.solvers import stack_instances
from pyg_routing.envs.deconstruction import (
    DeconstructionEnv,
    InvalidRemovalSetError,
    PolicyDestroy,
    ProblemArrays,
    RandomDestroy,
    SISRDestroy,
    start_solutions,
)
from pyg_routing.errors import InvalidInstanceError, InvalidSolutionError
from pyg_routing.models import NDSPolicy
from pyg_routing.search import DestroyRepairSearch, MaxIterations
from tests.envs.deconstruction.common import make_instances

N = 10
S = 4                                         # 2 instances x augment 2


@pytest.fixture(scope="module")
def case():
    inst, arrays = make_instances("cvrp", N, seed=0)
    other_inst, other = make_instances("cvrp", N, seed=1)          # same sizes
    bigger = make_instances("cvrp", N + 2, seed=0)[1]
    return dict(inst=inst, arrays=arrays, other=other, other_inst=other_inst,
                bigger=bigger)


def _batch(case):
    return DeconstructionEnv(3).reset(case["inst"], augment=2, rng=0)


def _sets(value=None, shape=(S, 2, 3)):
    """Valid ``int64`` sets ``[S, 2, 3]``; ``value`` overwrites slot 1, set 0, position 1."""
    sets = np.tile(np.array([1, 2, 3], np.int64), (*shape[:2], 1))
    if value is not None:
        sets = sets.astype(type(value)) if isinstance(value, float) else sets
        sets[1, 0, 1] = value
    return sets


ENV = DeconstructionEnv(3)
SISR = SISRDestroy(c_bar=3)
RNG = np.random.default_rng

# (call, error type, message regex): the environment's constructor and reset
CONSTRUCT = [
    (lambda c: DeconstructionEnv(0), InvalidRemovalSetError, r"recreate_n .* >= 1, got 0"),
    (lambda c: DeconstructionEnv(2.5), InvalidRemovalSetError, r"recreate_n .* got 2\.5"),
    (lambda c: DeconstructionEnv(True), InvalidRemovalSetError, r"recreate_n .* got True"),
    (lambda c: DeconstructionEnv("3"), InvalidRemovalSetError, r"recreate_n .* got '3'"),
    (lambda c: ENV.reset(c["inst"], augment=0), InvalidRemovalSetError,
     r"`augment` must be an integer >= 1, got 0"),
    (lambda c: ENV.reset(c["inst"], augment=-2), InvalidRemovalSetError, r"`augment`.* -2"),
    (lambda c: ENV.reset(c["inst"], augment=1.5), InvalidRemovalSetError, r"`augment`.*1\.5"),
    (lambda c: ENV.reset(c["inst"], augment=True), InvalidRemovalSetError, r"`augment`.*True"),
    (lambda c: ENV.reset(c["inst"][0]), TypeError,
     r"RoutingInstances batch, got one RoutingData .*stack_instances\(\[data\]\)"),
    (lambda c: ENV.reset([c["inst"][0]]), TypeError, r"RoutingInstances batch .* got list"),
    (lambda c: ENV.reset(c["inst"], rng="a"), TypeError, r"`rng` must be .* got 'a'"),
    (lambda c: ENV.reset(c["inst"], rng=1.5), TypeError, r"`rng` .* got 1\.5"),
    (lambda c: ENV.reset(c["inst"], rng=-1), ValueError, r"`rng` .* got -1"),
]

# warm_up and improve on a batch made by reset
ROUNDS = [
    (lambda c, b: ENV.warm_up(b, "sisr", 1, 2, RNG(0)), TypeError,
     r"destroy provider object such as SISRDestroy\(\).*not a name: got 'sisr'"),
    (lambda c, b: ENV.warm_up(b, SISRDestroy, 1, 2, RNG(0)), TypeError,
     r"not a class: got the class SISRDestroy \(call it: SISRDestroy\(\.\.\.\)\)"),
    (lambda c, b: ENV.warm_up(b, None, 1, 2, RNG(0)), TypeError, r"destroy provider.*NoneType"),
    (lambda c, b: ENV.warm_up(b, SISR, -1, 2, RNG(0)), InvalidRemovalSetError,
     r"`steps` must be an integer >= 0, got -1"),
    (lambda c, b: ENV.warm_up(b, SISR, 1.5, 2, RNG(0)), InvalidRemovalSetError, r"`steps`.*1\.5"),
    (lambda c, b: ENV.warm_up(b, SISR, 1, 0, RNG(0)), InvalidRemovalSetError,
     r"`num_sets` must be an integer >= 1, got 0"),
    (lambda c, b: ENV.warm_up(b, SISR, 0, 0, RNG(0)), InvalidRemovalSetError, r"`num_sets`"),
    (lambda c, b: ENV.warm_up(b, SISR, 1, 2, 0), TypeError,
     r"`rng` must be a numpy Generator .*same draws every round; got 0"),
    (lambda c, b: ENV.warm_up(c["inst"], SISR, 1, 2, RNG(0)), TypeError,
     r"warm_up takes the DeconstructionBatch of reset\(\) .*got RoutingInstances"),
    (lambda c, b: ENV.improve(b, _sets(3.7), RNG(0)), InvalidRemovalSetError,
     r"`sets` must hold integer customer ids, got float64"),
    (lambda c, b: ENV.improve(b, _sets(2.0), RNG(0)), InvalidRemovalSetError,
     r"integer customer ids, got float64"),
    (lambda c, b: ENV.improve(b, _sets() > 0, RNG(0)), InvalidRemovalSetError,
     r"integer customer ids, got bool"),
    (lambda c, b: ENV.improve(b, _sets(0), RNG(0)), InvalidRemovalSetError,
     r"slot 1, set 0, customer 0 \(position 1\): the depot cannot be removed"),
    (lambda c, b: ENV.improve(b, _sets(N + 1), RNG(0)), InvalidRemovalSetError,
     r"slot 1, set 0, customer 11 \(position 1\): customer id out of range: .*1\.\.10"),
    (lambda c, b: ENV.improve(b, _sets(-3), RNG(0)), InvalidRemovalSetError,
     r"slot 1, set 0, customer -3 .*out of range"),
    (lambda c, b: ENV.improve(b, _sets(1), RNG(0)), InvalidRemovalSetError,
     r"slot 1, set 0, customer 1: the customer appears twice in the set"),
    (lambda c, b: ENV.improve(b, _sets()[:, 0], RNG(0)), InvalidRemovalSetError,
     r"`sets` must have shape \[S=4, R, k >= 1\], got \(4, 3\)"),
    (lambda c, b: ENV.improve(b, _sets()[:3], RNG(0)), InvalidRemovalSetError,
     r"\[S=4, .*got \(3, 2, 3\)"),
    (lambda c, b: ENV.improve(b, _sets()[:, :0], RNG(0)), InvalidRemovalSetError,
     r"at least one set per slot, got shape \(4, 0, 3\)"),
    (lambda c, b: ENV.improve(b, [[[1, 2]], [[1]]] * 2, RNG(0)), InvalidRemovalSetError,
     r"`sets` must be a rectangular numeric array \(pad short sets with -1\)"),
    (lambda c, b: ENV.improve(b, _sets(), "seed"), TypeError, r"`rng` .* got 'seed'"),
    (lambda c, b: ENV.improve(c["inst"], _sets(), RNG(0)), TypeError,
     r"improve takes the DeconstructionBatch"),
]

# start solutions and the providers' propose
PARTS = [
    (lambda c, b: start_solutions(c["arrays"], np.array([0.0, 1.7])), InvalidRemovalSetError,
     r"`inst` must be a 1-D integer array .* got float64 \(2,\)"),
    (lambda c, b: start_solutions(c["arrays"], np.array([True, False])),
     InvalidRemovalSetError, r"`inst` .* got bool"),
    (lambda c, b: start_solutions(c["arrays"], np.array([[0, 1]])), InvalidRemovalSetError,
     r"`inst` .* got int64 \(1, 2\)"),
    (lambda c, b: start_solutions(c["arrays"], [0, 2]), InvalidRemovalSetError,
     r"slot 1: `inst` = 2 is not one of the instance rows in 0\.\.1"),
    (lambda c, b: start_solutions(c["arrays"], [0, 1], rounds=1.5), InvalidRemovalSetError,
     r"`rounds` must be an integer >= 0, got 1\.5"),
    (lambda c, b: start_solutions(c["arrays"], [0, 1], num_removed=-1),
     InvalidRemovalSetError, r"`num_removed` .* got -1"),
    (lambda c, b: start_solutions(c["arrays"], [0, 1], num_removed=N + 1),
     InvalidRemovalSetError, r"0 <= num_removed <= N = 10, got 11"),
    (lambda c, b: start_solutions(c["arrays"], [0, 1], rounds=1,
                                  removal=np.ones((2, 1, 2), np.int32)),
     InvalidRemovalSetError, r"give both `removal` and `u`"),
    (lambda c, b: start_solutions(c["arrays"], [0, 1], rounds=1,
                                  removal=np.full((2, 1, 2), 3.7), u=np.zeros((2, 1, 3))),
     InvalidRemovalSetError, r"integer customer ids, got float64"),
    (lambda c, b: start_solutions(c["inst"], [0, 1]), TypeError,
     r"start_solutions takes the instances' ProblemArrays .*got RoutingInstances"),
    (lambda c, b: RandomDestroy(0), InvalidRemovalSetError, r"`k` must be .*got 0"),
    (lambda c, b: RandomDestroy(N + 1).propose(b.state, b.arrays, 2, 0),
     InvalidRemovalSetError, r"`k` = 11 exceeds the number of customers N = 10"),
    (lambda c, b: SISRDestroy(c_bar=0), InvalidRemovalSetError, r"`c_bar` .*got 0"),
    (lambda c, b: SISR.propose(b.state, b.arrays, 2.0, 0), InvalidRemovalSetError,
     r"`num_sets` must be an integer >= 1, got 2\.0"),
    (lambda c, b: SISR.propose(b.state, b.arrays, 2, "x"), TypeError, r"`rng` .*got 'x'"),
    (lambda c, b: SISR.propose(b.state, c["bigger"], 2, 0), InvalidSolutionError,
     r"ToursState\.succ must be .* \(N = 12 customers\)"),
    (lambda c, b: SISR.propose(b.state, c["inst"], 2, 0), TypeError,
     r"propose takes the instances' ProblemArrays .*got RoutingInstances"),
    (lambda c, b: SISR.propose(b.arrays, b.arrays, 2, 0), TypeError,
     r"propose takes the slots' ToursState, got ProblemArrays"),
    (lambda c, b: SISR.draw_uniforms(4, 0), InvalidRemovalSetError, r"`num_sets` .*got 0"),
]


@pytest.mark.parametrize("call, error, match", CONSTRUCT)
def test_environment_construction_and_reset_refuse_bad_input(case, call, error, match):
    with pytest.raises(error, match=match):
        call(case)


@pytest.mark.parametrize("call, error, match", ROUNDS)
def test_warm_up_and_improve_refuse_bad_input_and_change_nothing(case, call, error, match):
    batch = _batch(case)
    before = batch.state.clone()
    with pytest.raises(error, match=match):
        call(case, batch)
    assert batch.state.to_routes() == before.to_routes()
    assert np.array_equal(batch.state.cost, before.cost)


@pytest.mark.parametrize("call, error, match", PARTS)
def test_start_solutions_and_providers_refuse_bad_input(case, call, error, match):
    with pytest.raises(error, match=match):
        call(case, _batch(case))


@pytest.fixture(scope="module")
def policy():
    torch.manual_seed(0)
    return NDSPolicy.build("cvrp")


def test_policy_destroy_refuses_bad_input(case, policy):
    inst = case["inst"]
    with pytest.raises(TypeError, match="PolicyDestroy takes a RoutingInstances batch, got "
                                        "one RoutingData"):
        PolicyDestroy(policy, inst[0], k=3)
    for temperature in (0, -1.0, float("nan"), True, "1"):
        with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
            PolicyDestroy(policy, inst, k=3, temperature=temperature)
    destroy = PolicyDestroy(policy, inst, k=3)
    batch = _batch(case)
    with pytest.raises(InvalidRemovalSetError, match="`num_sets` must be an integer >= 1"):
        destroy.propose(batch.state, batch.arrays, 0, RNG(0))
    with pytest.raises(TypeError, match="`rng` must be a numpy Generator"):
        destroy.propose(batch.state, batch.arrays, 2, 0)
    with pytest.raises(InvalidInstanceError, match=r"other instances .*instance 0, node 1: "
                                                   r"the arrays' distance from the depot"):
        destroy.propose(batch.state, case["other"], 2, RNG(0))
    with pytest.raises(InvalidSolutionError, match=r"\(N = 12 customers\)"):
        destroy.propose(batch.state, case["bigger"], 2, RNG(0))
    assert destroy.propose(batch.state, batch.arrays, 2, RNG(0)).shape == (S, 2, 3)


SEARCH = DestroyRepairSearch(augment=2, rollouts=3, recreate_n=2)
STOP = MaxIterations(2)

# the search: its settings and run()
RUN = [
    (lambda c: DestroyRepairSearch(augment=0), ValueError, r"augment must be .* got 0"),
    (lambda c: DestroyRepairSearch(rollouts=-1), ValueError, r"rollouts must be .* got -1"),
    (lambda c: DestroyRepairSearch(remove=1.5), ValueError, r"remove must be .* got 1\.5"),
    (lambda c: SEARCH.run(c["inst"], "sisr", STOP, 0), TypeError,
     r"destroy provider object such as SISRDestroy\(\) .*not a name: got 'sisr'"),
    (lambda c: SEARCH.run(c["inst"], RandomDestroy, STOP, 0), TypeError,
     r"not a class: got the class RandomDestroy"),
    (lambda c: SEARCH.run(c["inst"], 15, STOP, 0), TypeError, r"destroy provider.* got int"),
    (lambda c: SEARCH.run(c["inst"][0], SISR, STOP, 0), TypeError,
     r"DestroyRepairSearch\.run takes a RoutingInstances batch, got one RoutingData"),
    (lambda c: SEARCH.run(c["inst"], SISR, STOP, 1.5), TypeError, r"`seed` .* got 1\.5"),
    (lambda c: SEARCH.run(c["inst"], SISR, STOP, "1"), TypeError, r"`seed` .* got '1'"),
    (lambda c: SEARCH.run(c["inst"], SISR, STOP, 0, arrays=c["other"]), InvalidInstanceError,
     r"`arrays` belong to other instances: instance 0, node 1: "),
    (lambda c: SEARCH.run(c["inst"], SISR, STOP, 0, arrays=c["bigger"]), InvalidInstanceError,
     r"the arrays hold 2 cvrp instance\(s\) of 12 customers, the instances are 2 cvrp of 10"),
    (lambda c: SEARCH.run(c["inst"], SISR, STOP, 0, arrays=c["inst"]), TypeError,
     r"`arrays` must be the instances' ProblemArrays .*got RoutingInstances"),
    (lambda c: SEARCH.run(c["inst"], SISR, STOP, 0, callback=3), TypeError,
     r"callback must be callable"),
]


@pytest.mark.parametrize("call, error, match", RUN)
def test_the_search_refuses_bad_input(case, call, error, match):
    with pytest.raises(error, match=match):
        call(case)


def test_one_instance_made_into_a_batch_as_the_message_says_runs(case):
    one = stack_instances([case["inst"][0]])
    assert len(DeconstructionEnv().reset(one, rng=0).state) == 1


def test_nothing_passed_in_is_modified(case):
    inst = case["inst"]
    pos, demand = inst.pos.clone(), inst.demand.clone()
    batch = _batch(case)
    sets = _sets()
    sets_copy = sets.copy()
    ENV.improve(batch, sets, RNG(0))
    assert np.array_equal(sets, sets_copy)
    slots = np.array([0, 1, 1], np.int64)
    start_solutions(case["arrays"], slots, rounds=2, rng=0)
    assert np.array_equal(slots, [0, 1, 1]) and slots.dtype == np.int64
    arrays = ProblemArrays.from_instances(inst)
    dist = arrays.dist.copy()
    SEARCH.run(inst, SISR, STOP, 0, arrays=arrays)
    assert np.array_equal(arrays.dist, dist)
    assert torch.equal(inst.pos, pos) and torch.equal(inst.demand, demand)


def _improved(case, sets, rng):
    batch = _batch(case)
    res = ENV.improve(batch, sets, rng)
    return res.cost, batch.state.cost


def test_valid_spellings_give_the_same_numbers(case):
    """Every accepted spelling of the same input gives the same result: sets as int64,
    int32, a list or a tensor, an rng as a seed or its Generator, ProblemArrays given
    or built, NumPy counts."""
    sets = np.array([[[1, 2, 3], [4, 5, -1]]] * S, np.int64)
    ref = _improved(case, sets, RNG(3))
    for other in (sets.astype(np.int32), sets.tolist(), torch.from_numpy(sets)):
        got = _improved(case, other, RNG(3))
        assert all(np.array_equal(a, b) for a, b in zip(ref, got))
    assert all(np.array_equal(a, b) for a, b in zip(ref, _improved(case, sets, 3)))
    a = DeconstructionEnv(np.int64(3)).reset(case["inst"], augment=np.int64(2), rng=0)
    b = DeconstructionEnv(3).reset(case["inst"], augment=2, rng=RNG(0))
    assert a.state.to_routes() == b.state.to_routes()
    inst = case["inst"]
    built = SEARCH.run(inst, SISR, STOP, 4)
    given = SEARCH.run(inst, SISR, STOP, 4, arrays=ProblemArrays.from_instances(inst))
    assert torch.equal(built.cost, given.cost) and built.routes == given.routes
    for rng in (None, RNG(1)):                      # None is accepted: fresh entropy
        ENV.warm_up(_batch(case), RandomDestroy(3), 1, 2, rng)


def test_fixed_seed_numbers_are_those_before_the_checks():
    """Costs of a fixed-seed reset, warm-up, improve and search, as recorded before
    the boundary checks were added (issue 28): the checks change no number."""
    inst, _ = make_instances("cvrp", 20, seed=3)
    env = DeconstructionEnv(3)
    batch = env.reset(inst, augment=2, rng=5)
    rng = RNG(7)
    env.warm_up(batch, SISRDestroy(c_bar=4), 2, 5, rng)
    res = env.improve(batch, RandomDestroy(4).propose(batch.state, batch.arrays, 6, rng), rng)
    search = DestroyRepairSearch(augment=2, rollouts=5).run(inst, SISRDestroy(c_bar=4),
                                                           MaxIterations(3), seed=1)
    np.testing.assert_allclose(batch.start_cost, START, rtol=1e-12)
    np.testing.assert_allclose(res.cost[:, 0], IMPROVED, rtol=1e-12)
    np.testing.assert_allclose(search.cost.numpy(), SEARCHED, rtol=1e-12)


# recorded with the code before issue 28's checks (make_generator("cvrp", 20, seed=3))
START = [7.561314675652596, 8.391286276321093, 8.125329359560887, 8.299680473425573]
IMPROVED = [7.541194872382121, 8.281215004987557, 8.125329359560887, 8.14300987512271]
SEARCHED = [7.196815207022017, 7.559955110480843]
