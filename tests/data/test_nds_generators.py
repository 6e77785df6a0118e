"""NDS's data (pyg_routing.data.nds_generators, x_generator) and the presets."""

import hashlib
import json
import math
import os
import random
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from pyg_routing.data import RoutingData, RoutingDataset
from pyg_routing.data.generators import CVRPGenerator, make_generator
from pyg_routing.data.nds_generators import (
    NDS_CVRP_CAPACITY,
    NDSCVRPGenerator,
    NDSPCVRPGenerator,
    NDSVRPTWGenerator,
    XCVRPGenerator,
    load_nds_file,
    nds_dataset,
    nds_prizes,
    nds_test_set,
)
from pyg_routing.data.presets import PRESETS
from pyg_routing.data.x_generator import sample_x_batch, x_instance
from pyg_routing.errors import InvalidInstanceError

N = 60  # small enough for the Python path, large enough for clusters


def test_cvrp_capacity_table_and_sizes():
    assert NDS_CVRP_CAPACITY == {20: 30, 50: 40, 100: 50, 200: 70, 300: 80, 500: 100,
                                 800: 130, 1000: 200, 2000: 300}
    for n, cap in NDS_CVRP_CAPACITY.items():
        assert NDSCVRPGenerator(n, seed=0).capacity == cap
    with pytest.raises(InvalidInstanceError, match=r"\[20, 50, 100, 200, 300, 500, 800, "
                                                   r"1000, 2000\].*capacity="):
        NDSCVRPGenerator(30)
    assert (NDSCVRPGenerator(30, seed=0, capacity=45).sample(2).capacity == 45).all()


@pytest.mark.parametrize("exact", [False, True])
def test_cvrp_uniform_data(exact):
    a = NDSCVRPGenerator(100, seed=3, exact=exact).sample(40)
    assert torch.equal(a.pos, NDSCVRPGenerator(100, seed=3, exact=exact).sample(40).pos)
    assert not torch.equal(a.pos, NDSCVRPGenerator(100, seed=4, exact=exact).sample(40).pos)
    assert a.pos.shape == (40, 101, 2) and a.pos.dtype == torch.float32
    assert a.pos.min() >= 0 and a.pos.max() <= 1
    assert (a.demand[:, 0] == 0).all()
    assert set(a.demand[:, 1:].unique().tolist()) == set(range(1, 10))
    assert (a.capacity == 50).all()
    a.check()


def test_cvrp_several_depots_are_drawn_last():
    one = NDSCVRPGenerator(50, seed=3, depots=1).sample(4)
    assert torch.equal(one.pos, NDSCVRPGenerator(50, seed=3).sample(4).pos)
    three = NDSCVRPGenerator(50, seed=3, depots=3).sample(4)
    assert three.num_depots == 3 and three.pos.shape == (4, 53, 2)
    # depot 0 and the customers are the one-depot instance's; the extra depots follow it
    assert torch.equal(three.pos[:, :1], one.pos[:, :1])
    assert torch.equal(three.pos[:, 3:], one.pos[:, 1:])
    assert torch.equal(three.demand[:, 3:], one.demand[:, 1:])
    assert (three.demand[:, :3] == 0).all() and (three.capacity == 40).all()
    three.check()
    assert NDSCVRPGenerator(50, seed=0, depots=2).num_nodes == 52
    with pytest.raises(InvalidInstanceError, match="exact=True replays NDS's one-depot "
                                                   "files"):
        NDSCVRPGenerator(50, seed=0, depots=2, exact=True)
    with pytest.raises(InvalidInstanceError, match="depots must be >= 1, got 0"):
        NDSCVRPGenerator(50, seed=0, depots=0)


def test_cvrp_exact_follows_kool_numpy_stream():
    # Kool et al.'s seed-1234 stream starts with the depot (0.19151945, 0.62210877)
    # - the first instance of NDS's vrp500_test_luo.pkl and vrp1000_test_seed1234.pkl.
    inst = nds_test_set("cvrp", 500, dtype=torch.float64)
    assert len(inst) == 128 and (inst.capacity == 100).all()
    rs = np.random.RandomState(1234)
    assert inst.pos[:, 0].tolist() == rs.uniform(size=(128, 2)).tolist()
    assert inst.pos[0, 0].tolist() == [0.1915194503788923, 0.6221087710398319]
    assert len(nds_test_set("cvrp", 1000)) == 100
    with pytest.raises(InvalidInstanceError, match="num="):
        nds_test_set("cvrp", 100)


