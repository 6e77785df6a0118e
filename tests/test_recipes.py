"""Recipes: every shipped recipe resolves and cites its sources, --print_config reads
back to the same run, a command line without --config trains the backbone as released,
and docs/recipes.md is generated from the files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyg_routing import recipes
from pyg_routing.cli import main
from pyg_routing.commands.grammar import normalize
from pyg_routing.commands.train import cpu_precision, parse
from pyg_routing.recipes.docs import annotated, markdown
from pyg_routing.training import backbones

FULL = [n for n in recipes.available() if "backbone" in recipes.read(n)]
OVERLAYS = [n for n in recipes.available() if n not in FULL]
ROOT = Path(__file__).resolve().parents[1]


def test_the_paper_settings_have_recipes():
    names = set(FULL)
    paper = {"dact/cvrp100", "dact/vrptw100", "dact/pdtsp50",            # Layer 1
             "n2s/pdtsp20", "n2s/pdtsp50", "n2s/pdtsp100",               # Layer 3 (Tab. 4)
             "dact/pdtsp20", "dact/pdtsp100",                            # Tab. 4's DACT row
             *(f"nds/{p}{n}" for p in ("cvrp", "vrptw", "pcvrp")        # Layer 2 (Tab. 5)
               for n in (500, 1000, 2000))}
    assert paper <= names, sorted(paper - names)
    assert {"cpu/dact", "cpu/n2s", "cpu/nds", "smoke/dact", "smoke/n2s", "smoke/nds"} == \
        set(OVERLAYS)


@pytest.mark.parametrize("name", FULL)
def test_every_recipe_resolves_and_names_its_setting(name):
    data = recipes.read(name)
    backbone, rest = name.split("/")
    assert data["backbone"] == backbone and rest == f"{data['problem']}{data['num_customers']}"
    cls = backbones.get(backbone).config_class
    direct = cls(**{k: v for k, v in data.items() if k != "backbone"})
    command = parse(normalize(["--config", name]))
    assert command.config.to_dict() == {**direct.to_dict(),
                                        "trainer": command.config.trainer.to_dict()}
    assert set(data) - {"backbone"} == {f for f in direct.to_dict()}   # complete: every option


@pytest.mark.parametrize("name", FULL)
def test_every_value_of_a_recipe_names_its_source(name):
    values = annotated(name)
    silent = [k for k, (_, paper, original, source) in values.items()
              if not (paper or original or source)
              and k not in ("backbone", "problem", "trainer.devices", "trainer.strategy")]
    assert not silent, f"{name}: no source for {silent}"


@pytest.mark.parametrize("name", OVERLAYS)
def test_every_overlay_resolves_on_its_backbones_recipe(name):
    scale, backbone = name.split("/")
    base = next(n for n in FULL if n.startswith(f"{backbone}/"))
    config = parse(normalize(["--config", base, "--config", name])).config
    assert config.backbone == backbone
    for section, values in recipes.read(name).items():
        for key, value in values.items():
            assert config.get(f"{section}.{key}") == value, (section, key)


@pytest.mark.parametrize("argv", [
    [], ["--backbone", "nds", "--pe", "ipexpe", "--train.lr_milestones", "[3, 5]"],
    ["--config", "n2s/pdtsp50", "--test.window", "null", "--model.encoder", "gps"],
    ["--config", "dact/cvrp20", "--config", "cpu/dact", "--train.epochs", "3"],
])
def test_print_config_reads_back_to_the_same_run(argv, tmp_path, capsys):
    assert main(["train", *argv, "--print_config"]) == 0
    printed = capsys.readouterr().out
    path = tmp_path / "run.yaml"
    path.write_text(printed)
    first = parse(normalize(argv)).config
    again = parse(normalize(["--config", str(path)])).config
    assert again == first and type(again) is type(first)
    assert main(["train", "--config", str(path), "--print_config"]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == printed.splitlines()[2:]


def test_a_backbone_without_a_recipe_option_trains_as_released():
    assert parse(normalize([])).config.pe == "dact_cpe"              # DACT's CPE
    assert parse(normalize(["--backbone", "n2s"])).config.pe == "dact_cpe"
    nds = parse(normalize(["--backbone", "nds"]))
    assert nds.config.pe == "none" and nds.recipe == "nds/cvrp100"
    # an overlay alone is no recipe: the shipped one is still the base
    overlaid = parse(normalize(["--config", "cpu/dact"]))
    assert overlaid.recipe == "dact/cvrp20" and overlaid.config.train.batch_size == 64
    assert overlaid.config.train.max_grad_norm == 0.04


def test_float16_of_a_recipe_falls_back_on_the_cpu_with_a_notice():
    values = {"trainer": {"accelerator": "cpu", "precision": "16-mixed"}}
    kept, note = cpu_precision(values, {})
    assert kept["trainer"]["precision"] == "32-true" and "needs a GPU" in note
    typed = {"trainer.precision": "--trainer.precision"}
    assert cpu_precision(values, typed) == (values, None)      # typed: kept, then refused
    gpu = {"trainer": {"accelerator": "gpu", "precision": "16-mixed"}}
    assert cpu_precision(gpu, {}) == (gpu, None)


@pytest.mark.parametrize("text, message", [
    ("backbone: dact\ntrain:\n  epochz: 3\n", "epochz"),
    ("- 1\n- 2\n", "a recipe is a mapping of options, got a list"),
    ("train: [\n", "not a YAML recipe"),
])
def test_a_bad_recipe_file_is_one_line_naming_it(text, message, tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert main(["train", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert "bad.yaml" in err or "epochz" in err


def test_the_recipes_command_lists_and_prints(capsys):
    assert main(["recipes", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["recipes"]
    assert set(listed) == set(recipes.available()) and all(listed.values())
    assert main(["recipes", "nds/cvrp500"]) == 0
    assert "configs/train/cvrp_500.yaml" in capsys.readouterr().out       # with its sources
    assert main(["recipes", "nds/cvrp5"]) == 2
    assert "no shipped recipe 'nds/cvrp5'" in capsys.readouterr().err


def test_the_default_recipe_is_the_next_larger_size():
    assert recipes.default_for("n2s", "pdtsp", 30) == "n2s/pdtsp50"
    assert recipes.default_for("n2s", "pdtsp", 500) == "n2s/pdtsp100"
    assert recipes.default_for("nds", "cvrp", 100) == "nds/cvrp100"
    assert recipes.default_for("dact", "pcvrp", 20) is None


def test_docs_recipes_md_is_generated_from_the_files():
    assert (ROOT / "docs" / "recipes.md").read_text() == markdown(), \
        "regenerate: python -m pyg_routing.recipes.docs > docs/recipes.md"
