"""Issue 28, class 8 (leftovers): a generator's instance count, a batch given to
``RoutingData.from_routes``, and the encoders' width / heads / layer counts. Each row:
a call, the typed error and a regex of the message naming the offending value."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.data import (
    CVRPGenerator,
    NDSCVRPGenerator,
    NDSPCVRPGenerator,
    NDSVRPTWGenerator,
    PCVRPGenerator,
    PDTSPGenerator,
    RoutingData,
    TSPGenerator,
    VRPTWGenerator,
    XCVRPGenerator,
)
from pyg_routing.data.x_generator import sample_x_batch
from pyg_routing.errors import InvalidInstanceError
from pyg_routing.models import GPSEncoder, N2SEncoder, NDSEncoder

GENERATORS = [
    lambda: TSPGenerator(5, seed=0), lambda: CVRPGenerator(5, seed=0),
    lambda: VRPTWGenerator(5, seed=0), lambda: PCVRPGenerator(5, seed=0),
    lambda: PDTSPGenerator(6, seed=0), lambda: NDSCVRPGenerator(20, seed=0),
    lambda: NDSCVRPGenerator(20, seed=0, exact=True), lambda: XCVRPGenerator(20, seed=0),
    lambda: XCVRPGenerator(20, seed=0, exact=True), lambda: NDSVRPTWGenerator(20, seed=0),
    lambda: NDSPCVRPGenerator(20, seed=0),
]
BAD_COUNTS = [
    (-1, r"batch_size \(the number of instances\) must be >= 0, got -1"),
    (np.int64(-3), rf"must be >= 0, got {re.escape(repr(np.int64(-3)))}"),   # NumPy 1: -3
    (1.5, r"must be an integer >= 0, got 1\.5"),
    (2.0, r"must be an integer >= 0, got 2\.0"),
    (True, r"must be an integer >= 0, got True"),
    ("2", r"must be an integer >= 0, got '2'"),
    (None, r"must be an integer >= 0, got None"),
    (torch.tensor(2.0), r"must be an integer >= 0, got tensor\(2\.\)"),
    (torch.tensor([1, 2]), r"must be an integer >= 0, got tensor\(\[1, 2\]\)"),
]


@pytest.mark.parametrize("make", GENERATORS)
@pytest.mark.parametrize("count, match", BAD_COUNTS)
def test_sample_refuses_a_bad_instance_count(make, count, match):
    with pytest.raises(InvalidInstanceError, match=match):
        make().sample(count)


@pytest.mark.parametrize("count, match", BAD_COUNTS)
def test_sample_x_batch_refuses_a_bad_instance_count(count, match):
    with pytest.raises(InvalidInstanceError, match=match):
        sample_x_batch(count, 10, torch.Generator().manual_seed(0))


@pytest.mark.parametrize("make", GENERATORS)
def test_integer_counts_of_every_kind_give_the_same_instances(make):
    """A Python int, a NumPy integer and a 0-d integer tensor draw the same batch (as
    before the check); 0 is an empty batch (not an error)."""
    ref = make().sample(2)
    for count in (np.int64(2), np.int32(2), torch.tensor(2)):
        got = make().sample(count)
        assert torch.equal(got.pos, ref.pos)
        for name in ("demand", "capacity", "time_window", "prize"):
            a, b = getattr(ref, name), getattr(got, name)
            assert (a is None and b is None) or torch.equal(a, b)
    assert len(make().sample(0)) == 0


def test_fixed_seed_generator_numbers_are_those_before_the_checks():
    """Recorded before issue 28's checks."""
    assert CVRPGenerator(5, seed=0).sample(2).pos.sum().item() == 11.464200973510742
    assert XCVRPGenerator(20, seed=0, exact=True).sample(2).pos.sum().item() == \
        45.128997802734375
    assert NDSCVRPGenerator(20, seed=0).sample(2).pos.sum().item() == 41.409446716308594


# RoutingData.from_routes takes ONE instance
def _batches():
    inst = CVRPGenerator(5, seed=0).sample(2)
    return inst, Batch.from_data_list([inst[0], inst[1]])


@pytest.mark.parametrize("pick, match", [
    (lambda inst, pyg: inst, r"takes one instance \(a RoutingData\), got a batch of 2 "
                             r"\(RoutingInstances\); .*instances\[i\] is instance i"),
    (lambda inst, pyg: pyg, r"got a batch of 2 \(RoutingDataBatch\)"),
    (lambda inst, pyg: [inst[0]], r"takes one instance \(a RoutingData\), got list"),
    (lambda inst, pyg: None, r"got NoneType"),
    (lambda inst, pyg: {"pos": inst.pos[0]}, r"got dict"),
])
def test_from_routes_refuses_a_batch_or_a_non_instance(pick, match):
    inst, pyg = _batches()
    pos = inst.pos.clone()
    with pytest.raises(TypeError, match=match):
        RoutingData.from_routes(pick(inst, pyg), [[1, 2, 3, 4, 5]])
    assert torch.equal(inst.pos, pos)


def test_from_routes_still_takes_one_instance():
    inst, _ = _batches()
    data = RoutingData.from_routes(inst[0], [[1, 2], [3, 4, 5]])
    data.check()
    assert data.routes() == [[1, 2], [3, 4, 5]]


# the encoders' constructors
ENCODERS = [("GPSEncoder", GPSEncoder, "num_layers"), ("N2SEncoder", N2SEncoder, "num_layers"),
            ("NDSEncoder", NDSEncoder, "encoder_layer_num")]


@pytest.mark.parametrize("owner, cls, layers", ENCODERS)
@pytest.mark.parametrize("kwargs, match", [
    (dict(heads=0), r"heads must be an integer >= 1, got 0"),
    (dict(heads=-2), r"heads must be an integer >= 1, got -2"),
    (dict(heads=1.5), r"heads must be an integer >= 1, got 1\.5"),
    (dict(heads=True), r"heads must be an integer >= 1, got True"),
    (dict(dim=0, heads=1), r"dim must be an integer >= 1, got 0"),
    (dict(dim=64.0, heads=4), r"dim must be an integer >= 1, got 64\.0"),
    (dict(dim=130, heads=8), r"dim=130 must be divisible by heads=8"),
    (dict(dim=64, heads=3), r"dim=64 must be divisible by heads=3"),
    ("layers", r"{layers} must be an integer >= 0, got -1"),
])
def test_encoders_refuse_bad_widths_heads_and_layer_counts(owner, cls, layers, kwargs, match):
    if kwargs == "layers":
        kwargs, match = {layers: -1}, match.format(layers=layers)
    with pytest.raises(ValueError, match=f"{owner}: {match}"):
        cls(**kwargs)


@pytest.mark.parametrize("owner, cls, layers", ENCODERS)
def test_valid_encoders_draw_the_same_weights(owner, cls, layers):
    """The checks draw nothing: a seeded model is as before (NumPy integers too)."""
    torch.manual_seed(0)
    a = cls(dim=64, heads=4)
    torch.manual_seed(0)
    b = cls(dim=np.int64(64), heads=np.int64(4))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    total = sum(float(p.detach().double().sum()) for p in a.parameters())
    assert total == pytest.approx(BEFORE[owner], rel=1e-9)


# sum of the parameters of cls(heads=4, dim=64) after torch.manual_seed(0), recorded
# before issue 28's checks
BEFORE = {"GPSEncoder": 577.725967058379, "N2SEncoder": -30.235990887159005,
          "NDSEncoder": 664.7406704957715}
