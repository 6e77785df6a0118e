"""The command line over the backbone registry: options of other backbones are refused
in one line, and ``--json`` keeps stdout to the JSON alone."""

from __future__ import annotations

import json

import pytest

from pyg_routing.cli import main
from pyg_routing.data.benchmarks import data_roots


@pytest.mark.parametrize("argv, flag, owners, backbone", [
    (["train", "--backbone", "dact", "--train.rollouts", "5"], "--train.rollouts",
     "the nds backbone", "dact"),
    (["train", "--backbone", "nds", "--train.n-step", "5"], "--train.n_step",
     "the dact and n2s backbones", "nds"),
    (["train", "--backbone", "n2s", "--train.recreate", "3"], "--train.recreate",
     "the nds backbone", "n2s"),
    (["compare", "--backbone", "dact", "--test.rollouts", "5"], "--test.rollouts",
     "the nds backbone", "dact"),
    (["compare", "--backbone", "n2s", "--train.warmup-steps", "2"], "--train.warmup_steps",
     "the nds backbone", "n2s"),
    (["evaluate", "--backbone", "n2s", "--policy", "random", "--test.exact", "true"],
     "--test.exact", "the nds backbone", "n2s"),
    (["train", "--backbone", "nds", "--model.depot-rate", "0.5"], "--model.depot_rate",
     "the dact backbone", "nds"),
])
def test_an_option_of_another_backbone_is_refused_in_one_line(argv, flag, owners, backbone,
                                                               tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{flag} is an option of {owners}; the {backbone} backbone has no such option" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()                 # refused before any training


def test_an_option_of_the_chosen_backbone_is_taken(tmp_path, capsys):
    from pyg_routing.commands.grammar import normalize
    from pyg_routing.commands.train import parse

    config = parse(normalize(["--backbone", "nds", "--train.rollouts", "7",
                              "--train.batch_size", "3", "--num_customers", "20"])).config
    assert config.train.rollouts == 7 and config.train.batch_size == 3
    # the recipe of a backbone names it: --backbone may be left out
    config = parse(normalize(["--config", "nds/cvrp100", "--train.rollouts", "7"])).config
    assert config.backbone == "nds" and config.train.rollouts == 7
    with pytest.raises(ValueError, match="--backbone dact conflicts with --config"):
        parse(normalize(["--backbone", "dact", "--config", "nds/cvrp100"]))


def test_json_stdout_holds_the_json_alone_with_progress_bars_on(tmp_path, capsys):
    # no --no-progress: Lightning's progress bar runs, and must not reach stdout
    code = main(["search", "--problem", "cvrp", "--num-customers", "20", "--test.instances",
                 "2", "--destroy", "random", "--test.steps", "1", "--test.augment", "2",
                 "--test.rollouts", "4", "--out", str(tmp_path), "--json"])
    out = capsys.readouterr().out
    assert code == 0
    assert len(json.loads(out)["rows"]) == 2


def test_the_package_reads_no_development_workspace(tmp_path, monkeypatch):
    monkeypatch.delenv("PYG_ROUTING_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    roots = data_roots()
    assert len(roots) == 1 and roots[0].name == "bundled"
    assert data_roots(tmp_path)[0] == tmp_path


def test_evaluate_runs_every_backbones_baselines(tmp_path, capsys):
    code = main(["evaluate", "--backbone", "nds", "--policy", "sisr", "--num-customers", "12",
                 "--data.preset", "paper", "--test.instances", "2", "--test.steps", "2",
                 "--test.augment", "2", "--test.rollouts", "4", "--reference.solver", "none",
                 "--no-progress", "--out", str(tmp_path), "--json"])
    res = json.loads(capsys.readouterr().out)
    assert code == 0 and res["backbone"] == "nds" and len(res["rows"]) == 2
    assert all(r["iterations"] == 2 and r["objective"] <= r["start_objective"] + 1e-6
               for r in res["rows"])
    code = main(["evaluate", "--policy", "sisr", "--reference.solver", "none"])  # dact: none
    assert code == 2 and "--policy sisr is not a baseline of the dact backbone" in \
        capsys.readouterr().err
    code = main(["evaluate", "--policy", "random", "--benchmark", "x", "--problem", "cvrp"])
    assert code == 2 and "--problem cvrp does not apply with --benchmark x" in \
        capsys.readouterr().err
