import json
import math

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.commands.grammar import normalize
from pyg_routing.commands.probe import main, parse
from pyg_routing.commands.probe import render as render_probe
from pyg_routing.commands.probe import run as run_probe
from pyg_routing.data import CVRPGenerator, RoutingData
from pyg_routing.data.solvers import solve_instances
from pyg_routing.errors import RoutingError
from pyg_routing.functional.route_pe import ipe, xpe
from pyg_routing.probes import (
    anisometry,
    hierarchy_entropy,
    normalized_entropy,
    pairwise,
    paper_encodings,
    route_anisometry,
    sample_pairs,
    spearman_probe,
)
from pyg_routing.probes.paper_values import ANISOMETRY, SPEARMAN, paper_key


def solution(pos, routes, problem="cvrp"):
    pos = torch.tensor(pos, dtype=torch.float)
    n = pos.size(0)
    inst = RoutingData.from_instance(problem, pos, demand=[0] + [1] * (n - 1), capacity=n)
    return RoutingData.from_routes(inst, routes)


@pytest.fixture(scope="module")
def solved():
    inst = CVRPGenerator(30, seed=3).sample(6).to_data_list()
    return solve_instances(inst, solver="nearest_neighbor", progress=False)


# ---------------------------------------------------------------- anisometry
def test_anisometry_of_a_hand_built_solution():
    # Route 0: a 3 x 4 rectangle, edges 3, 4, 3, 4; d = 0, 3, 7, 10, 14.
    # Route 1: one customer (left out). Route 2: two coincident customers, edges 2, 0, 2.
    data = solution([[0, 0], [3, 0], [3, 4], [0, 4], [-1, 0], [0, -2], [0, -2]],
                    [[1, 2, 3], [4], [5, 6]])
    per = route_anisometry(data)
    assert per.route.tolist() == [0, 2] and per.num_customers.tolist() == [3, 2]
    assert per.cv[0] == pytest.approx(0.5 / 3.5)
    assert per.max_min[0] == pytest.approx(4 / 3)
    # Least squares d = -0.2 + 3.5 i: |residuals| 0.2, 0.3, 0.2, 0.3, 0.2 -> median 0.2.
    assert per.mad[0] == pytest.approx(0.2 / 3.5)
    assert per.cv[1] == pytest.approx(np.std([2, 0, 2]) / np.mean([2, 0, 2]))
    assert per.max_min[1] == pytest.approx(1.0)        # the zero-length edge is ignored
    summary = anisometry(data)
    assert summary["num_routes"] == 2
    assert summary["cv"] == pytest.approx((per.cv[0] + per.cv[1]).item() / 2)
    assert anisometry(data, min_customers=1)["num_routes"] == 3


def _reference(data):
    out = []
    pos = data.pos.double().numpy()
    for r in data.routes():
        if len(r) < 2:
            continue
        tour = [0, *r, 0]
        e = np.linalg.norm(pos[tour[1:]] - pos[tour[:-1]], axis=1)
        d = np.concatenate([[0.0], np.cumsum(e)])
        i = np.arange(len(d))
        b, a = np.polyfit(i, d, 1)
        out.append((e.std() / e.mean(), e.max() / e.min(),
                    np.median(np.abs(d - a - b * i)) / e.mean()))
    return np.array(out)


def test_vectorized_anisometry_matches_a_per_route_loop_over_a_batch(solved):
    batch = Batch.from_data_list(solved)
    per = route_anisometry(batch)
    ref = np.concatenate([_reference(d) for d in solved])
    got = torch.stack([per.cv, per.max_min, per.mad], 1).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    assert anisometry(solved)["cv"] == pytest.approx(ref[:, 0].mean())
    assert anisometry(batch)["num_instances"] == len(solved)


# ---------------------------------------------------------------- entropy
def test_normalized_entropy_extremes():
    centers = -math.pi + (torch.arange(16) + 0.5) * 2 * math.pi / 16
    assert normalized_entropy(centers.repeat(5)) == pytest.approx(1.0)
    assert normalized_entropy(torch.full((40,), 0.3)) == pytest.approx(0.0)
    assert normalized_entropy(centers[:4]) == pytest.approx(0.5)    # 4 of 16 bins
    assert math.isnan(normalized_entropy(torch.zeros(0)))


