"""Runs stop when told: ``--max_minutes`` bounds the whole run (validation included)
and is honoured inside a long batch; SIGTERM stops within one n-step chunk with a
resumable checkpoint and a non-zero exit status (as does ``reproduce``)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyg_routing.cli import main

#: a DACT run whose one batch takes far longer than the tests wait (400 n-step chunks)
LONG = ["train", "--config", "smoke/dact", "--num_customers", "8", "--train.t_train", "800",
        "--train.epochs", "3", "--trainer.accelerator", "cpu", "--no_progress", "--json"]


@pytest.mark.slow
def test_max_minutes_stops_inside_a_long_batch(tmp_path, capsys):
    start = time.perf_counter()
    assert main([*LONG, "--max_minutes", "0.1", "--out", str(tmp_path)]) == 0
    elapsed = time.perf_counter() - start
    result = json.loads(capsys.readouterr().out)
    assert result["stopped_by"] == "max_minutes"
    # one batch would run 400 chunks x 3 PPO updates; the budget ended it at a chunk
    assert 6 <= result["seconds"] < 6 + 30 and elapsed < 90
    assert result["global_step"] < 400 * 3
    assert Path(result["checkpoint"]).is_file()


@pytest.mark.slow
def test_sigterm_stops_within_a_chunk_with_a_resumable_checkpoint(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "pyg_routing.cli", *LONG,
                             "--out", str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    ckpts = tmp_path / "dact_cvrp8_dact_cpe" / "checkpoints"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not list(tmp_path.rglob("hparams.yaml")) \
            and proc.poll() is None:
        time.sleep(0.5)                              # wait until the fit has started
    time.sleep(3)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert time.monotonic() - sent < 60                # within a chunk, not a 400-chunk batch
    lines = [line for line in err.splitlines() if line.startswith("pyg-routing train")]
    assert len(lines) == 1 and "stopped by SIGTERM" in lines[0], err
    assert f"--resume {ckpts / 'last.ckpt'}" in lines[0]
    assert out == ""                                   # no JSON: the run did not finish
    resumed = subprocess.run([sys.executable, "-m", "pyg_routing.cli", *LONG,
                              "--train.t_train", "4", "--train.epochs", "1", "--out",
                              str(tmp_path), "--resume", str(ckpts / "last.ckpt")],
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["epochs"] == 1


def test_a_reproduce_run_told_to_stop_exits_non_zero(tmp_path, capsys, monkeypatch):
    from pyg_routing.commands.reproduce import cells
    from pyg_routing.errors import RunInterrupted

    def interrupted(*args, **kwargs):
        raise RunInterrupted("stopped by SIGTERM after 3 optimizer steps (epoch 0); resume "
                             "with --resume x.ckpt")

    monkeypatch.setattr(cells, "run_cell", interrupted)
    assert main(["reproduce", "tab8", "--scale", "smoke", "--out", str(tmp_path)]) == 143
    err = capsys.readouterr().err
    assert err.startswith("pyg-routing reproduce: stopped by SIGTERM") and err.count("\n") == 1
    assert not list(tmp_path.rglob("*.json"))          # no cell recorded as finished


@pytest.mark.slow
def test_a_resume_gives_no_scheduler_warning_from_our_code(tmp_path, capsys):
    import warnings

    base = ["train", "--config", "smoke/dact", "--num_customers", "8",
            "--trainer.accelerator", "cpu", "--no_progress", "--json", "--out", str(tmp_path)]
    assert main([*base, "--train.epochs", "1"]) == 0
    ckpt = json.loads(capsys.readouterr().out)["checkpoint"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main([*base, "--train.epochs", "2", "--resume", ckpt]) == 0
    assert not [w for w in caught if "lr_scheduler.step()" in str(w.message)]
    assert json.loads(capsys.readouterr().out)["epochs"] == 2
