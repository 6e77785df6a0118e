"""One configuration object per backbone (a recipe of sections) feeds the command line,
YAML recipes, checkpoints and the LightningModule; the registry feeds --backbone; bad
options are refused by the name the user typed."""

import pytest
import torch

from pyg_routing.cli import main
from pyg_routing.commands.grammar import normalize
from pyg_routing.commands.train import parse
from pyg_routing.training import DACTConfig, DACTLightning, N2SConfig, NDSConfig, backbones
from tests.helpers import TINY


def _parse(*argv):
    return parse(normalize(list(argv)))


def test_the_options_are_the_recipe_fields_over_the_shipped_recipe():
    cmd = _parse("--train.clip", "0.2", "--train.gamma", "0.9", "--train.max-grad-norm",
                 "null", "--train.warm_up", "0", "--model.layers", "2",
                 "--encoding.num_bands", "3")
    cfg = cmd.config
    assert (cfg.train.clip, cfg.train.gamma, cfg.train.max_grad_norm, cfg.train.warm_up) == \
        (0.2, 0.9, None, 0.0)
    assert (cfg.model.layers, cfg.encoding.num_bands) == (2, 3)
    # untouched options: the shipped recipe of the backbone, problem and size
    assert cmd.recipe == "dact/cvrp20"
    assert cfg.train.batch_size == 600 and cfg.train.max_grad_norm is None
    assert _parse().config.train.max_grad_norm == 0.04             # VRP-DACT's CVRP clip
    assert _parse("--backbone", "nds").config.pe == "none"          # NDS as released
    assert _parse("--backbone", "n2s").config.pe == "dact_cpe"      # N2S's own CPE
    assert _parse("--backbone", "n2s", "--num_customers", "30").recipe == "n2s/pdtsp50"