def _rays(angles):
    """One route per angle: 3 customers along the ray at radius 1, 2, 3."""
    pos, routes = [[0.0, 0.0]], []
    for a in angles:
        routes.append(list(range(len(pos), len(pos) + 3)))
        pos += [[r * math.cos(a), r * math.sin(a)] for r in (1, 2, 3)]
    return solution(pos, routes)


def test_hierarchy_entropy_uniform_and_single_bin():
    centers = (-math.pi + (torch.arange(16) + 0.5) * 2 * math.pi / 16).tolist()
    out = hierarchy_entropy(_rays(centers), positions=[2, 3, 4], min_samples=16)
    assert out["per_k"][:2] == [pytest.approx(1.0), pytest.approx(1.0)]
    assert out["per_k"][2] is None and out["counts"] == [16, 16, 0]
    assert out["mean"] == pytest.approx(1.0) and out["min"] == pytest.approx(1.0)
    same = hierarchy_entropy([_rays([0.1 + 1e-3 * i for i in range(5)])] * 4,
                             positions=[2], min_samples=1)
    assert same["per_k"] == [pytest.approx(0.0)] and same["counts"] == [20]
    assert same["num_instances"] == 4
    default = hierarchy_entropy(_rays(centers))
    assert default["positions"] == list(range(2, 16)) and default["mean"] is None


# ---------------------------------------------------------------- spearman
def _two_mirrored_routes():
    """Two routes far from the depot, mirror images (equal d_L), with uneven spacing:
    every in-route gap is below d_L / 2, so D1 and D2 order pairs alike."""
    ys = [0.0, 0.05, 0.53, 0.7, 1.61, 1.9, 3.12]      # all gaps distinct
    pos = [[0.0, 0.0]] + [[10.0, y] for y in ys] + [[-10.0, y] for y in ys]
    n = len(ys)
    return solution(pos, [list(range(1, n + 1)), list(range(n + 1, 2 * n + 1))])


def test_sample_pairs_are_valid_and_seeded(solved):
    batch = Batch.from_data_list(solved)
    pairs = sample_pairs(batch, 5000, seed=1)
    rid, graph = batch.route_id, batch.batch
    i, j = pairs.same
    assert (rid[i] == rid[j]).all() and (i != j).all() and (rid[i] >= 0).all()
    i, j = pairs.cross
    assert (graph[i] == graph[j]).all() and (rid[i] != rid[j]).all()
    assert (rid[i] >= 0).all() and (rid[j] >= 0).all()
    assert torch.equal(sample_pairs(batch, 5000, seed=1).same, pairs.same)
    assert pairs.same.size(1) == pairs.cross.size(1) == 5000
    # Every ordered pair is reachable: 2 routes of 7 -> 2 * 7 * 6 same, 2 * 7 * 7 cross.
    small = sample_pairs(_two_mirrored_routes(), 5000, seed=0)
    assert len(set(map(tuple, small.same.T.tolist()))) == 84
    assert len(set(map(tuple, small.cross.T.tolist()))) == 98


def test_ipe_reaches_d1_one_where_it_must_and_the_index_baseline_does_not():
    data = _two_mirrored_routes()
    enc = {
        "IPE": lambda b: ipe(b.cum_dist, b.route_length, dim=2, direction="aware",
                             route_pos=b.route_pos),
        "Index": lambda b: b.route_pos.float(),
        "XPE": lambda b: xpe(b.depot_angle, 1, depot_mask=b.depot_mask),
        "gap": pairwise(lambda b: (b.cum_dist[:, None] - b.cum_dist[None, :]).abs()),
        "NoPE": lambda b: torch.zeros(b.num_nodes, 4),
    }
    out = spearman_probe(data, enc, num_pairs=4000, seed=0)
    assert out["IPE"]["D1"] == pytest.approx(1.0) and out["IPE"]["D2"] == pytest.approx(1.0)
    assert out["gap"]["D1"] == pytest.approx(1.0)
    assert out["Index"]["D1"] < 0.95
    # XPE separates the two routes perfectly: the balanced rank-biserial maximum.
    assert out["XPE"]["D3"] == pytest.approx(math.sqrt(3) / 2, abs=0.02)
    assert out["XPE"]["D3_ratio"] > 10
    assert out["NoPE"] == {"D1": None, "D2": None, "D3": None, "D3_ratio": None}


