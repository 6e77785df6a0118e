"""Explicit (asymmetric) costs and open routes through the training commands: the
configuration, train/compare (training, validation and test data, references) and
search/evaluate on generated instances."""

import json

import pytest

from pyg_routing.cli import main
from pyg_routing.training.dact import DACTConfig
from pyg_routing.training.nds import NDSConfig
from tests.helpers import tiny_argv


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_config_data_options_name_only_what_differs_from_the_paper():
    assert DACTConfig().data_options() == {}
    cfg = DACTConfig(costs="streets", grid=6, open_routes=True)
    assert cfg.data_options() == {"costs": "streets", "grid": 6, "one_way": 1.0,
                                  "open_routes": True}
    assert NDSConfig(problem="cvrp", num_customers=20, costs="streets",
                     preset="paper").data_options()["preset"] == "paper"
    with pytest.raises(ValueError, match="--open-routes applies to cvrp and vrptw, not tsp"):
        DACTConfig(problem="tsp", open_routes=True)
    with pytest.raises(Exception, match="grid and one_way apply to costs='streets' only"):
        DACTConfig(grid=5)
    for pe in ("lap", "rwse", "spd"):             # the open route graph (paths)
        assert DACTConfig(pe=pe, open_routes=True).open_routes


def test_compare_trains_graph_encodings_on_the_open_route_graph(tmp_path, capsys):
    code, out, err = run(capsys, "compare", "--problem", "cvrp", "--pe", "spd,rwse",
                         "--open-routes", "--reference", "none", "--epochs", "1",
                         "--root", str(tmp_path),
                         "--out", str(tmp_path), *tiny_argv(instances=2, steps=2))
    assert code == 0, err
    rows = {r["method"]: r for r in json.loads(out)["rows"]}
    assert {"SPD", "RWSE"} <= set(rows)
    assert all(r["objective"] > 0 for r in rows.values())


@pytest.mark.slow
def test_compare_trains_and_tests_on_street_matrices_with_open_routes(tmp_path, capsys):
    argv = ["compare", "--problem", "cvrp", "--pe", "ipexpe", "--epochs", "1",
            "--costs", "streets", "--grid", "5", "--open-routes", "--time-limit", "0.1",
            "--root", str(tmp_path / "data"), "--out", str(tmp_path),
            *tiny_argv(instances=4, steps=6)]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    res = json.loads(out)
    assert res["data_options"] == {"costs": "streets", "grid": 5, "one_way": 1.0,
                                   "open_routes": True}
    rows = {r["method"]: r for r in res["rows"]}
    assert "IPE + XPE" in rows
    # the reference was solved on the same street matrices with open routes: six
    # 2-opt steps from nearest neighbour do not reach PyVRP's routes
    assert all(r["gap_percent"] > 0 for r in res["rows"] if "gap_percent" in r)
    assert any("gap_percent" in r for r in res["rows"])


def test_search_records_the_cost_model_and_refuses_it_with_a_benchmark(tmp_path, capsys):
    code, out, err = run(capsys, "search", "--problem", "cvrp", "--num-customers", "10",
                         "--instances", "2", "--costs", "streets", "--grid", "4",
                         "--destroy", "sisr", "--iterations", "5", "--time-limit", "5",
                         "--root", str(tmp_path), "--out", str(tmp_path), "--json",
                         "--no-progress")
    assert code == 0, err
    assert json.loads(out)["data_options"] == {"costs": "streets", "grid": 4}
    code, _, err = run(capsys, "search", "--benchmark", "x", "--costs", "streets",
                       "--iterations", "1")
    assert code == 2 and "--costs streets does not apply with --benchmark x" in err
    code, _, err = run(capsys, "search", "--problem", "cvrp", "--num-customers", "100",
                       "--preset", "nds", "--costs", "streets", "--iterations", "1",
                       "--root", str(tmp_path), "--out", str(tmp_path))
    assert code == 2 and "of preset 'nds' has no generator option 'costs'" in err


def test_train_open_routes_is_a_switch(tmp_path, capsys):
    code, _, err = run(capsys, "train", "--problem", "tsp", "--open-routes",
                       "--out", str(tmp_path), *tiny_argv(epochs=1))
    assert code == 2 and "--open-routes applies to cvrp and vrptw, not tsp" in err
