"""N2S on the shared n-step PPO: configuration defaults and refusals, smoke training,
exact resume, the train/evaluate/compare commands and their errors."""

import json
from pathlib import Path

import pytest
import torch

pytest.importorskip("lightning")
import lightning as L  # noqa: E402

from pyg_routing.cli import main  # noqa: E402
from pyg_routing.training import (  # noqa: E402
    N2SConfig,
    N2SLightning,
    RoutingDataModule,
    load_policy,  # noqa: E402
)
from tests.helpers import TINY, TINY_DATA, run_cli, straight_and_resumed, tiny_argv  # noqa: E402

N2S_TINY = {**TINY, "t_train": 4, "n_step": 2}


def _model(**kw):
    torch.manual_seed(0)
    return N2SLightning(problem="pdtsp", pe="ipexpe", **{**N2S_TINY, **kw})


def _dm():
    return RoutingDataModule("pdtsp", num_customers=TINY["num_customers"],
                             batch_size=TINY["batch_size"], seed=TINY["seed"], **TINY_DATA)


def _trainer(**kw):
    args = dict(max_epochs=1, limit_train_batches=2, limit_val_batches=1, logger=False,
                enable_progress_bar=False, enable_model_summary=False, accelerator="cpu",
                deterministic=True, enable_checkpointing=False, num_sanity_val_steps=0)
    return L.Trainer(**{**args, **kw})


def test_config_has_n2s_defaults_and_the_recipes_have_its_per_size_settings():
    cfg = N2SConfig()
    t = cfg.train
    assert (cfg.problem, cfg.pe, cfg.model.dim, cfg.model.heads, cfg.model.layers,
            cfg.encoding.dim) == ("pdtsp", "dact_cpe", 128, 4, 3, 128)
    assert (t.lr_actor, t.lr_critic, t.gamma, t.n_step, t.ppo_epochs, t.clip, t.t_train,
            t.batch_size, t.init) == (8e-5, 2e-5, 0.999, 5, 3, 0.1, 250, 600, "random")
    assert (t.warm_up, t.max_grad_norm) == (2.0, 0.05)
    from pyg_routing.commands.grammar import normalize
    from pyg_routing.commands.train import parse

    # PDP-N2S's README per size (warm_up, max_grad_norm); between sizes the next larger
    for n, want in ((20, (2.0, 0.05)), (50, (1.5, 0.15)), (100, (1.0, 0.3)),
                    (30, (1.5, 0.15)), (200, (1.0, 0.3))):
        got = parse(normalize(["--backbone", "n2s", "--num_customers", str(n)])).config.train
        assert (got.warm_up, got.max_grad_norm) == want, n
    big = parse(normalize(["--backbone", "n2s", "--num_customers", "100", "--train.warm_up",
                           "0", "--train.max_grad_norm", "null"])).config.train
    assert (big.warm_up, big.max_grad_norm) == (0.0, None)       # explicit values win


@pytest.mark.parametrize("bad, match", [
    ({"problem": "cvrp"}, "supports pdtsp, not 'cvrp'"),
    ({"local_mp": "none"}, "--model.local_mp is an option of the gps encoder"),
    ({"pe_init": "default"}, "--model.pe_init is an option of the gps encoder"),
    ({"max_grad_norm": -3.0}, "--train.max_grad_norm must be > 0"),
    ({"warm_up": -2.0}, "--train.warm_up must be >= 0"),
    ({"init": "sweep"}, "--train.init: unknown init 'sweep'"),
    ({"window": 0}, "--test.window must be >= 1"),
])
def test_config_refusals_name_the_option(bad, match):
    if "window" in bad:
        bad = {"test": bad}
    with pytest.raises(ValueError, match=match):
        N2SConfig.create(**bad)


def test_smoke_training_changes_parameters_and_logs_finite():
    model = _model()
    before = [p.detach().clone() for p in model.parameters()]
    trainer = _trainer()
    trainer.fit(model, datamodule=_dm())
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    logged = trainer.callback_metrics
    for key in ("train/loss", "train/reward", "val/cost"):
        assert torch.isfinite(logged[key]), key


@pytest.mark.slow
def test_resume_is_exact(tmp_path):
    straight, resumed = straight_and_resumed(_model, _trainer, _dm, tmp_path / "epoch0.ckpt")
    for a, b in zip(straight.parameters(), resumed.parameters()):
        assert torch.equal(a, b)


@pytest.fixture(scope="module")
def n2s_checkpoint(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    argv = ["train", "--backbone", "n2s", "--problem", "pdtsp", "--pe", "ipexpe", "--out",
            str(out), *tiny_argv("n2s", epochs=1, t_train=4, n_step=2)]
    assert main(argv) == 0
    return str(sorted(Path(out).rglob("last.ckpt"))[0])


@pytest.mark.slow
def test_train_and_evaluate_with_augmented_independent_starts(n2s_checkpoint, tmp_path, capsys):
    # the command: problem and size come from the checkpoint
    code, out, err = run_cli(capsys, "evaluate", "--checkpoint", n2s_checkpoint,
                             "--test.instances", "3", "--test.steps", "6", "--test.augment",
                             "8", "--reference.solver", "ortools", "--reference.seconds",
                             "0.2", "--root", str(tmp_path), "--out", str(tmp_path / "eval"),
                             "--json")
    assert code == 0, err
    res = json.loads(out)
    assert (res["problem"], res["num_customers"]) == ("pdtsp", 8)
    assert res["backbone"] == "n2s" and res["init"] == "random"
    assert res["starts"] == "independent"
    assert res["cost"] <= res["initial_cost"] + 1e-9 and res["gap_percent"] > -1e-6
    policy = load_policy(n2s_checkpoint, expect_problem="pdtsp", expect_backbone="n2s")
    assert type(policy).__name__ == "N2SPolicy"


@pytest.mark.slow
def test_foreign_checkpoints_and_unsupported_problems_are_clear_errors(n2s_checkpoint, capsys):
    with pytest.raises(ValueError, match="trained with backbone 'n2s', but 'dact'"):
        load_policy(n2s_checkpoint, expect_backbone="dact")
    code, _, err = run_cli(capsys, "evaluate", "--checkpoint", n2s_checkpoint, "--problem",
                           "tsp", "--num-customers", "8", "--reference.solver", "none")
    assert code == 2 and "trained with problem 'pdtsp', but 'tsp'" in err
    code, _, err = run_cli(capsys, "train", "--backbone", "n2s", "--problem", "cvrp",
                           *tiny_argv("n2s", epochs=1, t_train=4, n_step=2))
    assert code == 2 and "supports pdtsp, not 'cvrp'" in err
    assert "Traceback" not in err
