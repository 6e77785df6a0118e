"""One configuration object per backbone feeds the CLI and the LightningModule; the
registry feeds --backbone; bad options are refused by the name the user typed."""

import pytest
import torch

from pyg_routing.cli import build_parser, main
from pyg_routing.training import DACTConfig, DACTLightning, backbones
from tests.helpers import TINY


def test_the_cli_options_are_the_config_fields_with_the_backbone_defaults():
    args = build_parser().parse_args(["train", "--clip", "0.2", "--gamma", "0.9",
                                      "--max-grad-norm", "none", "--warm-up", "0",
                                      "--layers", "2", "--num-bands", "3"])
    cfg = DACTConfig.from_options(args)
    assert (cfg.clip, cfg.gamma, cfg.max_grad_norm, cfg.warm_up) == (0.2, 0.9, None, 0.0)
    assert (cfg.num_layers, cfg.num_bands) == (2, 3)
    default = DACTConfig.from_options(build_parser().parse_args(["train"]))
    assert default == DACTConfig()                        # untouched options: DACT's
    compare = DACTConfig.from_options(build_parser().parse_args(["compare"]), pe="none")
    assert (compare.batch_size, compare.t_train, compare.val_steps) == (64, 40, 100)
    assert compare.lr_actor == DACTConfig().lr_actor
    help_text = build_parser()._subparsers._group_actions[0].choices["train"].format_help()
    assert "--max-grad-norm" in help_text and "dact: 0.2" in help_text


def test_the_module_saves_its_config_and_its_backbone():
    torch.manual_seed(0)
    model = DACTLightning(problem="tsp", pe="none", **{**TINY, "clip": 0.3})
    assert model.config.clip == 0.3 and model.hparams.clip == 0.3
    assert model.hparams.backbone == "dact" and model.hparams.init == "random"
    assert DACTLightning(problem="vrptw", pe="none", **TINY).config.init == "nearest_neighbor"
    with pytest.raises(ValueError, match="trains the 'dact' backbone, not 'n2s'"):
        DACTLightning(backbone="n2s", **TINY)


