"""Importing original checkpoint FILES: NDS's real format (OmegaConf configs inside,
written here by OmegaConf itself as NDS's trainer does) without trust and without
OmegaConf at read time; foreign classes refused by name; malformed tensors named by file
and key; ``--out`` refused before anything is written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import torch

from pyg_routing.errors import CorruptFileError, UntrustedFileError
from pyg_routing.training import backbones
from pyg_routing.training.import_checkpoint import import_n2s, import_nds, import_original
from tests.helpers import run_cli
from tests.training.test_import_checkpoint import NDSOriginal, _nds_file, n2s_original_state

#: NDS's train config, abridged (its layout: configs/train/cvrp_*.yaml), for a CVRP-20
#: model of width 32 with 4 heads
NDS_CONFIG = """
env_params:
  problem: cvrp
  problem_size: 20
  num_nodes_to_remove: 5
  recreate_n: 3
  generator_params: {rootPos: 2, custPos: 2}
  starting_solution_params: {nb_iterations: 100, nb_nodes_ratio: 0.25}
model_params:
  problem: ${env_params.problem}
  embedding_dim: 32
  head_num: 4
  z_dim: 10
trainer_params:
  milestones: [8001, 8051]
  run_name: ${cached:train}
"""


def _write_nds_checkpoint(path, model) -> None:
    """``torch.save`` of what NDS's trainer saves (``_build_checkpoint``): the config
    nodes ``cfg.model_params`` / ``cfg.env_params`` of a struct-mode config whose
    resolver cache holds an entry (a ``collections.defaultdict``)."""
    omegaconf = pytest.importorskip("omegaconf", reason="OmegaConf is a test dependency: "
                                                        "pip install -e '.[test]'")
    OmegaConf = omegaconf.OmegaConf
    if not OmegaConf.has_resolver("cached"):
        OmegaConf.register_new_resolver("cached", lambda x: f"{x}-run", use_cache=True)
    cfg = OmegaConf.create(NDS_CONFIG)
    OmegaConf.set_struct(cfg, True)
    assert cfg.trainer_params.run_name == "train-run"            # fills the cache
    content = _nds_file(model) | {"model_params": cfg.model_params,
                                  "env_params": cfg.env_params, "wandb_run_id": None}
    torch.save(content, path)


def test_a_real_nds_checkpoint_imports_without_trust(tmp_path):
    torch.manual_seed(2)
    original = NDSOriginal()
    file = tmp_path / "checkpoint-7.pt"
    _write_nds_checkpoint(file, original)
    with zipfile.ZipFile(file) as z:             # OmegaConf's nodes and its resolver cache
        pickled = b"".join(z.read(n) for n in z.namelist() if n.endswith(".pkl"))
    assert b"omegaconf.dictconfig" in pickled and b"defaultdict" in pickled
    ckpt = import_original("nds", file)
    hp = ckpt["hyper_parameters"]
    # heads, size, removal size and repairs come from the OmegaConf configs
    assert (hp["model"]["heads"], hp["num_customers"], hp["train"]["remove"],
            hp["train"]["recreate"]) == (4, 20, 5, 3)
    model = backbones.get("nds")(**hp)
    model.load_state_dict(ckpt["state_dict"])
    assert torch.equal(model.policy.start_last_node, original.start_last_node.detach())


def test_reading_needs_no_omegaconf_and_runs_nothing_from_the_file(tmp_path):
    """In a fresh interpreter where ``import omegaconf`` fails, the file still reads:
    no OmegaConf code (the only code the file names) can have run."""
    file = tmp_path / "checkpoint-7.pt"
    _write_nds_checkpoint(file, NDSOriginal())
    script = textwrap.dedent(f"""
        import json, sys
        sys.modules["omegaconf"] = None          # any import of it now fails
        from pyg_routing.training.import_checkpoint import import_original
        hp = import_original("nds", {str(file)!r})["hyper_parameters"]
        print(json.dumps([hp["model"]["heads"], hp["num_customers"], "omegaconf" in sys.modules
                          and sys.modules["omegaconf"] is not None]))
    """)
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [4, 20, False]


class _Payload:
    """A crafted object: unpickling it in full would create a file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


class ForeignConfig:
    """A config class of someone else's code: not OmegaConf, so not read as data."""

    def __init__(self, content):
        self._content = content


