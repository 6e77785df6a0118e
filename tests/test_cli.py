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


#: every command's help, each backbone's where the options depend on it
HELPS = [["generate"], ["solve"], ["info"], ["probe"], ["probe", "anisometry"],
         ["probe", "entropy"], ["probe", "spearman"], ["train"], ["train", "--backbone", "n2s"],
         ["train", "--backbone", "nds"], ["evaluate"], ["evaluate", "--backbone", "nds"],
         ["compare"], ["compare", "--backbone", "n2s"], ["search"], ["reproduce"],
         ["import-checkpoint"], ["recipes"]]


def test_every_help_imports_no_torch_pyg_lightning_or_numpy():
    """``pyg-routing CMD --help`` reads the options from torch-free modules (so it
    takes well under a second, not the ~7 s of importing torch and Lightning)."""
    import subprocess
    import sys

    code = f"""
import contextlib, io, sys
from pyg_routing.cli import main
heavy = ("torch", "torch_geometric", "lightning", "numpy", "scipy", "numba")
for argv in {HELPS!r}:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main([*argv, "--help"]) == 0, argv
    loaded = [m for m in heavy if m in sys.modules]
    assert not loaded, f"{{' '.join(argv)}} --help imported {{loaded}}"
    assert "<function" not in out.getvalue(), f"{{' '.join(argv)}}: a function's repr"
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]


def test_the_backbone_registry_names_configurations_without_importing_them():
    from pyg_routing.training import backbones

    for name in backbones.names():
        lightning = backbones.get(name)
        assert backbones.config_class(name) is lightning.config_class
        assert backbones.config_class(name).backbone == name
        # the names evaluate --policy offers are the baselines the backbone builds
        assert backbones.config_class(name).BASELINES == tuple(lightning.baselines)
    with pytest.raises(ValueError, match="unknown backbone 'x'; choose from dact, n2s, nds"):
        backbones.config_class("x")


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


def test_lightnings_warnings_about_our_own_choices_are_off_in_quiet_runs(monkeypatch):
    """On a machine of many cores Lightning warns that our loaders have no workers, and
    on a GPU machine that a CPU run leaves the GPU unused: a quiet run shows neither
    (Lightning's own checks, made to fire here, with their current wording); a verbose
    one and other warnings are untouched."""
    import warnings

    import lightning as L
    from lightning.pytorch.accelerators import CUDAAccelerator
    from lightning.pytorch.trainer import setup
    from lightning.pytorch.trainer.connectors import data_connector
    from torch.utils.data import DataLoader

    from pyg_routing.training.fit import quiet_lightning

    trainer = L.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False)
    monkeypatch.setattr(data_connector, "suggested_max_num_workers", lambda devices: 8)
    monkeypatch.setattr(CUDAAccelerator, "is_available", staticmethod(lambda: True))

    def lightnings_checks():
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with quiet_lightning(quiet):
                data_connector._worker_check(trainer, DataLoader([1, 2]), "predict_dataloader")
                setup._log_device_info(trainer)
                warnings.warn("something the user should see", UserWarning, stacklevel=1)
        return [str(w.message) for w in seen]

    quiet = False
    loud = lightnings_checks()
    assert any("does not have many workers" in m for m in loud)
    assert any(m.startswith("GPU available but not used") for m in loud)
    quiet = True
    assert lightnings_checks() == ["something the user should see"]
    # the bare Trainer that checks a command's options first warns nothing either
    from pyg_routing.training.fit import check_trainer

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert check_trainer("cpu", 1) == 1
    assert [str(w.message) for w in seen] == []


def test_the_script_exits_with_mains_status_and_leaves_the_collector_alone_in_process(capsys):
    """``pyg-routing`` (``cli.run``) freezes the collector after the command, so the exit
    skips the final collection over torch's, PyG's and Lightning's objects; atexit
    handlers still run. ``main`` in a process that goes on freezes nothing."""
    import gc
    import subprocess
    import sys

    code = ("import atexit, gc, sys; "
            "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0)); "
            "sys.argv = ['pyg-routing', 'nonsense']; "
            "from pyg_routing.cli import run; sys.exit(run())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 2 and "unknown command 'nonsense'" in out.stderr
    assert out.stdout.strip() == "frozen True"
    frozen = gc.get_freeze_count()
    assert main(["nonsense"]) == 2 and gc.get_freeze_count() == frozen
    capsys.readouterr()