def _x_layout_checks(inst, n):
    grid = inst.pos.double() * 1000
    assert (grid - grid.round()).abs().max() < 1e-3            # integer grid / 1000
    grid = grid.round()
    assert (inst.pos[:, 0] == 0.5).all()                         # centred depot
    keys = grid[..., 0].long() * 1001 + grid[..., 1].long()
    assert all(len(set(row.tolist())) == n + 1 for row in keys)  # customers and depot distinct
    d = inst.demand[:, 1:]
    assert d.min() >= 1 and d.max() <= 10 and (inst.demand[:, 0] == 0).all()
    total, top = d.sum(1), d.amax(1)
    # C = max(max d, ceil(r * sum d / n)) with r in [8, 12]
    lo = torch.maximum(top, torch.ceil(8 * total / n))
    hi = torch.maximum(top, torch.ceil(12 * total / n))
    assert ((inst.capacity >= lo) & (inst.capacity <= hi)).all()


@pytest.mark.parametrize("exact", [False, True])
def test_x_layout_rules(exact):
    inst = XCVRPGenerator(N, seed=1, exact=exact).sample(30)
    _x_layout_checks(inst, N)
    assert torch.equal(inst.pos, XCVRPGenerator(N, seed=1, exact=exact).sample(30).pos)
    assert not torch.equal(inst.pos, XCVRPGenerator(N, seed=2, exact=exact).sample(30).pos)
    inst.check()


def test_x_seeds_route_size_and_capacity_rule():
    gen = torch.Generator().manual_seed(0)
    points, demand, cap, seeds, r = sample_x_batch(300, 20, gen, return_info=True)
    assert set(seeds.tolist()) == {2, 3, 4, 5, 6}
    assert r.min() >= 8 and r.max() <= 12 and r.std() > 1   # U[8, 12]: sd 1.15
    d = demand[:, 1:]
    assert torch.equal(cap, torch.maximum(d.amax(1), torch.ceil(r * d.sum(1) / 20).long()))
    assert set(d.unique().tolist()) == set(range(1, 11))
    # The Python port draws the seed count first and r second.
    rng, twin = random.Random(5), random.Random(5)
    x_instance(20, rng)
    assert twin.randint(2, 6) in range(2, 7) and 8 <= twin.uniform(8, 12) <= 12


def test_vectorized_x_matches_the_python_port_in_distribution():
    def spread(pos):  # mean distance to the nearest other customer: small when clustered
        c = pos[:, 1:].double()
        dist = torch.cdist(c, c) + torch.eye(c.size(1), dtype=torch.float64) * 9
        return dist.amin(-1).mean().item()

    fast = XCVRPGenerator(N, seed=0).sample(200)
    slow = XCVRPGenerator(N, seed=0, exact=True).sample(200)
    assert spread(fast.pos) == pytest.approx(spread(slow.pos), rel=0.1)
    uniform = XCVRPGenerator(N, seed=0, x_params=(2, 1, 2, 3)).sample(200)
    assert spread(uniform.pos) > 1.5 * spread(fast.pos)
    assert fast.capacity.mean().item() == pytest.approx(slow.capacity.mean().item(), rel=0.05)


@pytest.mark.parametrize("exact", [False, True])
def test_vrptw_windows(exact):
    inst = NDSVRPTWGenerator(N, seed=2, exact=exact).sample(25)
    _x_layout_checks(inst, N)
    inst.check()
    tw, st = inst.time_window, inst.service_time
    assert tw.dtype == torch.float32
    assert (tw[:, 0, 0] == 0).all() and (tw[:, 0, 1] == torch.tensor(1.8)).all()
    assert (st[:, 0] == 0).all() and (st[:, 1:] == torch.tensor(0.05)).all()
    e, late = tw[:, 1:, 0].double(), tw[:, 1:, 1].double()
    assert torch.allclose(e * 1000, (e * 1000).round(), atol=1e-3)   # integral grid times
    assert torch.allclose(late * 1000, (late * 1000).round(), atol=1e-3)
    assert ((late - e) <= 0.4 + 1e-6).all() and ((late - e) >= 0).all()
    d0 = (inst.pos[:, 1:] - inst.pos[:, :1]).double().norm(dim=-1)
    start = torch.maximum(d0, e)                        # drive straight there, wait
    assert (start <= late).all()
    assert (start + 0.05 + d0 <= 1.8).all()             # serve and be back in time
    for i in (0, 7):
        RoutingData.from_routes(inst[i], [[v] for v in range(1, N + 1)]).check()


@pytest.mark.parametrize("exact", [False, True])
def test_pcvrp_prizes(exact):
    inst = NDSPCVRPGenerator(N, seed=4, exact=exact).sample(25)
    _x_layout_checks(inst, N)
    inst.check()
    p, d = inst.prize[:, 1:], inst.demand[:, 1:]
    assert (inst.prize[:, 0] == 0).all()
    assert p.min() >= 0.1 - 1e-7 and p.max() <= 0.2 + 1e-7
    f = (d - d.amin(1, keepdim=True)) / (d.amax(1, keepdim=True) - d.amin(1, keepdim=True))
    noise = p - 0.5 * (0.1 + 0.1 * f)                   # the random half: U[0.05, 0.1]
    assert noise.min() >= 0.05 - 1e-6 and noise.max() <= 0.1 + 1e-6
    assert torch.equal(nds_prizes(torch.full((1, 3), 4), torch.zeros(1, 3)),
                       torch.full((1, 3), 0.1))        # equal demands: no NaN