@pytest.mark.parametrize("make, needs", [
    (lambda m: _Payload(m), "io.open"),
    (lambda m: ForeignConfig({"head_num": 4}), "ForeignConfig"),
])
def test_other_classes_in_an_nds_file_are_refused_by_name(tmp_path, make, needs):
    marker = tmp_path / "ran"
    file = tmp_path / "checkpoint-7.pt"
    torch.save(_nds_file(NDSOriginal(), model_params=make(marker)), file)
    with pytest.raises(UntrustedFileError, match=rf"{file}.*needs .*{needs}"):
        import_original("nds", file)
    assert not marker.exists()


# ---------------------------------------------------------------------- malformed tensors
@pytest.mark.parametrize("key, value, message", [
    ("encoder.embedding_node.weight", torch.zeros(32), "has shape (32,); the original's is "
                                                       "2-d"),
    ("encoder.embedding_node.weight", torch.zeros(32, 3, dtype=torch.long),
     "holds torch.int64, not floating-point weights"),
])
def test_a_malformed_nds_tensor_names_the_file_and_the_key(key, value, message):
    content = _nds_file(NDSOriginal())
    content["model_state_dict"] = dict(content["model_state_dict"]) | {key: value}
    with pytest.raises(CorruptFileError, match=rf"^nds\.pt: '{key}' .*{re.escape(message)}"):
        import_nds(content, name="nds.pt")


@pytest.mark.parametrize("key, value, message", [
    ("pos_encoder.W_query", torch.zeros(128, 32), r"has shape \(128, 32\); the original's "
                                                  r"is 3-d"),
    ("encoder.0.MHA_sublayer.MHA.W_key", torch.zeros(4, 128, 16), r"'encoder.0.MHA_sublayer"
                                                                  r".MHA.W_query\|W_key\|W_val' "
                                                                  r"has shape"),
    ("encoder.0.MHA_sublayer.MHA.W_val", torch.zeros(4, 64, 32),
     r"tensors do not fit together \(at 'encoder.0.MHA_sublayer.MHA.W_val'\)"),
    ("embedder.embedder.weight", torch.zeros(3), r"'embedder.embedder.weight' .*is 2-d"),
])
def test_a_malformed_n2s_tensor_names_the_file_and_the_key(key, value, message):
    state = n2s_original_state(layers=1)
    actor = dict(state["actor"])
    if key in actor:
        actor[key] = value
    else:
        actor = {k: v for k, v in actor.items()} | {key: value}
    with pytest.raises(CorruptFileError, match=rf"^n2s\.pt: .*{message}"):
        import_n2s({"actor": actor, "critic": state["critic"]}, num_customers=6, name="n2s.pt")


def test_a_state_dict_holding_a_non_tensor_names_the_key():
    content = _nds_file(NDSOriginal())
    content["model_state_dict"] = dict(content["model_state_dict"]) | {"extra": [1, 2]}
    with pytest.raises(CorruptFileError, match=r"model_state_dict is not a state dict of "
                                               r"tensors \('extra' is a list\)"):
        import_nds(content, name="nds.pt")


@pytest.mark.parametrize("env, message", [
    ({"problem_size": "twenty"}, r"env_params.problem_size must be a whole number >= 1, "
                                 r"got 'twenty'"),
    ({"problem_size": 20, "num_nodes_to_remove": 2.5}, "num_nodes_to_remove"),
])
def test_bad_config_values_name_the_file_and_the_key(env, message):
    content = _nds_file(NDSOriginal()) | {"env_params": env}
    with pytest.raises(CorruptFileError, match=rf"^nds\.pt: .*{message}"):
        import_nds(content, name="nds.pt")
    with pytest.raises(CorruptFileError, match=r"'model_params' is not a config"):
        import_nds(_nds_file(NDSOriginal()) | {"model_params": [4]}, name="nds.pt")


# ---------------------------------------------------------------------- --out
def test_out_an_existing_folder_is_refused_before_anything_is_written(tmp_path, capsys):
    file = tmp_path / "checkpoint-7.pt"
    torch.save(_nds_file(NDSOriginal()), file)
    folder = tmp_path / "models"
    folder.mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = run_cli(capsys, "import-checkpoint", "--from", "nds", str(file), "--out",
                           str(folder))
    assert code == 2 and err.count("\n") == 1
    assert f"--out {folder} is a folder" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before       # no models.tmp
    assert not any(folder.iterdir())
    (tmp_path / "a-file").write_text("x")
    code, _, err = run_cli(capsys, "import-checkpoint", "--from", "nds", str(file), "--out",
                           str(tmp_path / "a-file" / "out.ckpt"))
    assert code == 2 and "a-file is a file, not a folder" in err
    code, _, err = run_cli(capsys, "import-checkpoint", "--from", "nds", str(file), "--out",
                           str(tmp_path / "new" / "out.ckpt"))
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["out.ckpt"]
