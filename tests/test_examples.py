import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_data_quickstart_runs_and_prints_the_documented_values(tmp_path, capsys):
    module = runpy.run_path(str(EXAMPLES / "data_quickstart.py"))
    module["main"](str(tmp_path))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[51, 52, 53, 54, 55]"
    assert lines[4] == "False"
    assert lines[-1] == "27591.0"


def test_search_my_instance_reports_the_files_own_cost(capsys):
    """On an asymmetric EXPLICIT file: the printed cost is the matrix's sum over the routes
    (in the file's units), and the gap is to the .sol beside it."""
    from pyg_routing.data import RoutingData, load_instance

    path = Path(__file__).resolve().parent / "data" / "explicit" / "asym6-full.vrp"
    module = runpy.run_path(str(EXAMPLES / "search_my_instance.py"))
    out = module["main"](str(path), iterations=30)
    data = load_instance(path)
    assert out["cost"] == float(RoutingData.from_routes(data, out["routes"]).cost())
    assert out["cost"] == pytest.approx(out["search_cost"] * out["scale"], rel=1e-6)
    assert out["bks"] == 51.0 and out["gap_percent"] == pytest.approx(
        100 * (out["cost"] / 51.0 - 1))
    assert f"cost {out['cost']:g} in the file's units" in capsys.readouterr().out


@pytest.mark.slow
def test_pyg_pipeline_example_trains(tmp_path, capsys):
    module = runpy.run_path(str(EXAMPLES / "pyg_pipeline.py"))
    losses = module["main"](str(tmp_path), steps=12)
    assert len(losses) == 12
    assert sum(losses[-3:]) < sum(losses[:3])          # the loss goes down


@pytest.mark.slow
def test_train_dact_cvrp_example_trains_and_evaluates(tmp_path, capsys):
    module = runpy.run_path(str(EXAMPLES / "train_dact_cvrp.py"))
    res = module["main"](str(tmp_path), epochs=1, num_customers=8, batch_size=4, t_train=4,
                         batches_per_epoch=2, test_instances=4, steps=10, dim=16,
                         num_layers=1, progress=False)
    assert res["DACT + IPE+XPE"] <= res["initial"] + 1e-9
    assert res["random moves"] <= res["initial"] + 1e-9
    assert res["PyVRP"] <= min(res["DACT + IPE+XPE"], res["random moves"]) + 1e-6
    assert list(tmp_path.rglob("*.ckpt"))
    assert "gap" in capsys.readouterr().out
