"""The command line over the backbone registry: options of other backbones are refused
in one line, and ``--json`` keeps stdout to the JSON alone."""

from __future__ import annotations

import json

import pytest

from pyg_routing.cli import main
from pyg_routing.data.benchmarks import data_roots


@pytest.mark.parametrize("argv, flag, owners, backbone", [
    (["train", "--backbone", "dact", "--rollouts", "5"], "--rollouts", "the nds backbone",
     "dact"),
    (["train", "--backbone", "nds", "--n-step", "5"], "--n-step", "the dact and n2s backbones",
     "nds"),
    (["train", "--backbone", "n2s", "--recreate", "3"], "--recreate", "the nds backbone",
     "n2s"),
    (["compare", "--backbone", "dact", "--search-rollouts", "5"], "--search-rollouts",
     "the nds backbone", "dact"),
    (["compare", "--backbone", "n2s", "--warmup-steps", "2"], "--warmup-steps",
     "the nds backbone", "n2s"),
])
def test_an_option_of_another_backbone_is_refused_in_one_line(argv, flag, owners, backbone,
                                                               tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{flag} is an option of {owners}; the {backbone} backbone has no such option" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()                 # refused before any training


def test_an_option_of_the_chosen_backbone_is_taken(tmp_path, capsys):
    import argparse

    from pyg_routing.training import backbones
    from pyg_routing.training.fit import add_training_options
    p = argparse.ArgumentParser()
    add_training_options(p)
    args = p.parse_args(["--rollouts", "7", "--batch-size", "3"])
    config = backbones.get("nds").config_class.from_options(args, num_customers=20)
    assert config.rollouts == 7 and config.batch_size == 3
    with pytest.raises(ValueError, match="--rollouts is an option of the nds backbone"):
        backbones.get("dact").config_class.from_options(args)


def test_json_stdout_holds_the_json_alone_with_progress_bars_on(tmp_path, capsys):
    # no --no-progress: Lightning's progress bar runs, and must not reach stdout
    code = main(["search", "--problem", "cvrp", "--num-customers", "20", "--instances", "2",
                 "--destroy", "random", "--iterations", "1", "--augment", "2",
                 "--rollouts", "4", "--out", str(tmp_path), "--json"])
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
                 "--instances", "2", "--steps", "2", "--augment", "2", "--rollouts", "4",
                 "--reference", "none", "--no-progress", "--out", str(tmp_path), "--json"])
    res = json.loads(capsys.readouterr().out)
    assert code == 0 and res["backbone"] == "nds" and len(res["rows"]) == 2
    assert all(r["iterations"] == 2 and r["objective"] <= r["start_objective"] + 1e-6
               for r in res["rows"])
    code = main(["evaluate", "--policy", "sisr", "--reference", "none"])   # dact: none
    assert code == 2 and "--policy sisr is not a baseline of the dact backbone" in \
        capsys.readouterr().err
    code = main(["evaluate", "--policy", "random", "--benchmark", "x", "--problem", "cvrp"])
    assert code == 2 and "--problem, --num-customers and --exact do not apply" in \
        capsys.readouterr().err
