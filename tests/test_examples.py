import runpy
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_data_quickstart_runs_and_prints_the_documented_values(tmp_path, capsys):
    module = runpy.run_path(str(EXAMPLES / "data_quickstart.py"))
    module["main"](str(tmp_path))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[51, 52, 53, 54, 55]"
    assert lines[4] == "False"
    assert lines[-1] == "27591.0"


def test_pyg_pipeline_example_trains(tmp_path, capsys):
    module = runpy.run_path(str(EXAMPLES / "pyg_pipeline.py"))
    losses = module["main"](str(tmp_path), steps=12)
    assert len(losses) == 12
    assert sum(losses[-3:]) < sum(losses[:3])          # the loss goes down