def test_help_lists_one_backbones_options_grouped_by_section(capsys):
    assert main(["train", "--backbone", "nds", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--train.lr_milestones" in text and "--train.t_train" not in text
    assert "Training: NDS's winner-takes-all" in text and "Model: NDS's removal" in text
    assert ":class:" not in text and ":func:" not in text          # plain text, no RST roles


def test_the_module_saves_its_config_and_its_backbone():
    torch.manual_seed(0)
    model = DACTLightning(problem="tsp", pe="none", **{**TINY, "clip": 0.3})
    assert model.config.train.clip == 0.3 and model.hparams["train"]["clip"] == 0.3
    assert model.hparams["backbone"] == "dact" and model.hparams["train"]["init"] == "random"
    vrptw = DACTLightning(problem="vrptw", pe="none", **TINY)
    assert vrptw.config.train.init == "nearest_neighbor"
    with pytest.raises(ValueError, match="trains the 'dact' backbone, not 'n2s'"):
        DACTLightning(backbone="n2s", **TINY)


def test_flat_names_and_sections_build_the_same_configuration():
    nested = DACTConfig.create(train={"batch_size": 4, "t_train": 4, "n_step": 2},
                               validate={"steps": 3}, model={"layers": 1})
    flat = DACTConfig.create(batch_size=4, t_train=4, n_step=2, val_steps=3, num_layers=1)
    assert nested == flat and flat.train.batch_size == 4 and flat.validate.steps == 3
    assert DACTConfig.create(**flat.to_dict()) == flat                # a round trip
    with pytest.raises(ValueError, match="has no option 'rollout'"):
        NDSConfig.create(rollout=4)


@pytest.mark.parametrize("options, message", [
    (dict(batch_size=0), "--train.batch_size must be >= 1, got 0"),
    (dict(heads=3, dim=16), "--model.heads 3 must divide --model.dim 16"),
    (dict(t_train=5, n_step=2), "--train.t_train 5 must be a multiple of --train.n_step 2"),
    (dict(clip=0.0), "--train.clip must be > 0, got 0.0"),
    (dict(gamma=1.5), "--train.gamma must be <= 1"),
    (dict(lr_actor=float("nan")), "--train.lr_actor must be a finite number"),
    (dict(num_layers=1.5), "--model.layers must be an integer, got 1.5"),
    (dict(encoder="gps", local_mp="both"), "--model.local_mp must be one of"),
    (dict(pe="fourier"), "--pe: unknown encoding 'fourier'"),
    (dict(init="sweep2"), "--train.init: unknown init 'sweep2'"),
    (dict(problem="pcvrp"), "supports tsp, cvrp, vrptw, pdtsp, not 'pcvrp'"),
    (dict(train={"epochz": 1}), "--train.epochz: no such option"),
])
def test_bad_hyper_parameters_are_refused_by_option_name(options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        DACTConfig.create(**options)


def test_options_of_another_encoder_are_refused():
    with pytest.raises(ValueError, match="--model.local_mp is an option of the gps encoder"):
        N2SConfig.create(local_mp="none")
    assert N2SConfig.create(encoder="gps", local_mp="none").model.local_mp == "none"


def test_the_registry_feeds_the_backbone_option():
    assert backbones.available() == {"dact": "tsp, cvrp, vrptw, pdtsp", "n2s": "pdtsp",
                                     "nds": "cvrp, vrptw, pcvrp"}
    assert backbones.get("dact") is DACTLightning
    with pytest.raises(ValueError, match="unknown backbone 'n3s'; choose from dact, n2s, nds"):
        backbones.get("n3s")


@pytest.mark.parametrize("argv, message", [
    (["train", "--max_minutes", "-1"], "--max_minutes must be a finite number > 0"),
    (["train", "--train.epochs", "0"], "--train.epochs must be >= 1, got 0"),
    (["train", "--train.batch-size", "x"], "train.batch_size"),
    (["evaluate", "--test.steps", "-5", "--policy", "random"], "--test.steps must be >= 0"),
    (["compare", "--reference.seconds", "0"], "--reference.seconds must be > 0"),
    (["generate", "--num_instances", "0"], "argument --num_instances: must be >= 1, got 0"),
    (["train", "--backbone", "n3s"], "unknown backbone 'n3s'"),
    (["train", "--config", "no/such"], "no such recipe file"),
])
def test_cli_usage_errors_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("argv, message", [
    (["train", "--train.batch_size", "0"], "--train.batch_size must be >= 1, got 0"),
    (["train", "--model.heads", "3"], "--model.heads 3 must divide --model.dim 64"),
    (["train", "--problem", "pcvrp"], "supports tsp, cvrp, vrptw, pdtsp, not 'pcvrp'"),
    (["train", "--trainer.devices", "x"],
     "--trainer.devices must be an integer or 'auto', got 'x'"),
    (["evaluate", "--test.augment", "9", "--policy", "random", "--reference.solver", "none",
      "--test.instances", "1", "--test.steps", "1"],
     "--test.augment: augment must be an integer in 1..8"),
])
def test_cli_option_errors_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal needs a machine without CUDA")
def test_evaluate_on_cuda_without_cuda_is_one_line(capsys):
    argv = ["evaluate", "--policy", "random", "--reference.solver", "none",
            "--test.instances", "1", "--test.steps", "1", "--trainer.accelerator", "gpu"]
    assert main(argv) == 2          # the trainer is the model's: evaluate refuses it
    assert "does not apply to evaluate" in capsys.readouterr().err
    ckpt = ["evaluate", "--checkpoint", "x.ckpt", "--accelerator", "gpu"]
    assert main(ckpt) == 2
    assert "x.ckpt" in capsys.readouterr().err


def test_a_corrupt_or_foreign_checkpoint_is_one_line_naming_the_file(tmp_path, capsys):
    bad = tmp_path / "bad.ckpt"
    bad.write_text("not a checkpoint")
    foreign = tmp_path / "foreign.ckpt"
    torch.save({"weights": 1}, foreign)
    for path, message in [(bad, f"checkpoint {bad} is not a readable PyTorch file"),
                          (foreign, f"{foreign} is not a pyg_routing training checkpoint"),
                          (tmp_path / "none.ckpt", str(tmp_path / "none.ckpt"))]:
        for argv in (["evaluate", "--checkpoint", str(path), "--reference.solver", "none"],
                     ["train", "--resume", str(path), "--train.epochs", "1", "--out",
                      str(tmp_path)]):
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert message in err and err.count("\n") == 1, err


def test_ipe_amplitude_reaches_the_encoder_and_the_search_code():
    from pyg_routing.data import CVRPGenerator
    from pyg_routing.envs.two_opt import observe, reset, route_quantities
    from pyg_routing.functional import ipe

    config = _parse("--pe", "ipe", "--encoding.ipe_amplitude", "flat").config
    torch.manual_seed(0)
    model = DACTLightning(**{**config.to_dict(), **TINY, "pe": "ipe", "problem": "cvrp"})
    assert model.policy.encoder.positional.node_pe.amplitude == "flat"
    assert "encoding" in model.config.ARCHITECTURE
    state = reset(CVRPGenerator(8, seed=3).sample(2), init="sweep")
    rq = route_quantities(state)
    code = model.policy.prepare(observe(state)).pe
    for amplitude, same in (("flat", True), ("inverse_square", False)):
        ref = ipe(rq.cum_dist, rq.route_length, 8, "invariant", route_pos=rq.route_pos,
                  amplitude=amplitude).view(2, -1, 8)
        assert torch.allclose(code, ref, atol=1e-6) is same
    default = DACTLightning(problem="cvrp", pe="ipe", **TINY)
    assert default.policy.encoder.positional.node_pe.amplitude == "inverse_square"
    with pytest.raises(ValueError, match="--encoding.ipe_amplitude must be one of"):
        DACTConfig.create(ipe_amplitude="loud")


def test_depot_rate_reaches_training_and_the_test_search_and_is_dacts_alone(capsys):
    model = DACTLightning(problem="cvrp", depot_rate=0.5, **TINY)
    assert model.env.depot_rate == 0.5 and model.hparams["model"]["depot_rate"] == 0.5
    search = DACTLightning.test_search(model.config)
    assert search.env.depot_rate == 0.5               # evaluate/compare test like training
    assert DACTLightning(problem="cvrp", **{**TINY, "depot_rate": None}).env.depot_rate is None
    with pytest.raises(ValueError, match="--model.depot_rate sets the depot copies of "
                                         "CVRP/VRPTW; tsp has one route"):
        DACTConfig.create(problem="tsp", depot_rate=0.5)
    with pytest.raises(ValueError, match="--model.depot_rate must be > 0"):
        DACTConfig.create(problem="cvrp", depot_rate=0.0)
    assert main(["train", "--backbone", "n2s", "--model.depot_rate", "0.5"]) == 2
    assert "--model.depot_rate is an option of the dact backbone" in capsys.readouterr().err
