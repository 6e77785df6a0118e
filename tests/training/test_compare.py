import csv
import json
from pathlib import Path

import pytest
import torch

from pyg_routing import encodings
from pyg_routing.cli import main
from pyg_routing.commands.compare import parse_encodings, render_markdown
from tests.helpers import tiny_argv

TINY = tiny_argv(instances=6, steps=8)


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    # --search-seconds far beyond the 8 steps: iteration-capped, as without it
    argv = ["compare", "--problem", "cvrp", "--pe", "spd,none,ipexpe", *TINY,
            "--train.epochs", "100000", "--budget-minutes", "0.4", "--reference.seconds", "0.1",
            "--root", str(out / "data"), "--test.seconds", "600", "--test.augment", "1",
            "--out", str(out)]
    assert main(argv) == 0
    return out / "compare_dact_cvrp8"


@pytest.mark.slow
def test_compare_trains_every_encoding_under_one_budget_and_one_search(compared):
    res = json.loads((compared / "result.json").read_text())
    rows = res["rows"]
    # the paper's order whatever --pe said: reference, random moves, No PE, ..., IPE + XPE
    assert [r["encoding"] for r in rows] == ["reference", "random", "none", "spd", "ipexpe"]
    ref = rows[0]["objective"]
    searched = rows[1:]
    # identical search: the same test instances and initial solutions for every row
    assert len({round(r["initial_objective"], 9) for r in searched}) == 1
    for r in searched:
        assert r["objective"] <= r["initial_objective"] + 1e-9
        assert r["gap_percent"] == pytest.approx(100 * (r["objective"] / ref - 1))
        assert r["gap_percent"] > -1e-6             # PyVRP is optimal-ish on CVRP-8
    for r in rows[2:]:
        assert Path(r["checkpoint"]).exists()
        # the 24-second budget (validation included) stopped training, not the epoch
        # count: no machine runs 100,000 epochs of CVRP-8 in 24 s
        assert r["epochs"] < 100_000 and r["train_seconds"] < 60
    assert set(res["curves"]) == {"NoPE", "SPD", "IPE + XPE"}
    for points in res["curves"].values():
        assert points[0]["seconds"] > 0.0 and len(points) >= 1    # no sanity-check point
        assert all(a["seconds"] < b["seconds"] for a, b in zip(points, points[1:]))


@pytest.mark.slow
def test_compare_tests_with_the_search_of_evaluate(compared, tmp_path, capsys):
    """A compare row is ``evaluate`` of its checkpoint on the same instances (the
    backbone's test search, through the same jobs): the same numbers exactly."""
    res = json.loads((compared / "result.json").read_text())
    row = next(r for r in res["rows"] if r["encoding"] == "ipexpe")
    assert res["search_seconds"] == 600 and "(≤ 600 s)" in (compared / "table.md").read_text()
    assert res["starts"] == "shared" and row["runs"][0]["iterations"] == 8
    capsys.readouterr()
    assert main(["evaluate", "--checkpoint", row["checkpoint"], "--test.seed", "1234",
                 "--test.instances", "6", "--test.steps", "8", "--test.seconds", "600",
                 "--test.augment", "1", "--test.init", res["init"], "--reference.solver",
                 "none", "--accelerator", "cpu", "--no-progress", "--out", str(tmp_path),
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]

    def mean(key: str) -> float:
        return float(torch.tensor([r[key] for r in rows], dtype=torch.float64).mean())

    assert row["objective"] == mean("search_objective")
    assert row["initial_objective"] == mean("start_objective")


@pytest.mark.parametrize("module", [
    "pyg_routing.commands.compare", "pyg_routing.commands.evaluate",
    "pyg_routing.commands.train", "pyg_routing.cli", "pyg_routing.training.base",
    "pyg_routing.training.ppo", "pyg_routing.training.fit", "pyg_routing.training.config",
    "pyg_routing.training.search_predictor", "pyg_routing.training.datamodule",
    "pyg_routing.search.step", "pyg_routing.search.destroy_repair",
    "pyg_routing.commands.grammar", "pyg_routing.commands.test_command",
    "pyg_routing.training.sections"])
def test_no_backbone_name_is_branched_on(module):
    """Issue 27: the commands and the shared training and search code reach every
    backbone through its hooks (test_search, search_settings, budget_per_instance,
    baselines), so no backbone's name is compared against in them.
    (``commands.search`` is NDS's own front end and names it by design.)"""
    import ast
    import importlib
    import inspect

    from pyg_routing.training import backbones

    names = set(backbones.available())
    source = inspect.getsource(importlib.import_module(module))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare | ast.MatchValue):
            consts = {c.value for c in ast.walk(node) if isinstance(c, ast.Constant)}
            assert not consts & names, ast.unparse(node)


