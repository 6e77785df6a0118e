"""One rule for instance inputs: the single-instance API (``RoutingData.from_instance``)
and the batch API (``RoutingInstances.check``) refuse the same things with the same
message, and accept integer matrices end to end; matrices and open-route flags survive
batching, stacking, slicing, collating and moving."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.data import (
    CVRPGenerator,
    RoutingData,
    RoutingInstances,
    VRPTWGenerator,
    stack_instances,
)
from pyg_routing.data.solvers import nearest_neighbor, sweep
from pyg_routing.envs.deconstruction import SISRDestroy
from pyg_routing.errors import InvalidInstanceError
from pyg_routing.search import DestroyRepairSearch, MaxIterations, improve

N = 6


def _single(**kw) -> RoutingData:
    pos = torch.rand(N, 2, generator=torch.Generator().manual_seed(0))
    return RoutingData.from_instance("cvrp", pos, demand=[0] + [1] * (N - 1), capacity=3, **kw)


def _batch(**kw) -> RoutingInstances:
    inst = CVRPGenerator(N - 1, seed=0).sample(2)
    return replace(inst, **kw)


def _matrix(dtype=torch.float32, b: int | None = None) -> torch.Tensor:
    m = torch.arange(N * N, dtype=torch.float32).view(N, N) % 7 + 1
    m = m.to(dtype)
    return m if b is None else m.expand(b, N, N).clone()


# ------------------------------------------------------------- the same refusals
@pytest.mark.parametrize("dtype, shown", [(torch.bool, "torch.bool"),
                                          (torch.complex64, "torch.complex64")])
def test_bool_and_complex_matrices_are_refused_alike(dtype, shown):
    message = re.escape(f"`cost_matrix` must hold real numbers, got {shown}")
    with pytest.raises(InvalidInstanceError, match=message):
        _single(cost_matrix=_matrix(dtype))
    with pytest.raises(InvalidInstanceError, match=message):
        _batch(cost_matrix=_matrix(dtype, 2)).check()


@pytest.mark.parametrize("key", ["demand", "prize"])
def test_bool_and_complex_fields_are_never_cast(key):
    pos = torch.rand(N, 2)
    fields = {"demand": [0] + [1] * (N - 1)}
    bad = torch.ones(N, dtype=torch.bool)
    bad[0] = False
    problem = "pcvrp" if key == "prize" else "cvrp"
    if key == "prize":
        fields["prize"] = [0.0] * N
    fields[key] = bad
    with pytest.raises(InvalidInstanceError, match=f"`{key}` must hold real numbers, got "
                                                   f"torch.bool"):
        RoutingData.from_instance(problem, pos, capacity=3, **fields)
    fields[key] = torch.ones(N, dtype=torch.complex64) * (1 + 2j)
    with pytest.raises(InvalidInstanceError, match="complex64"):
        RoutingData.from_instance(problem, pos, capacity=3, **fields)
    with pytest.raises(InvalidInstanceError, match="`capacity` must hold real numbers"):
        RoutingData.from_instance("cvrp", pos, demand=[0] + [1] * (N - 1), capacity=True)


def test_a_matrix_on_another_device_is_refused_naming_both_devices():
    message = re.escape("`cost_matrix` is on meta but `pos` is on cpu")
    with pytest.raises(InvalidInstanceError, match=message):
        _single(cost_matrix=_matrix().to("meta"))
    with pytest.raises(InvalidInstanceError, match=message):
        _batch(cost_matrix=_matrix(b=2).to("meta")).check()
    with pytest.raises(InvalidInstanceError, match=re.escape("`demand` is on meta")):
        RoutingData.from_instance("cvrp", torch.rand(N, 2), capacity=3,
                                  demand=torch.ones(N).to("meta"))


@pytest.mark.parametrize("flag", ["false", "False", "true", 1, 0, 1.0, [True],
                                  np.array([True]), torch.tensor([1])])
def test_open_routes_of_one_instance_is_a_bool_never_a_truth_value(flag):
    with pytest.raises(InvalidInstanceError, match=r"`open_routes` must be True or False "
                                                   r"\(a bool\), got "):
        _single(open_routes=flag)


def test_a_flag_tensor_of_several_flags_is_refused_with_its_shape():
    with pytest.raises(InvalidInstanceError, match=re.escape(
            "`open_routes` of one instance is one flag, got a bool tensor of shape (2,)")):
        _single(open_routes=torch.tensor([True, False]))
    with pytest.raises(InvalidInstanceError, match=re.escape(
            "`open_routes` must be a bool tensor of shape [B] = (2,), got torch.bool (3,)")):
        _batch(open_routes=torch.tensor([True, False, True])).check()
    with pytest.raises(InvalidInstanceError, match=re.escape("`open_routes` is on meta")):
        _single(open_routes=torch.tensor(True, device="meta"))


@pytest.mark.parametrize("flag", [True, False, np.bool_(True), torch.tensor(True),
                                  torch.tensor([False]), None])
def test_real_flags_are_accepted(flag):
    data = _single(open_routes=flag)
    assert data.open_routes.tolist() == [bool(flag) if flag is not None else False]


def test_float_pickup_delivery_ids_are_refused_not_truncated():
    pos = torch.rand(5, 2)
    with pytest.raises(InvalidInstanceError, match="`pickup_delivery_index` must hold "
                                                   "integer node ids, got torch.float"):
        RoutingData.from_instance("pdtsp", pos, pickup_delivery_index=[[1.7, 2.0], [3.0, 4.0]])


def test_refusals_leave_the_callers_tensors_untouched():
    matrix = _matrix(torch.bool)
    before = matrix.clone()
    with pytest.raises(InvalidInstanceError):
        _single(cost_matrix=matrix)
    assert torch.equal(matrix, before)


# ------------------------------------------------------------- integer matrices
def test_an_integer_matrix_is_accepted_by_both_apis_with_the_same_costs():
    ints = _matrix(torch.int64)
    single = _single(cost_matrix=ints)
    assert single.travel_cost.dtype == single.pos.dtype
    assert torch.equal(single.travel_cost.view(N, N), _single(cost_matrix=ints.float())
                       .travel_cost.view(N, N))
    inst = CVRPGenerator(N - 1, seed=3).sample(3)
    as_int = replace(inst, cost_matrix=(inst.costs() * 100).round().long())
    as_float = replace(inst, cost_matrix=as_int.cost_matrix.float())
    as_int.check()
    assert torch.equal(as_int.costs(), as_float.costs())
    assert torch.equal(sweep(as_int), sweep(as_float))
    assert torch.equal(nearest_neighbor(as_int), nearest_neighbor(as_float))
    a = improve(as_int, steps=20, generator=torch.Generator().manual_seed(1))
    b = improve(as_float, steps=20, generator=torch.Generator().manual_seed(1))
    assert a.routes == b.routes and torch.equal(a.cost, b.cost)
    search = DestroyRepairSearch(augment=2, rollouts=4)
    a = search.run(as_int, SISRDestroy(), MaxIterations(3), seed=5)
    b = search.run(as_float, SISRDestroy(), MaxIterations(3), seed=5)
    assert a.routes == b.routes and torch.equal(a.cost, b.cost)


# ------------------------------------------------------------- paths keep the costs
def _streets(problem: str = "cvrp") -> RoutingInstances:
    gen = (VRPTWGenerator if problem == "vrptw" else CVRPGenerator)(
        8, seed=2, costs="streets", open_routes=True)
    inst = gen.sample(3)
    inst.open_routes[1] = False
    return inst


def _same(a: RoutingInstances, b: RoutingInstances) -> None:
    assert a.cost_matrix is not None and b.cost_matrix is not None
    assert torch.equal(a.cost_matrix, b.cost_matrix)
    assert torch.equal(a.open_routes, b.open_routes)
    assert torch.equal(a.costs(), b.costs())


@pytest.mark.parametrize("problem", ["cvrp", "vrptw"])
def test_matrices_and_flags_survive_every_batching_path(problem):
    inst = _streets(problem)
    _same(inst, stack_instances(inst.to_data_list()))                        # one by one
    _same(inst, stack_instances(Batch.from_data_list(inst.to_data_list()).to_data_list()))
    _same(inst, inst.to("cpu"))
    _same(inst[1:3], stack_instances([inst[1], inst[2]]))                   # slices
    _same(inst[torch.tensor([2, 0])], stack_instances([inst[2], inst[0]]))  # index tensors
    assert inst.to("meta").cost_matrix.device.type == "meta"
    assert inst.to("meta").open_routes.device.type == "meta"
    one = inst[1]
    assert not bool(one.open_routes) and bool(inst[0].open_routes)
    assert torch.equal(one.travel_cost.view(9, 9), inst.cost_matrix[1])


def test_a_stacked_batch_searches_like_its_instances_one_by_one():
    inst = _streets()
    stacked = stack_instances(inst.to_data_list())
    for heuristic in (sweep, nearest_neighbor):
        batch = heuristic(stacked)
        for i in range(len(inst)):
            alone = heuristic(stack_instances([inst[i]]))
            assert torch.equal(batch[i, :alone.size(1)], alone[0])