def test_spearman_probe_batches_and_checks_shapes(solved):
    enc = {"IPE": lambda b: ipe(b.cum_dist, b.route_length, 2, "aware")}
    whole = spearman_probe(solved, enc, num_pairs=3000, seed=2, batch_size=64)
    chunked = spearman_probe(solved, enc, num_pairs=3000, seed=2, batch_size=2)
    assert whole["IPE"] == pytest.approx(chunked["IPE"])
    def dense_gap(b):             # [B, n_max, n_max] per-graph pairwise, padded
        from torch_geometric.utils import to_dense_batch
        d, _ = to_dense_batch(b.cum_dist, b.batch)
        return (d[:, :, None] - d[:, None, :]).abs()

    def flat_gap(b):
        same = b.batch[:, None] == b.batch[None, :]
        return torch.where(same, (b.cum_dist[:, None] - b.cum_dist[None, :]).abs(), 0.0)

    gaps = spearman_probe(solved, {"dense": dense_gap, "flat": flat_gap}, num_pairs=3000,
                          seed=2, batch_size=4)
    assert gaps["dense"] == pytest.approx(gaps["flat"]) and gaps["flat"]["D1"] == 1.0
    with pytest.raises(RoutingError, match="shape"):
        spearman_probe(solved, {"bad": lambda b: torch.zeros(3, 2)}, num_pairs=10)


def test_paper_encodings_are_the_probe_representations():
    from pyg_routing.probes.representations import probe_representations

    assert list(paper_encodings(8)) == list(probe_representations(dim=8))


def test_paper_values_and_names():
    assert ANISOMETRY["CVRP-100"] == {"cv": 0.81, "max_min": 26.6, "mad": 0.37}
    assert len(SPEARMAN) == 14 and SPEARMAN["IPE + XPE"]["D2"] == 0.923
    for name, key in [("ipexpe", "IPE + XPE"), ("LapPE", "Laplacian PE"), ("sin", "SIN"),
                      ("IPE (geometric)", "IPE"), ("dact_cpe", "DACT CPE"), ("Index", None)]:
        assert paper_key(name) == key


# ---------------------------------------------------------------- command
def _args(tmp_path, *argv):
    return parse(normalize([*argv, "--problem", "cvrp", "--num-customers", "20",
                            "--instances", "4", "--solver", "nearest_neighbor",
                            "--root", str(tmp_path), "--no-progress"]))


def test_probe_commands_return_documented_keys_with_paper_values(tmp_path):
    a = run_probe(_args(tmp_path, "anisometry"))
    assert {"probe", "dataset", "definition", "ours", "paper", "paper_row"} <= set(a)
    assert {"cv", "max_min", "mad", "mad_customers", "num_routes"} <= set(a["ours"])
    assert a["paper"] is None and a["paper_row"] == "CVRP-20"
    assert "26.6" in render_probe(a)            # the paper's Tab. 1 is printed below
    e = run_probe(_args(tmp_path, "entropy"))
    assert e["paper"]["mean"] == 0.992 and e["paper"]["min"] == 0.953
    assert len(e["ours"]["per_k"]) == 14 and "0.953" in render_probe(e)
    s = run_probe(_args(tmp_path, "spearman", "--encodings", "builtin", "--pairs", "2000"))
    assert set(s["ours"]["IPE + XPE"]) == {"D1", "D2", "D3", "D3_ratio"}
    assert s["paper"]["IPE + XPE"] == SPEARMAN["IPE + XPE"] and s["paper"]["Index"] is None
    text = render_probe(s)
    assert "0.923" in text and "SPD (not probed)" in text
    json.dumps(a), json.dumps(e), json.dumps(s)


def test_probe_help_shows_definitions_and_standalone_main_prints_json(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["entropy", "--help"])
    assert "pooled over instances" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["spearman", "--help"])
    assert "rank-biserial" in capsys.readouterr().out
    code = main(["anisometry", "--num-customers", "10", "--instances", "2", "--solver",
                 "nearest_neighbor", "--root", str(tmp_path), "--no-progress", "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["probe"] == "anisometry"