@pytest.mark.slow
def test_compare_runs_a_registered_fourth_backbone(tmp_path, capsys):
    """A backbone compare has never heard of (tests/seams/toy_backbone.py) is trained,
    tested with its own test search and given its baseline row."""
    from pyg_routing.training import backbones
    from tests.seams.toy_backbone import RelocateLightning

    backbones.register(RelocateLightning)
    try:
        code = main(["compare", "--backbone", "relocate", "--problem", "tsp",
                     "--num-customers", "8", "--pe", "none", "--train.epochs", "1",
                     "--train.batches-per-epoch", "2", "--train.batch-size", "4",
                     "--train.t-train", "4", "--train.n-step", "2", "--validate.instances",
                     "4", "--validate.steps", "3", "--model.dim", "16", "--test.instances",
                     "4", "--test.steps", "10", "--test.augment", "2", "--reference.solver",
                     "none", "--trainer.accelerator", "cpu", "--no-progress", "--json",
                     "--out", str(tmp_path)])
    finally:
        backbones.unregister("relocate")
    res = json.loads(capsys.readouterr().out)
    assert code == 0 and res["backbone"] == "relocate"
    assert [r["encoding"] for r in res["rows"]] == ["random", "none"]
    assert res["init"] == RelocateLightning.make_env().inits[0]
    random, trained = res["rows"]
    for r in (random, *trained["runs"]):
        assert r["objective"] <= r["initial_objective"] + 1e-6 and r["iterations"] == 10


def test_compare_refuses_the_search_options_of_other_backbones(tmp_path, capsys):
    """``--test.rollouts`` belongs to the backbones whose test search takes
    ``rollouts``; ``--test.seconds`` to every backbone."""
    code = main(["compare", "--backbone", "dact", "--test.rollouts", "5",
                 "--out", str(tmp_path / "out"), *TINY])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert ("--test.rollouts is an option of the nds backbone; the dact backbone has no "
            "such option") in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_compare_writes_csv_markdown_and_plot(compared):
    with open(compared / "table.csv") as f:
        table = list(csv.DictReader(f))
    assert [r["method"] for r in table] == ["PyVRP (HGS)", "Random moves", "NoPE", "SPD",
                                            "IPE + XPE"]
    md = (compared / "table.md").read_text()
    assert "| Ours | IPE + XPE |" in md and "paper" not in md.split("\n")[2]
    assert (compared / "gap_vs_time.png").stat().st_size > 1000
    with open(compared / "curves.csv") as f:
        assert {r["method"] for r in csv.DictReader(f)} == {"NoPE", "SPD", "IPE + XPE"}


