"""``pyg-routing search``: tables on generated instances and CVRPLib X, references, the
distributed run, and one-line errors."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from pyg_routing.cli import main
from pyg_routing.data.benchmarks import load_instance
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.probes.paper_nds_values import caption, setting_values, x_table

BUNDLED = Path(__file__).resolve().parents[2] / "pyg_routing" / "data" / "bundled"
FAST = ["--test.steps", "2", "--test.augment", "2", "--test.rollouts", "8", "--no-progress",
        "--json"]


def _run(argv: list[str], capsys) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("problem, preset", [("cvrp", "paper"), ("vrptw", "nds"),
                                             ("pcvrp", "nds")])
def test_generated_instances_give_a_table(tmp_path, capsys, problem, preset):
    out = _run(["search", "--problem", problem, "--num-customers", "30", "--test.instances",
                "2", "--data.preset", preset, "--destroy", "random", "--out", str(tmp_path),
                *FAST], capsys)
    assert [r["instance"] for r in out["rows"]] == [f"{problem}30-0", f"{problem}30-1"]
    for row in out["rows"]:
        assert row["iterations"] == 2 and row["gap_percent"] is None
        assert row["objective"] == pytest.approx(row["search_objective"], rel=1e-5, abs=1e-5)
        assert row["objective"] <= row["start_objective"] + 1e-6
    with open(tmp_path / "table.csv") as f:
        assert len(list(csv.DictReader(f))) == 2
    assert "**mean**" in (tmp_path / "table.md").read_text()
    assert not list(tmp_path.glob("rows_rank*.json"))


def test_reference_gap_on_generated_instances(tmp_path, capsys):
    # search generates NDS's family by default, which has no 20-customer CVRP capacity
    out = _run(["search", "--problem", "cvrp", "--num-customers", "20", "--data.preset",
                "paper", "--test.instances", "2", "--destroy", "sisr", "--reference.solver",
                "pyvrp", "--reference.seconds", "0.2", "--root", str(tmp_path / "data"),
                "--out", str(tmp_path / "t"), *FAST], capsys)
    for row in out["rows"]:
        assert row["target"] > 0
        assert row["gap_percent"] == pytest.approx(100 * (row["objective"] / row["target"] - 1))
    assert out["mean"]["gap_percent"] is not None


def _x_folder(tmp_path: Path, bks: str | None) -> Path:
    folder = tmp_path / "x"
    folder.mkdir()
    shutil.copy(BUNDLED / "X-n101-k25.vrp", folder)
    if bks is not None:
        (folder / "bks.csv").write_text(bks)
    return folder


def test_x_benchmark_rounds_costs_like_cvrplib_and_reports_the_bks_gap(tmp_path, capsys):
    folder = _x_folder(tmp_path, "instance,bks\nX-n101-k25,27591\n")
    out = _run(["search", "--benchmark", "X", "--data-dir", str(folder), "--destroy", "sisr",
                "--out", str(tmp_path / "t"), *FAST], capsys)
    (row,) = out["rows"]
    assert row["instance"] == "X-n101-k25" and row["target"] == 27591
    assert row["objective"] == int(row["objective"])          # nint arcs: an integer cost
    assert row["gap_percent"] == pytest.approx(100 * (row["objective"] / 27591 - 1))
    assert row["objective"] >= 27591
    # the search ran on coordinates / 1000: its own cost is the unrounded one / 1000
    assert row["search_objective"] == pytest.approx(row["objective"] / 1000, rel=2e-3)
    # the paper's Tab. 7 row of the instance, in the JSON and the Markdown table
    assert (row["paper_nds_gap"], row["paper_ipexpe_gap"]) == (0.381, 0.381)
    table = (tmp_path / "t" / "table.md").read_text()
    assert "average gap NDS 4.110 %, IPE+XPE 2.828 %" in table and "| 0.38 | 0.38 |" in table


def test_paper_values_of_the_nds_tables():
    table = x_table()
    assert len(table) == 84 and table["X-n1001-k43"]["ipexpe_objective"] == 76758
    for name, row in table.items():         # every parsed row is self-consistent
        for method in ("nds", "ipexpe"):
            gap = 100 * (row[f"{method}_objective"] / row["bks"] - 1)
            assert gap == pytest.approx(row[f"{method}_gap_percent"], abs=6e-3), name
    assert setting_values("cvrp", 500, "nds")["NDS"] == (36.57, -0.20)
    assert setting_values("vrptw", 2000, "nds")["IPE+XPE"] == (166.80, -3.84)
    assert setting_values("cvrp", 500, "nds_clustered")["SISRs"] == (44.31, -0.49)
    assert setting_values("cvrp", 100, "nds") is None
    assert setting_values("cvrp", 500, "paper") is None
    line = caption(setting_values("pcvrp", 500, "nds"), "Tab. 5")
    assert line == ("Paper (Tab. 5, 60 s per instance): PyVRP-HGS 44.97, NDS 43.12 (-4.12 %), "
                    "IPE+XPE 43.13 (-4.09 %)")


def test_x_best_known_routes_cost_the_bks():
    sol = load_instance(BUNDLED / "X-n101-k25.vrp", solution=True)
    assert isinstance(sol, RoutingData) and float(sol.cost()) == 27591


@pytest.mark.parametrize("argv, message", [
    (["search", "--test.seconds", "0"], "--test.seconds must be > 0, got 0.0"),
    (["search", "--problem", "tsp"], "supports cvrp, vrptw, pcvrp, not 'tsp'"),
    (["search", "--test.exact"], "argument --test.exact: expected one argument"),
])
def test_bad_option_values_are_one_line_usage_errors(argv, message, capsys):
    # main returns the usage error's status (2) instead of raising SystemExit
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, message", [
    # search's default family is NDS's now: the paper's is asked for to be refused
    (["search", "--data.preset", "paper", "--test.exact", "true", "--test.instances", "1"],
     "--test.exact replays NDS's random streams; it needs an nds --data.preset"),
    (["search", "--benchmark", "x", "--names", "X-n999-k1"], "X-n999-k1"),
])
def test_bad_options_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_an_x_file_without_a_bks_entry_is_refused_by_name(tmp_path, capsys):
    """No entry in bks.csv, no .sol, not in the paper's table: refused, naming the
    instance and where its value was looked for."""
    folder = _x_folder(tmp_path, "instance,bks\nX-n106-k14,26362\n")
    text = (folder / "X-n101-k25.vrp").read_text().replace("X-n101-k25", "X-mine")
    (folder / "X-n101-k25.vrp").unlink()
    (folder / "X-mine.vrp").write_text(text)
    assert main(["search", "--benchmark", "x", "--data-dir", str(folder), *FAST]) == 2
    err = capsys.readouterr().err
    assert "X-mine" in err and "bks.csv" in err and "X-mine.sol" in err
    assert err.count("\n") == 1


def test_an_x_file_missing_from_bks_csv_takes_the_papers_value(tmp_path, capsys):
    folder = _x_folder(tmp_path, "instance,bks\nX-n106-k14,26362\n")
    out = _run(["search", "--benchmark", "x", "--data-dir", str(folder), "--destroy", "sisr",
                "--out", str(tmp_path / "t"), *FAST], capsys)
    assert [r["target"] for r in out["rows"]] == [27591.0]


@pytest.mark.slow
def test_two_worker_processes_search_every_instance_once(tmp_path):
    """``--workers 2``: Lightning's DDP on CPU splits the instances; rank 0 merges."""
    import subprocess
    import sys

    out = tmp_path / "t"
    cmd = [sys.executable, "-m", "pyg_routing.cli", "search", "--problem", "cvrp",
           "--num-customers", "20", "--data.preset", "paper", "--test.instances", "3",
           "--workers", "2", "--threads", "1", "--destroy", "random", "--out", str(out),
           *FAST]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((out / "result.json").read_text())
    assert [r["index"] for r in result["rows"]] == [0, 1, 2]
    assert result["devices"] == 2


