"""Files from elsewhere are data, not code (issue 28, class 9): checkpoints, resume
files and dataset caches are read with ``torch.load(weights_only=True)``; a file that
needs any other type is refused, naming the file and the type, and nothing in it
runs. ``trust=True`` (``--trust_checkpoint``) loads it the old way, code and all."""

import json
import os
import pickle
import re
from pathlib import Path

import pytest
import torch

from pyg_routing.cli import main
from pyg_routing.data.dataset import RoutingDataset
from pyg_routing.data.files import read_torch
from pyg_routing.errors import CorruptFileError, UntrustedFileError
from pyg_routing.training import DACTLightning, backbones, load_policy
from tests.helpers import TINY, tiny_argv


class WriteOnLoad:
    """Unpickling this runs ``open(path, "w")``: proof that code from the file ran."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _refused(path: Path) -> str:
    """The start of the refusal of ``path`` (which needs ``io.open``, Python's ``open``)."""
    return rf"checkpoint {re.escape(str(path))} needs io\.open \(a class or function\)"


@pytest.fixture
def model_checkpoint(tmp_path):
    """A tiny DACT checkpoint as ``read_checkpoint`` wants it (hyper-parameters and
    weights), and a copy that also holds a :class:`WriteOnLoad`; and its target."""
    torch.manual_seed(0)
    model = DACTLightning(problem="cvrp", pe="ipexpe", **TINY)
    ckpt = {"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams)}
    good, evil, target = tmp_path / "good.ckpt", tmp_path / "evil.ckpt", tmp_path / "pwned"
    torch.save(ckpt, good)
    torch.save({**ckpt, "extra": WriteOnLoad(target)}, evil)
    assert not target.exists()
    return good, evil, target


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


# ----------------------------------------------------------------- Python API
def test_read_torch_refuses_a_file_that_runs_code(tmp_path):
    path, target = tmp_path / "x.pt", tmp_path / "pwned"
    torch.save([WriteOnLoad(target)], path)
    with pytest.raises(UntrustedFileError, match=rf"^dataset cache {re.escape(str(path))} needs "
                                                 rf"io\.open .*pass trust=True only if"):
        read_torch(path, "dataset cache")
    assert not target.exists()
    assert issubclass(UntrustedFileError, CorruptFileError)
    loaded = read_torch(path, "dataset cache", trust=True)
    assert target.exists()                  # the opt-in loads it the old way: code ran
    loaded[0].close()


def test_read_checkpoint_and_load_policy_refuse_it_unless_trusted(model_checkpoint):
    good, evil, target = model_checkpoint
    for load in (backbones.read_checkpoint, load_policy):
        with pytest.raises(UntrustedFileError, match=_refused(evil)) as info:
            load(evil)
        assert re.search(r"trust=True \(command line: --trust_checkpoint\)", str(info.value))
        assert "\n" not in str(info.value)
        assert not target.exists()          # refused before anything ran
    # our own checkpoints load as data, exactly as before
    expected = load_policy(good, trust=True).state_dict()
    policy = load_policy(good)
    assert all(torch.equal(policy.state_dict()[k], v) for k, v in expected.items())
    ckpt = backbones.read_checkpoint(evil, trust=True)
    assert target.exists()
    ckpt["extra"].close()
    os.remove(target)
    load_policy(evil, trust=True)
    assert target.exists()


def test_a_garbage_checkpoint_is_still_a_corrupt_file(tmp_path):
    path = tmp_path / "x.ckpt"
    path.write_bytes(b"\x00\xff" * 100)
    with pytest.raises(CorruptFileError, match=rf"^checkpoint {re.escape(str(path))} is not a "
                                               rf"readable PyTorch file \(UnpicklingError: "
                                               rf"Unsupported operand"):
        backbones.read_checkpoint(path)


# ----------------------------------------------------------------- dataset caches
ARGS = dict(problem="cvrp", num_customers=5, num_instances=3, seed=0,
            solver="nearest_neighbor", progress=False)


def test_a_dataset_cache_that_runs_code_is_not_loaded_but_rebuilt(tmp_path):
    root, target = str(tmp_path / "cache"), tmp_path / "pwned"
    first = RoutingDataset(root, **ARGS)
    torch.save([WriteOnLoad(target)], first.processed_paths[0])
    with pytest.warns(UserWarning, match=rf"{re.escape(first.processed_paths[0])} needs "
                                         rf"io\.open") as record:
        again = RoutingDataset(root, **ARGS)
    assert not target.exists()
    assert "trust=True" not in str(record[0].message)     # a cache is rebuilt, not trusted
    assert len(again) == len(first) and again.meta["summary"] == first.meta["summary"]


def test_a_pyg_bookkeeping_file_that_runs_code_is_removed_before_pyg_reads_it(tmp_path):
    """PyG reads ``pre_transform.pt`` with ``weights_only=False``; ours is read first,
    as data, and removed when it is not."""
    first = RoutingDataset(str(tmp_path), **ARGS)
    target = tmp_path / "pwned"
    bookkeeping = os.path.join(first.processed_dir, "pre_transform.pt")
    torch.save(WriteOnLoad(target), bookkeeping)
    with pytest.warns(UserWarning, match=rf"removing {re.escape(bookkeeping)}: .*needs io\.open"):
        RoutingDataset(str(tmp_path), **ARGS)
    assert not target.exists()


# ----------------------------------------------------------------- command line
@pytest.mark.parametrize("command, option", [("train", "--resume"),
                                             ("evaluate", "--checkpoint"),
                                             ("search", "--checkpoint")])
def test_every_command_that_reads_a_checkpoint_offers_the_unsafe_opt_in(command, option,
                                                                       capsys):
    assert main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"--trust_checkpoint UNSAFE: read {option} with full unpickling, which runs " \
           "code from the file" in text


def test_evaluate_and_search_refuse_it_with_one_line_naming_the_file(model_checkpoint, tmp_path,
                                                                      capsys):
    _, evil, target = model_checkpoint
    code, _, err = run(capsys, "evaluate", "--checkpoint", evil, "--reference.solver", "none",
                       "--test.instances", "2", "--test.steps", "1", "--out", tmp_path / "e")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert re.match(rf"pyg-routing evaluate: error: {_refused(evil)}", err)
    code, _, err = run(capsys, "search", "--destroy", "policy", "--checkpoint", evil,
                       "--test.instances", "1", "--num-customers", "8", "--out", tmp_path / "s")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert re.match(rf"pyg-routing search: error: {_refused(evil)}", err)
    assert not target.exists()


def test_evaluate_with_trust_checkpoint_loads_it_the_old_way(model_checkpoint, tmp_path, capsys):
    _, evil, target = model_checkpoint
    code, out, err = run(capsys, "evaluate", "--checkpoint", evil, "--trust-checkpoint",
                         "--reference.solver", "none", "--test.instances", "2",
                         "--test.steps", "1", "--test.augment", "1", "--accelerator", "cpu",
                         "--no-progress", "--out", tmp_path / "e", "--json")
    assert code == 0, err
    assert target.exists() and json.loads(out)["instances"] == 2


@pytest.mark.slow
def test_train_resume_reads_the_checkpoint_as_data(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    assert main(["train", "--problem", "cvrp", "--out", str(out), *tiny_argv(epochs=1)]) == 0
    (last,) = out.rglob("last.ckpt")
    # our own resume file loads as data: resuming it runs as before
    assert main(["train", "--problem", "cvrp", "--out", str(tmp_path / "ok"), "--resume",
                 str(last), *tiny_argv(epochs=2)]) == 0
    capsys.readouterr()
    target = tmp_path / "pwned"
    evil = tmp_path / "evil.ckpt"
    torch.save({**torch.load(last, weights_only=True), "extra": WriteOnLoad(target)}, evil)
    resume = ["train", "--problem", "cvrp", "--out", tmp_path / "r", "--resume", evil,
              *tiny_argv(epochs=2)]
    code, _, err = run(capsys, *resume)
    assert code == 2 and re.match(rf"pyg-routing train: error: {_refused(evil)}", err)
    assert len(err.strip().splitlines()) == 1 and not target.exists()
    # Lightning's own load of the resume file follows the same rule (our read is skipped:
    # it hands over the good file's content, whose architecture matches this run's recipe)
    read = backbones.read_checkpoint
    monkeypatch.setattr(backbones, "read_checkpoint", lambda *a, **k: read(last))
    with pytest.raises(pickle.UnpicklingError, match="io.open"):
        main([str(a) for a in resume])
    assert not target.exists()
    monkeypatch.undo()
    code, _, err = run(capsys, *resume, "--trust-checkpoint")
    assert code == 0, err
    assert target.exists()