def test_parse_encodings_and_bad_options(capsys):
    assert parse_encodings("all") == list(encodings.available())
    assert len(parse_encodings("all")) == 14
    assert parse_encodings("IPEXPE, none,ipexpe") == ["ipexpe", "none"]
    code = main(["compare", "--pe", "ipexpe,fourier", *TINY])
    err = capsys.readouterr().err
    assert code == 2 and "unknown encoding 'fourier'" in err and "cycleformer" in err
    assert main(["compare", "--pe", "none", "--budget-minutes", "0", *TINY]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "argument --budget_minutes: must be a finite number > 0, got '0'" in err


def test_markdown_prints_the_paper_columns_for_a_paper_setting():
    result = {"setting": "CVRP-100", "instances": 2, "steps": 3, "init": "random",
              "augment": 1, "budget_minutes": None, "max_epochs": 1, "paper_setting": True,
              "rows": [{"encoding": "ipexpe", "method": "IPE + XPE", "family": "Ours",
                        "objective": 15.9, "gap_percent": 2.0, "train_seconds": 60.0,
                        "epochs": 1, "paper_objective": 15.76, "paper_gap_percent": 1.16}]}
    md = render_markdown(result)
    assert "paper Obj." in md
    assert "| Ours | IPE + XPE | 15.900 | 2.00% | 1.0 | 1 | 15.76 | 1.16% |" in md


def test_markdown_caption_names_non_default_model_options():
    base = {"setting": "CVRP-20", "instances": 2, "steps": 3, "init": "random", "augment": 1,
            "budget_minutes": None, "max_epochs": 1, "rows": []}
    assert "IPE frequencies" not in render_markdown(base)
    assert "PE init" not in render_markdown({**base, "pe_init": "zero",
                                             "ipe_frequencies": "harmonic"})
    assert "message passing" not in render_markdown({**base, "local_mp": "directed"})
    assert "checkpoints" not in render_markdown({**base, "select": "last"})
    assert render_markdown({**base, "local_mp": "undirected"}).splitlines()[0].endswith(
        "≤ 1 epochs, undirected route-graph message passing")
    assert "direction" not in render_markdown({**base, "ipe_direction": "auto"})
    caption = render_markdown({**base, "pe_init": "default", "ipe_frequencies": "geometric",
                               "ipe_direction": "aware", "local_mp": "none"})
    assert caption.splitlines()[0].endswith(
        "≤ 1 epochs, PE init default, IPE frequencies geometric, IPE direction-aware, "
        "plain Transformer (no route-graph message passing)")
    ablation = render_markdown({**base, "ipe_phase": "index", "xpe_aggregation": "median"})
    assert ablation.splitlines()[0].endswith(
        "≤ 1 epochs, index-based IPE phase, per-route XPE (median)")
    assert "per-route" not in render_markdown({**base, "ipe_phase": "distance",
                                               "xpe_aggregation": "node"})
    scaled = render_markdown({**base, "pe_init": 0.25, "local_mp": "directed"})
    assert scaled.splitlines()[0].endswith("≤ 1 epochs, PE init 0.25")


def _compare_without_reference(tmp_path: Path, problem: str, *options: str
                               ) -> tuple[Path, dict]:
    """Run a tiny ``compare`` with no PyVRP reference and no random-move row; its
    output folder and ``result.json``."""
    argv = ["compare", "--problem", problem, *TINY, *options, "--reference.solver", "none",
            "--no-random", "--root", str(tmp_path / "data"), "--out", str(tmp_path)]
    assert main(argv) == 0
    out = tmp_path / f"compare_dact_{problem}8"
    return out, json.loads((out / "result.json").read_text())


@pytest.mark.slow
def test_compare_on_vrptw_starts_from_nearest_neighbour_solutions(tmp_path):
    _, res = _compare_without_reference(tmp_path, "vrptw", "--pe", "xpe", "--train.epochs", "1")
    assert res["init"] == "nearest_neighbor"
    (row,) = res["rows"]
    assert row["encoding"] == "xpe" and row["objective"] <= row["initial_objective"] + 1e-9


@pytest.mark.slow
def test_compare_over_several_seeds_reports_mean_and_spread(tmp_path):
    out, res = _compare_without_reference(tmp_path, "tsp", "--pe", "none",
                                          "--train.epochs", "1", "--seeds", "3,4")
    (row,) = res["rows"]
    runs = row["runs"]
    assert [r["seed"] for r in runs] == [3, 4] and res["seeds"] == [3, 4]
    objectives = torch.tensor([r["objective"] for r in runs], dtype=torch.float64)
    assert row["objective"] == pytest.approx(float(objectives.mean()))
    assert row["objective_std"] == pytest.approx(float(objectives.std()))
    assert len({r["checkpoint"] for r in runs}) == 2
    assert all(Path(r["checkpoint"]).exists() for r in runs)
    assert {p["seed"] for p in res["curves"]["NoPE"]} == {3, 4}
    assert " ± " in (out / "table.md").read_text()


def test_training_seeds_option():
    import argparse

    from pyg_routing.commands.grammar import training_seeds

    assert training_seeds("0, 1,2") == [0, 1, 2]
    with pytest.raises(argparse.ArgumentTypeError, match="distinct"):
        training_seeds("1,1")
    with pytest.raises(argparse.ArgumentTypeError, match="integers"):
        training_seeds("a,b")


@pytest.mark.slow
def test_select_best_tests_the_checkpoint_of_the_lowest_validation_cost(tmp_path):
    """Training keeps checkpoints/best.ckpt (lowest val/cost over the epochs) beside
    last.ckpt; ``--select best`` tests each run with it and says so in the caption."""
    out, res = _compare_without_reference(tmp_path, "tsp", "--pe", "none",
                                          "--train.epochs", "3", "--select", "best")
    (row,) = res["rows"]
    (run,) = row["runs"]
    assert res["select"] == "best" and Path(run["checkpoint"]).name == "best.ckpt"
    assert (out / "none" / "checkpoints" / "last.ckpt").exists()
    with open(next((out / "none" / "logs").glob("version_*/metrics.csv"))) as f:
        val = [float(r["val/cost"]) for r in csv.DictReader(f) if r["val/cost"]]
    assert len(val) == 3 and run["best_val_cost"] == pytest.approx(min(val))
    saved = torch.load(run["checkpoint"], map_location="cpu", weights_only=False)
    assert saved["epoch"] == val.index(min(val))
    assert "best-validation checkpoints" in (out / "table.md").read_text().splitlines()[0]


def test_compare_refuses_a_test_search_option_before_training(tmp_path, capsys):
    """Issue 27: every option, test-time ones included, is checked before the first
    training run: nothing is trained, nothing is written."""
    from pyg_routing.cli import main as cli

    code = cli(["compare", "--backbone", "nds", "--config", "smoke/nds", "--problem", "cvrp",
                "--num-customers", "20", "--train.remove", "3", "--pe", "none",
                "--test.instances", "2", "--test.steps", "2", "--no-progress",
                "--reference.solver", "none", "--test.rollouts", "2000",
                "--out", str(tmp_path)])
    assert code == 2
    assert "--test.rollouts 2000: a trained NDS policy samples at most 1024" in \
        capsys.readouterr().err
    assert not any(tmp_path.iterdir())