def test_problem_defaults_to_the_checkpoints(tmp_path):
    import torch

    from pyg_routing.commands.grammar import normalize
    from pyg_routing.commands.search import parse
    from pyg_routing.training import NDSLightning
    from tests.helpers import NDS_TINY

    torch.manual_seed(0)
    model = NDSLightning(problem="vrptw", pe="none", **NDS_TINY)     # the checkpoint holds
    path = tmp_path / "vrptw.ckpt"
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams)},
               path)
    policy = ["--destroy", "policy", "--checkpoint", str(path)]
    trained = parse(normalize(policy)).config
    # the checkpoint's recipe: its problem, and (by design now) its size and family too
    assert (trained.problem, trained.num_customers, trained.data.preset) == \
        ("vrptw", 10, "paper")
    given = parse(normalize([*policy, "--num-customers", "30"])).config
    assert (given.problem, given.num_customers) == ("vrptw", 30)   # the user's choice stands
    with pytest.raises(ValueError, match="trained with problem 'vrptw', but 'pcvrp'"):
        parse(normalize([*policy, "--problem", "pcvrp"]))       # another problem: refused
    plain = parse(normalize(["--destroy", "sisr"])).config
    assert (plain.problem, plain.num_customers, plain.data.preset) == ("cvrp", 500, "nds")


def test_search_benchmark_x_works_on_the_bundled_files(tmp_path, capsys, monkeypatch):
    """No --data-dir, no $PYG_ROUTING_DATA, no bks.csv: the bundled X-n101-k25 and the
    BKS of its .sol file."""
    monkeypatch.delenv("PYG_ROUTING_DATA", raising=False)
    out = _run(["search", "--benchmark", "x", "--destroy", "sisr",
                "--out", str(tmp_path / "t"), *FAST], capsys)
    (row,) = out["rows"]
    assert row["instance"] == "X-n101-k25" and row["target"] == 27591.0
    assert row["gap_percent"] == pytest.approx(100 * (row["objective"] / 27591.0 - 1))
