"""``--data.depots K`` on the command line: the datasets and probes take several depots;
DACT and NDS search several; N2S (pickup and delivery, one depot) refuses them in one
line before anything is written."""

from __future__ import annotations

import json

import pytest

from pyg_routing.cli import main


@pytest.mark.parametrize("command", ["train", "compare", "evaluate"])
def test_backbone_commands_refuse_several_depots_in_one_line(command, capsys, tmp_path,
                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)
    status = main([command, "--backbone", "n2s", "--data.depots", "2"])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert "--data.depots 2: the n2s backbone searches instances with one depot" in err
    assert not any(tmp_path.iterdir())


def test_several_depots_are_refused_on_problems_without_them(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status = main(["solve", "--problem", "vrptw", "--num_customers", "5", "--num_instances",
                   "1", "--data.depots", "2", "--time-limit", "0.1"])
    err = capsys.readouterr().err
    assert status == 2 and "several depots are a variant of cvrp, not 'vrptw'" in err, err


def test_probe_spearman_compares_the_reference_points_on_several_depots(capsys, tmp_path):
    status = main(["probe", "spearman", "--num_customers", "12", "--instances", "4",
                   "--seconds", "0.1", "--data.depots", "2", "--pairs", "2000", "--workers",
                   "1", "--root", str(tmp_path), "--no_progress", "--json"])
    assert status == 0
    out = json.loads(capsys.readouterr().out)
    ours = out["ours"]
    assert ours["Laplacian PE"]["D3"] is None               # refused: one spider per depot
    for ref in ("node 0", "route's depot", "route's depot + code"):
        assert ours[f"IPE + XPE ({ref})"]["D3"] is not None
    assert ours["IPE + XPE (node 0)"] == ours["IPE + XPE"]
    assert all(v is None for v in out["paper"].values())    # the paper probes one depot