# A few numbers of NDS's own files, to recognise them without the files.
FINGERPRINTS = {
    ("vrptw", 500, 1234): ([48, 43, 47, 59], [[35, 753], [852, 603], [712, 214]],
                           [5, 9, 1, 6, 8]),
    ("vrptw", 100, 1233): ([53, 45, 51, 64], [[491, 322], [616, 237], [364, 208]],
                           [4, 5, 2, 9, 3]),
    ("pcvrp", 1000, 1234): ([48, 48, 59, 62], [[133, 898], [35, 753], [153, 736]],
                            [4, 6, 4, 4, 3]),
}


@pytest.mark.parametrize("key", list(FINGERPRINTS))
def test_exact_path_reproduces_nds_files_fingerprints(key):
    problem, n, seed = key
    caps, xy, dem = FINGERPRINTS[key]
    inst = nds_dataset(problem, n, seed, num=4 if n <= 500 else 1)
    assert inst.capacity.tolist() == caps[:len(inst)]
    assert (inst.pos[0, 1:4] * 1000).round().tolist() == xy
    assert inst.demand[0, 1:6].tolist() == dem
    if problem == "vrptw" and seed == 1234:
        assert (inst.time_window[0, 1:4] * 1000).round().tolist() == [
            [531, 751], [576, 976], [427, 827]]
    if problem == "pcvrp":
        assert inst.prize[0, 1:4].tolist() == pytest.approx(
            [0.11811563372612, 0.1478727161884308, 0.12965887784957886], abs=0)


_NDS_FILE = re.compile(r"^(?:(vrptw|pcvrp)(\d+)_\w+?_seed(\d+)_2_2_2_3_.*\.pt"
                       r"|vrp(\d+)_\w+?_(?:seed(\d+)|luo)\.pkl)$")


def _nds_files():
    folder = os.environ.get("PYG_ROUTING_NDS_DATA")
    if not folder or not Path(folder).is_dir():
        return []
    return sorted(p for p in Path(folder).rglob("*") if _NDS_FILE.match(p.name))


@pytest.mark.skipif(not _nds_files(), reason="set PYG_ROUTING_NDS_DATA to a folder "
                    "holding NDS's data files (data/vrptw/*.pt, data/cvrp/*.pkl, ...)")
@pytest.mark.parametrize("path", _nds_files(), ids=lambda p: p.name)
def test_exact_path_against_nds_files(path):
    ref = load_nds_file(str(path))
    m = _NDS_FILE.match(path.name)
    if m.group(1):   # VRPTW/PCVRP: the first instances do not depend on the count
        k = min(len(ref), 20)
        got = nds_dataset(m.group(1), int(m.group(2)), int(m.group(3)), num=k)
    else:            # CVRP: one numpy stream per file; LEHD's "luo" file is seed 1234
        k = len(ref)
        got = nds_dataset("cvrp", int(m.group(4)), int(m.group(5) or 1234), num=k,
                          dtype=torch.float64)
    for name, value in got._tensor_fields().items():
        expected = getattr(ref, name)[:k]
        assert torch.equal(value, expected.to(value.dtype)), name


def test_presets_and_make_generator():
    assert {"paper", "nds", "nds_low_capacity", "nds_clustered"} <= set(PRESETS)
    paper = make_generator("cvrp", 20, seed=7).sample(3)
    assert torch.equal(paper.pos, make_generator("cvrp", 20, seed=7, preset="paper")
                       .sample(3).pos)
    assert isinstance(make_generator("cvrp", 20, preset="paper"), CVRPGenerator)
    assert isinstance(make_generator("cvrp", 100, seed=0, preset="nds"), NDSCVRPGenerator)
    assert isinstance(make_generator("vrptw", 50, seed=0, preset="nds"), NDSVRPTWGenerator)
    assert isinstance(make_generator("pcvrp", 50, seed=0, preset="nds"), NDSPCVRPGenerator)
    clustered = make_generator("cvrp", 500, seed=0, preset="nds_clustered").sample(2)
    _x_layout_checks(clustered, 500)
    with pytest.raises(InvalidInstanceError, match="unknown data preset 'bogus'.*paper, nds"):
        make_generator("cvrp", 20, preset="bogus")
    with pytest.raises(InvalidInstanceError, match="no 'tsp' generator; it has cvrp, vrptw"):
        make_generator("tsp", 20, preset="nds")
    with pytest.raises(InvalidInstanceError, match=r"n in \[20, 50, .*got n=30"):
        make_generator("cvrp", 30, preset="nds")
    with pytest.raises(InvalidInstanceError, match="preset 'paper' only"):
        make_generator("cvrp", 100, preset="nds", distribution="clustered")
    with pytest.raises(InvalidInstanceError, match="cpu"):
        NDSVRPTWGenerator(20, exact=True, device="meta")


