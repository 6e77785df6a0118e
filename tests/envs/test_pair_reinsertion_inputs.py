"""N2S's environment inputs (issue 28, class 7): given tours as a numpy array or a list
of rows are converted exactly (the same state as the tensor), anything else is refused
by type or value with a message naming it, never numpy's "truth value of an array is
ambiguous"; nothing passed in is modified."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pyg_routing.data import PDTSPGenerator
from pyg_routing.envs import PairReinsertionEnv
from pyg_routing.errors import InfeasibleSolutionError, InvalidSolutionError

ENV = PairReinsertionEnv()


@pytest.fixture(scope="module")
def case():
    inst = PDTSPGenerator(6, seed=0).sample(2)
    # the nearest-neighbour tours in the instances' own ids, from the depot
    tours = torch.tensor([[0, *r[0]] for r in ENV.to_routes(ENV.reset(inst,
                                                                      "nearest_neighbor"))])
    return inst, tours


def _same(a, b) -> None:
    assert torch.equal(a.order, b.order) and torch.equal(a.cost, b.cost)
    assert torch.equal(a.node_ids, b.node_ids)


@pytest.mark.parametrize("spell", [
    lambda t: t.numpy(),                                     # numpy int64 [B, M]
    lambda t: t.numpy().astype(np.int32),
    lambda t: t.numpy().astype(np.uint16),
    lambda t: np.asfortranarray(t.numpy()),                  # not C-contiguous
    lambda t: list(t.numpy()),                               # a list of numpy rows
    lambda t: t.tolist(),                                    # a list of lists
    lambda t: tuple(tuple(r) for r in t.tolist()),
    lambda t: list(t),                                       # a list of tensor rows
    lambda t: np.concatenate([t.numpy(), np.zeros((len(t), 1), np.int64)], 1),   # closed
])
def test_tours_as_numpy_or_lists_give_the_tensor_state(case, spell):
    inst, tours = case
    _same(ENV.reset(inst, spell(tours)), ENV.reset(inst, tours))


@pytest.mark.parametrize("spell, error, match", [
    (lambda t: t.numpy().astype(float), InvalidSolutionError,
     r"expected integer tours \[2, 7\] .*got torch\.float64"),
    (lambda t: (t.numpy() + 0.5).tolist(), InvalidSolutionError, r"expected integer tours"),
    (lambda t: list(t.numpy().astype(np.float32)), InvalidSolutionError,
     r"expected integer tours .*torch\.float32"),
    (lambda t: t.numpy() > 0, InvalidSolutionError, r"expected integer tours .*torch\.bool"),
    (lambda t: [t[0].tolist(), t[1, :-1].tolist()], InvalidSolutionError,
     r"rows of equal length \[B, M\], got rows of lengths \[6, 7\]"),
    (lambda t: [["0"] * 7] * 2, InvalidSolutionError, r"expected integer node ids .*<U1"),
    (lambda t: t.numpy()[:1], InvalidSolutionError, r"expected integer tours \[2, 7\].*\(1, 7\)"),
    (lambda t: t.numpy()[0], InvalidSolutionError, r"expected integer tours .*\(7,\)"),
    (lambda t: np.where(t.numpy() == 6, 9, t.numpy()), InvalidSolutionError,
     r"instance 0: node id 9 out of range 0\.\.6"),
    (lambda t: np.concatenate([t.numpy(), np.ones((2, 1), np.int64)], 1), InvalidSolutionError,
     r"instance 0: a tour of 8 ids must close at the depot 0"),
    (lambda t: np.stack([t.numpy()[0], t.numpy()[0, ::-1]]), InvalidSolutionError,
     r"instance 1"),
    (lambda t: None, TypeError, r"init must be one of .* got NoneType"),
    (lambda t: 3, TypeError, r"init must be one of .* got int"),
    (lambda t: "sweep", ValueError, r"unknown init 'sweep'"),
])
def test_bad_tours_are_refused_by_name(case, spell, error, match):
    inst, tours = case
    with pytest.raises(error, match=match):
        ENV.reset(inst, spell(tours))


def test_a_delivery_before_its_pickup_in_numpy_tours_is_infeasible(case):
    inst, tours = case
    bad = tours.numpy().copy()
    pairs = inst.pickup_delivery_index
    p, d = int(pairs[0, 0]), int(pairs[1, 0])
    i, j = int(np.argmax(bad[1] == p)), int(np.argmax(bad[1] == d))
    assert i < j                                  # a feasible tour: the pickup first
    bad[1, i], bad[1, j] = d, p
    with pytest.raises(InfeasibleSolutionError, match="instance 1: delivery"):
        ENV.reset(inst, bad)


def test_other_reset_arguments_are_refused_by_name(case):
    inst, _ = case
    with pytest.raises(TypeError, match=r"`generator` must be a torch\.Generator or None, "
                                        r"got 0"):
        ENV.reset(inst, "random", 0)
    with pytest.raises(TypeError, match=r"PairReinsertionEnv\.reset takes a RoutingInstances "
                                        r"batch, got one RoutingData .*stack_instances"):
        ENV.reset(inst[0])
    with pytest.raises(TypeError, match=r"RoutingInstances batch .*got list"):
        ENV.reset([inst[0], inst[1]])


def test_given_tours_are_not_modified_nor_aliased(case):
    inst, tours = case
    arr = tours.numpy().copy()
    rows = [r.copy() for r in arr]
    keep = arr.copy()
    state = ENV.reset(inst, arr)
    ENV.reset(inst, rows)
    assert np.array_equal(arr, keep) and all(np.array_equal(r, k) for r, k in zip(rows, keep))
    order = state.order.clone()
    arr[:] = 0                                    # the state does not share the caller's memory
    assert torch.equal(state.order, order)


def test_valid_resets_keep_their_numbers(case):
    """The string inits and tensor tours are unchanged by the new checks (fixed seed)."""
    inst, tours = case
    a = ENV.reset(inst, "random", torch.Generator().manual_seed(3))
    b = ENV.reset(inst, "random", torch.Generator().manual_seed(3))
    _same(a, b)
    _same(ENV.reset(inst, tours), ENV.reset(inst, tours.clone()))
    # recorded before issue 28's checks
    assert a.cost.tolist() == [2.6207828521728516, 4.420220375061035]
    assert ENV.reset(inst, "nearest_neighbor").cost.tolist() == [1.95360267162323,
                                                                  3.191929578781128]
