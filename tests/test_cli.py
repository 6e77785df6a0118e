import json

import pytest

from pyg_routing.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("command", ["generate", "solve", "info", "train", "evaluate",
                                     "compare", "search", "reproduce", "recipes",
                                     "import-checkpoint"])
def test_every_command_has_help(command, capsys):
    assert main([command, "--help"]) == 0
    assert "--json" in capsys.readouterr().out


def test_the_root_help_lists_every_command_without_importing_torch():
    import subprocess
    import sys

    code = ("import sys; from pyg_routing.cli import main; main(['--help']); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for command in ("train", "evaluate", "compare", "search", "recipes"):
        assert f"  {command}" in out.stdout


def test_generate_solve_info_round_trip(tmp_path, capsys):
    root = str(tmp_path)
    code, out, _ = run(capsys, "generate", "--problem", "vrptw", "--num-customers", "8",
                       "--num-instances", "3", "--root", root, "--json")
    assert code == 0
    gen = json.loads(out)
    assert gen["params"]["problem"] == "vrptw" and gen["summary"]["num_instances"] == 3
    code, out, _ = run(capsys, "solve", "--problem", "vrptw", "--num-customers", "8",
                       "--num-instances", "3", "--root", root, "--solver", "pyvrp",
                       "--time-limit", "0.1", "--workers", "1", "--no-progress", "--json")
    assert code == 0
    solved = json.loads(out)
    assert solved["summary"]["feasible_fraction"] == 1.0
    assert solved["summary"]["mean_cost"] > 0
    code, out, _ = run(capsys, "info", root, "--json")
    info = json.loads(out)
    assert {d["params"]["solver"] for d in info["datasets"]} == {None, "pyvrp"}
    code, out, _ = run(capsys, "info", root)
    assert "mean_cost" in out


def test_errors_are_reported_not_raised(tmp_path, capsys):
    code, _, err = run(capsys, "info", str(tmp_path))
    assert code == 2 and "holds no dataset" in err
    code, _, err = run(capsys, "solve", "--num-customers", "5", "--num-instances", "1",
                       "--root", str(tmp_path), "--solver", "magic")
    assert code == 2 and "magic" in err


def test_probe_command_prints_ours_beside_the_paper(tmp_path, capsys):
    code, out, _ = run(capsys, "probe", "anisometry", "--problem", "cvrp", "--num-customers",
                       "20", "--instances", "6", "--solver", "nearest_neighbor", "--root",
                       str(tmp_path), "--no-progress", "--json")
    assert code == 0
    result = json.loads(out)
    assert result["ours"]["cv"] > 0
    code, out, _ = run(capsys, "probe", "anisometry", "--problem", "cvrp", "--num-customers",
                       "20", "--instances", "6", "--solver", "nearest_neighbor", "--root",
                       str(tmp_path), "--no-progress")
    assert "paper" in out and "0.81" in out


def test_generate_and_solve_asymmetric_open_instances(tmp_path, capsys):
    from pyg_routing.data import RoutingDataset, make_generator

    root = str(tmp_path)
    opts = ["--problem", "vrptw", "--num-customers", "6", "--num-instances", "2",
            "--data.costs", "streets", "--data.grid", "4", "--data.open-routes", "true",
            "--root", root]
    code, out, _ = run(capsys, "solve", *opts, "--solver", "pyvrp", "--time-limit", "0.1",
                       "--workers", "1", "--no-progress", "--json")
    assert code == 0 and json.loads(out)["summary"]["feasible_fraction"] == 1.0
    kwargs = dict(costs="streets", grid=4, open_routes=True)
    ds = RoutingDataset(root, "vrptw", 6, 2, seed=0, generator_kwargs=kwargs, solver="pyvrp",
                        time_limit=0.1, num_workers=1, progress=False)
    fresh = make_generator("vrptw", 6, seed=0, **kwargs).sample(2)
    assert ds[1].cost_matrix.equal(fresh[1].cost_matrix) and bool(ds[1].open_routes)


@pytest.mark.parametrize("argv, message", [
    (["--problem", "tsp", "--data.open-routes", "true"],
     "problem 'tsp' has no generator option 'open_routes'"),
    (["--data.grid", "4"], "--data.grid 4 applies to --data.costs streets only"),
    (["--data.preset", "nds", "--data.costs", "streets"],
     "of preset 'nds' has no generator option 'costs'"),
])
def test_cost_options_that_do_not_apply_are_refused(argv, message, tmp_path, capsys):
    code, out, err = run(capsys, "generate", "--num-instances", "1", "--root", str(tmp_path),
                         *argv)
    assert code == 2 and message in err and out == ""