@pytest.mark.parametrize("exact", [False, True])
def test_low_capacity_shift(exact):
    n = 500
    inst = make_generator("cvrp", n, seed=0, preset="nds_low_capacity",
                          exact=exact).sample(64)
    inst.check()
    d = inst.demand[:, 1:].double()
    assert d.min() >= 1 and d.max() <= 9 and inst.pos.min() >= 0 and inst.pos.max() <= 1
    total, cap = d.sum(1), inst.capacity.double()
    # C = max(max d, ceil(r * sum d / n)), r ~ U[5, 8]: bounds, and the spread of r
    assert ((cap >= torch.ceil(5 * total / n)) & (cap <= torch.ceil(8 * total / n))).all()
    per_route = n * cap / total                          # ~ r
    assert per_route.min() < 5.5 and per_route.max() > 7.5
    assert per_route.mean().item() == pytest.approx(6.5, abs=0.3)
    with pytest.raises(InvalidInstanceError, match="not both"):
        NDSCVRPGenerator(500, capacity=40, route_size=(5, 8))
    assert NDSCVRPGenerator(37, route_size=(5, 8)).capacity is None   # any size


def test_dataset_cache_key_includes_non_paper_presets(tmp_path):
    paper = RoutingDataset(str(tmp_path), "cvrp", 20, 3, seed=1, progress=False)
    # Keys of 'paper' are those of the dataset before presets existed.
    old = {"problem": "cvrp", "num_customers": 20, "num_instances": 3, "seed": 1,
           "distribution": "uniform", "generator_kwargs": {}, "solver": None,
           "time_limit": None, "solver_seed": None, "format_version": 1}
    digest = hashlib.sha1(json.dumps(old, sort_keys=True).encode()).hexdigest()[:12]
    assert paper.key == f"cvrp20_n3_s1_nosol_{digest}"
    nds = RoutingDataset(str(tmp_path), "cvrp", 20, 3, seed=1, progress=False, preset="nds")
    assert nds.key.startswith("cvrp20_nds_n3_s1_nosol_") and nds.key != paper.key
    assert torch.equal(nds[0].pos, make_generator("cvrp", 20, seed=1, preset="nds")
                       .sample(3)[0].pos)
    via_kwargs = RoutingDataset(str(tmp_path), "cvrp", 20, 3, seed=1, progress=False,
                                generator_kwargs={"preset": "nds"})
    assert via_kwargs.key == nds.key
    # The exact path through the dataset: NDS's file, built once and cached.
    exact = RoutingDataset(str(tmp_path), "vrptw", 50, 3, seed=1234, progress=False,
                           preset="nds", generator_kwargs={"exact": True})
    ref = nds_dataset("vrptw", 50, 1234, num=3)
    assert torch.equal(exact[2].time_window, ref.time_window[2])
    with pytest.raises(InvalidInstanceError, match="unknown data preset"):
        RoutingDataset(str(tmp_path), "cvrp", 20, 3, preset="nope")
    with pytest.raises(InvalidInstanceError, match="preset 'paper' only"):
        RoutingDataset(str(tmp_path), "cvrp", 20, 3, preset="nds", distribution="clustered")


def test_x_generator_refuses_undefined_settings():
    with pytest.raises(InvalidInstanceError, match="cust_pos must be one of"):
        XCVRPGenerator(50, x_params=(2, 4, 2, 3))
    with pytest.raises(InvalidInstanceError, match="at least 6 clustered"):
        XCVRPGenerator(5)
    assert math.isclose(XCVRPGenerator(50, seed=0, x_params=(3, 1, 1, 1)).sample(2)
                        .pos[:, 0].abs().sum().item(), 0)


def test_cli_generate_with_a_preset(tmp_path, capsys):
    from pyg_routing.cli import main

    args = ["generate", "--problem", "pcvrp", "--num-customers", "20", "--num-instances",
            "2", "--seed", "1234", "--root", str(tmp_path), "--json"]
    assert main([*args, "--data.preset", "nds", "--exact"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"]["preset"] == "nds" and "pcvrp20_nds_" in out["path"]
    assert main([*args, "--exact"]) == 2
    assert "needs an nds --data.preset" in capsys.readouterr().err
    assert main([*args, "--data.preset", "nds", "--distribution", "clustered"]) == 2
    assert "preset 'paper' only" in capsys.readouterr().err