@pytest.mark.parametrize("options, message", [
    (dict(batch_size=0), "--batch-size must be >= 1, got 0"),
    (dict(heads=3, dim=16), "--heads 3 must divide --dim 16"),
    (dict(t_train=5, n_step=2), "--t-train 5 must be a multiple of --n-step 2"),
    (dict(clip=0.0), "--clip must be > 0, got 0.0"),
    (dict(gamma=1.5), "--gamma must be <= 1"),
    (dict(lr_actor=float("nan")), "--lr-actor must be a finite number"),
    (dict(num_layers=1.5), "--layers must be an integer, got 1.5"),
    (dict(local_mp="both"), "unknown local_mp 'both'"),
    (dict(pe="fourier"), "unknown encoding 'fourier'"),
    (dict(init="sweep2"), "unknown init 'sweep2'"),
    (dict(problem="pcvrp"), "supports tsp, cvrp, vrptw, pdtsp, not 'pcvrp'"),
])
def test_bad_hyper_parameters_are_refused_by_option_name(options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        DACTConfig(**options)


def test_the_registry_feeds_the_backbone_option():
    assert backbones.available() == {"dact": "tsp, cvrp, vrptw, pdtsp", "n2s": "pdtsp",
                                     "nds": "cvrp, vrptw, pcvrp"}
    assert backbones.get("dact") is DACTLightning
    with pytest.raises(ValueError, match="unknown backbone 'n3s'; choose from dact, n2s, nds"):
        backbones.get("n3s")
    for command in ("train", "evaluate", "compare"):
        parser = build_parser()._subparsers._group_actions[0].choices[command]
        action = next(a for a in parser._actions if a.dest == "backbone")
        assert list(action.choices) == list(backbones.available())


@pytest.mark.parametrize("argv, message", [
    (["train", "--epochs", "0"], "argument --epochs: must be >= 1, got 0"),
    (["train", "--batch-size", "x"], "argument --batch-size: invalid int value: 'x'"),
    (["train", "--max-minutes", "-1"], "argument --max-minutes: must be a finite number > 0"),
    (["evaluate", "--steps", "-5"], "argument --steps: must be >= 0, got -5"),
    (["evaluate", "--instances", "0"], "argument --instances: must be >= 1, got 0"),
    (["compare", "--time-limit", "0"], "argument --time-limit: must be a finite number > 0"),
    (["generate", "--num-instances", "0"], "argument --num-instances: must be >= 1, got 0"),
    (["train", "--backbone", "n3s"], "argument --backbone: invalid choice: 'n3s'"),
])
def test_cli_usage_errors_are_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("argv, message", [
    (["train", "--batch-size", "0"], "--batch-size must be >= 1, got 0"),
    (["train", "--heads", "3"], "--heads 3 must divide --dim 64"),
    (["train", "--problem", "pcvrp"], "supports tsp, cvrp, vrptw, pdtsp, not 'pcvrp'"),
    (["train", "--devices", "x"], "--devices must be an integer or 'auto', got 'x'"),
    (["evaluate", "--augment", "9", "--policy", "random", "--reference", "none",
      "--instances", "1", "--steps", "1"], "augment must be an integer in 1..8, got 9"),
])
def test_cli_option_errors_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal needs a machine without CUDA")
def test_evaluate_on_cuda_without_cuda_is_one_line(capsys):
    argv = ["evaluate", "--policy", "random", "--reference", "none", "--instances", "1",
            "--steps", "1", "--device", "cuda"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--device cuda: no CUDA device is available" in err and err.count("\n") == 1


def test_a_corrupt_or_foreign_checkpoint_is_one_line_naming_the_file(tmp_path, capsys):
    bad = tmp_path / "bad.ckpt"
    bad.write_text("not a checkpoint")
    foreign = tmp_path / "foreign.ckpt"
    torch.save({"weights": 1}, foreign)
    for path, message in [(bad, f"checkpoint {bad} is not a readable PyTorch file"),
                          (foreign, f"{foreign} is not a pyg_routing training checkpoint"),
                          (tmp_path / "none.ckpt", str(tmp_path / "none.ckpt"))]:
        for argv in (["evaluate", "--checkpoint", str(path), "--reference", "none"],
                     ["train", "--resume", str(path), "--epochs", "1", "--out",
                      str(tmp_path)]):
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert message in err and err.count("\n") == 1, err


def test_ipe_amplitude_reaches_the_encoder_and_the_search_code():
    from pyg_routing.data import CVRPGenerator
    from pyg_routing.envs.two_opt import observe, reset, route_quantities
    from pyg_routing.functional import ipe

    args = build_parser().parse_args(["train", "--pe", "ipe", "--ipe-amplitude", "flat"])
    torch.manual_seed(0)
    config = DACTConfig.from_options(args, **{**TINY, "pe": "ipe", "problem": "cvrp"})
    model = DACTLightning(**config.to_dict())
    assert model.policy.encoder.positional.node_pe.amplitude == "flat"
    assert "ipe_amplitude" in model.config.ARCHITECTURE
    state = reset(CVRPGenerator(8, seed=3).sample(2), init="sweep")
    rq = route_quantities(state)
    code = model.policy.prepare(observe(state)).pe
    for amplitude, same in (("flat", True), ("inverse_square", False)):
        ref = ipe(rq.cum_dist, rq.route_length, 8, "invariant", route_pos=rq.route_pos,
                  amplitude=amplitude).view(2, -1, 8)
        assert torch.allclose(code, ref, atol=1e-6) is same
    default = DACTLightning(problem="cvrp", pe="ipe", **TINY)
    assert default.policy.encoder.positional.node_pe.amplitude == "inverse_square"
    with pytest.raises(ValueError, match="--ipe-amplitude must be one of"):
        DACTConfig(ipe_amplitude="loud")


def test_depot_rate_reaches_training_and_the_test_search_and_is_dacts_alone(capsys):
    model = DACTLightning(problem="cvrp", depot_rate=0.5, **TINY)
    assert model.env.depot_rate == 0.5 and model.hparams["depot_rate"] == 0.5
    search = DACTLightning.test_search(model.config, 1, {})
    assert search.env.depot_rate == 0.5               # evaluate/compare test like training
    assert DACTLightning(problem="cvrp", **TINY).env.depot_rate is None
    with pytest.raises(ValueError, match="--depot-rate sets the depot copies of CVRP/VRPTW; "
                                         "tsp has one route"):
        DACTConfig(problem="tsp", depot_rate=0.5)
    with pytest.raises(ValueError, match="--depot-rate must be > 0"):
        DACTConfig(problem="cvrp", depot_rate=0.0)
    assert main(["train", "--backbone", "n2s", "--problem", "pdtsp", "--pe", "none",
                 "--depot-rate", "0.5", "--epochs", "1"]) == 2
    assert "--depot-rate is an option of the dact backbone" in capsys.readouterr().err
