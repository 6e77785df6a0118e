"""Explicit (asymmetric) costs and open routes through the training commands: the
configuration, train/compare (training, validation and test data, references) and
search/evaluate on generated instances."""

import json

import pytest

from pyg_routing.cli import main
from pyg_routing.training.dact_config import DACTConfig
from pyg_routing.training.nds_config import NDSConfig
from tests.helpers import tiny_argv


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_config_data_options_name_only_what_differs_from_the_paper():
    assert DACTConfig().data.generator_options() == {}
    cfg = DACTConfig.create(costs="streets", grid=6, open_routes=True)
    assert cfg.data.generator_options() == {"costs": "streets", "grid": 6, "one_way": 1.0,
                                            "open_routes": True}
    # NDS's own family is named; the paper's is make_generator's default, so it is not
    assert NDSConfig().data.generator_options() == {"preset": "nds"}
    assert NDSConfig.create(problem="cvrp", num_customers=20, costs="streets",
                            preset="paper").data.generator_options() == \
        {"costs": "streets", "grid": 10, "one_way": 1.0}
    with pytest.raises(ValueError, match="--data.open_routes applies to cvrp and vrptw, not tsp"):
        DACTConfig.create(problem="tsp", open_routes=True)
    with pytest.raises(ValueError) as info:                # a streets option without streets
        DACTConfig.create(grid=5)
    assert "grid" in str(info.value) and "streets" in str(info.value)
    for pe in ("lap", "rwse", "spd"):             # the open route graph (paths)
        assert DACTConfig.create(pe=pe, open_routes=True).data.open_routes


def test_compare_trains_graph_encodings_on_the_open_route_graph(tmp_path, capsys):
    code, out, err = run(capsys, "compare", "--problem", "cvrp", "--pe", "spd,rwse",
                         "--data.open_routes", "true", "--reference.solver", "none",
                         "--root", str(tmp_path), "--out", str(tmp_path),
                         *tiny_argv(epochs=1, instances=2, steps=2))
    assert code == 0, err
    res = json.loads(out)
    assert res["data_options"] == {"open_routes": True}
    rows = {r["method"]: r for r in res["rows"]}
    assert {"SPD", "RWSE"} <= set(rows)
    assert all(r["objective"] > 0 for r in rows.values())


@pytest.mark.slow
def test_compare_trains_and_tests_on_street_matrices_with_open_routes(tmp_path, capsys):
    argv = ["compare", "--problem", "cvrp", "--pe", "ipexpe", "--data.costs", "streets",
            "--data.grid", "5", "--data.open_routes", "true", "--reference.seconds", "0.1",
            "--root", str(tmp_path / "data"), "--out", str(tmp_path),
            *tiny_argv(epochs=1, instances=4, steps=6)]
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
    # search generates NDS's family by default, which has no 10-customer capacity
    code, out, err = run(capsys, "search", "--problem", "cvrp", "--num-customers", "10",
                         "--data.preset", "paper", "--test.instances", "2",
                         "--data.costs", "streets", "--data.grid", "4", "--destroy", "sisr",
                         "--test.steps", "5", "--test.seconds", "5", "--root", str(tmp_path),
                         "--out", str(tmp_path), "--json", "--no-progress")
    assert code == 0, err
    # the family is recorded whole (grid and one_way of the street costs), not as typed
    assert json.loads(out)["data_options"] == {"costs": "streets", "grid": 4, "one_way": 1.0}
    code, _, err = run(capsys, "search", "--benchmark", "x", "--data.costs", "streets",
                       "--test.steps", "1")
    assert code == 2 and "--data.costs streets does not apply with --benchmark x" in err
    code, _, err = run(capsys, "search", "--problem", "cvrp", "--num-customers", "100",
                       "--data.preset", "nds", "--data.costs", "streets", "--test.steps", "1",
                       "--root", str(tmp_path), "--out", str(tmp_path))
    assert code == 2 and "of preset 'nds' has no generator option 'costs'" in err


def test_train_open_routes_is_a_switch(tmp_path, capsys):
    code, _, err = run(capsys, "train", "--problem", "tsp", "--data.open_routes", "true",
                       "--out", str(tmp_path / "run"), *tiny_argv(epochs=1))
    assert code == 2 and "--data.open_routes applies to cvrp and vrptw, not tsp" in err
    assert not (tmp_path / "run").exists()
