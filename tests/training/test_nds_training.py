"""NDS as a backbone: configuration defaults and refusals, the winner-takes-all loss,
the training environment's steps, smoke training, exact resume, and the policy in
``pyg-routing search`` (with its errors)."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("lightning")
import lightning as L  # noqa: E402

from pyg_routing.cli import main  # noqa: E402
from pyg_routing.data.generators import make_generator  # noqa: E402
from pyg_routing.envs.deconstruction import (  # noqa: E402
    DeconstructionEnv,
    RandomDestroy,
    evaluate_sets,
)
from pyg_routing.errors import RoutingError  # noqa: E402
from pyg_routing.training import (  # noqa: E402
    NDSConfig,
    NDSLightning,
    RoutingDataModule,
    load_policy,
    winner_takes_all_loss,
)
from tests.helpers import NDS_TINY, run_cli, straight_and_resumed, tiny_argv  # noqa: E402


def _model(**kw):
    torch.manual_seed(0)
    return NDSLightning(**{"problem": "cvrp", "pe": "ipexpe", **NDS_TINY, **kw})


def _dm(problem="cvrp"):
    return RoutingDataModule(problem, num_customers=NDS_TINY["num_customers"],
                             batch_size=NDS_TINY["batch_size"], batches_per_epoch=2,
                             val_size=3, val_batch_size=3, seed=0, preset="paper")


def _trainer(**kw):
    args = dict(max_epochs=1, limit_train_batches=2, limit_val_batches=1, logger=False,
                enable_progress_bar=False, enable_model_summary=False, accelerator="cpu",
                deterministic=True, enable_checkpointing=False, num_sanity_val_steps=0)
    return L.Trainer(**{**args, **kw})


def test_config_has_nds_defaults():
    cfg = NDSConfig()
    m, t, v = cfg.model, cfg.train, cfg.validate
    # NDS always starts from its own construction: it has no init option any more
    assert (cfg.problem, cfg.num_customers, cfg.pe, cfg.data.preset) == \
        ("cvrp", 100, "none", "nds")
    assert not hasattr(t, "init")
    assert (m.dim, m.heads, m.layers, t.batch_size) == (128, 8, 4, 64)
    assert (t.rollouts, t.remove, t.recreate, t.warmup_steps, t.iterations) == \
        (128, 15, 5, 10, 100)
    assert (t.lr, t.weight_decay, v.rollouts, v.augment, v.steps) == (1e-4, 1e-6, 100, 8, 50)
    assert cfg.data.generator_options() == {"preset": "nds"}
    # NDS's network as released: 1,141,504 parameters on CVRP
    assert sum(p.numel() for p in NDSLightning(pe="none").policy.parameters()) == 1_141_504


@pytest.mark.parametrize("bad, match", [
    ({"problem": "tsp"}, "supports cvrp, vrptw, pcvrp, not 'tsp'"),
    ({"local_mp": "none"}, "--model.local_mp is an option of the gps encoder"),
    ({"remove": 200}, "--train.remove 200 exceeds the 100 customers"),
    ({"rollouts": 2000}, "--train.rollouts must be <= 1024"),
    ({"init": "random"}, "the nds configuration has no option 'init'"),   # NDS starts from nds
    ({"num_layers": 1}, "--model.layers must be >= 2"),
    ({"lr": 0.0}, "--train.lr must be > 0"),
])
def test_config_refusals_name_the_option(bad, match):
    # the removal size is checked against the size when the recipe is trained
    with pytest.raises((ValueError, RoutingError), match=match):
        NDSConfig.create(**bad).check_training()


def test_winner_takes_all_loss_on_a_toy_case():
    reward = torch.tensor([[1.0, 3.0, 2.0], [0.0, 0.0, 0.0], [2.0, 2.0, 0.0]])
    log_prob = torch.tensor([[-1.0, -2.0, -3.0], [-1.0, -1.0, -1.0], [-0.5, -4.0, -1.0]],
                            requires_grad=True)
    loss = winner_takes_all_loss(reward, log_prob)
    # only the best rollout of each row: advantages 3 - 2 = 1 (row 0), 0 (row 1),
    # 2 - 4/3 = 2/3 (row 2, the first of the tied best)
    expected = -(1.0 * -2.0 + 0.0 + (2 / 3) * -0.5) / 9
    assert loss.item() == pytest.approx(expected)
    loss.backward()
    grad = torch.zeros(3, 3)
    grad[0, 1], grad[2, 0] = -1 / 9, -(2 / 3) / 9
    assert torch.allclose(log_prob.grad, grad)


def test_env_improve_commits_the_best_candidate_and_rewards_improvements():
    inst = make_generator("cvrp", 20, seed=3).sample(4)
    env = DeconstructionEnv()
    batch = env.reset(inst, augment=2, rng=0)
    assert len(batch.state) == 8 and np.allclose(batch.state.cost, batch.start_cost)
    rng = np.random.default_rng(1)
    env.warm_up(batch, RandomDestroy(k=5), 3, 10, rng)
    assert (batch.state.cost <= batch.start_cost + 1e-12).all()   # improvements only
    sets = RandomDestroy(k=5).propose(batch.state, batch.arrays, 7, rng)
    before = batch.state.clone()
    res = env.improve(batch, sets, np.random.default_rng(2))
    # the same uniforms reproduce the evaluation on the state before the commit
    again = evaluate_sets(before, batch.arrays, sets, None, 5, np.random.default_rng(2))
    assert np.array_equal(res.cost, again)
    assert np.array_equal(res.chosen, res.cost.argmin(1))
    assert np.allclose(batch.state.cost, res.cost.min(1))          # unconditional move
    assert np.allclose(res.reward, np.maximum(before.cost[:, None] - res.cost, 0))
    batch.state.check(batch.arrays)


def test_smoke_training_changes_parameters_and_logs_finite():
    model = _model()
    before = [p.detach().clone() for p in model.parameters()]
    trainer = _trainer()
    trainer.fit(model, datamodule=_dm())
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    logged = trainer.callback_metrics
    for key in ("train/loss", "train/reward", "train/cost", "val/cost"):
        assert torch.isfinite(logged[key]), key
    assert logged["train/warm_cost"] <= logged["train/start_cost"] + 1e-6


@pytest.mark.parametrize("problem", ["vrptw", "pcvrp"])
def test_smoke_training_on_the_other_problems(problem):
    model = _model(problem=problem, pe="rpe")
    trainer = _trainer(limit_train_batches=1)
    trainer.fit(model, datamodule=_dm(problem))
    assert torch.isfinite(trainer.callback_metrics["train/loss"])


@pytest.mark.slow
def test_resume_is_exact(tmp_path):
    straight, resumed = straight_and_resumed(_model, _trainer, _dm, tmp_path / "epoch0.ckpt")
    for a, b in zip(straight.parameters(), resumed.parameters()):
        assert torch.equal(a, b)


_NDS_ARGV = ["--model.layers", "2", "--model.dim", "16", "--model.heads", "2",
             "--encoding.dim", "8", "--encoding.num-bands", "2", "--train.batch-size", "3",
             "--train.rollouts", "6", "--train.remove", "4", "--train.warmup-steps", "1",
             "--train.iterations", "2", "--validate.steps", "1", "--validate.rollouts", "4",
             "--validate.augment", "2", "--data.preset", "paper",
             "--train.batches-per-epoch", "1", "--validate.instances", "2",
             "--train.epochs", "1", "--trainer.accelerator", "cpu",
             # NDS's recipe (nds/cvrp100, the next size up) trains with AMP, a GPU's
             "--trainer.precision", "32-true", "--no-progress", "--json"]


@pytest.fixture(scope="module")
def nds_checkpoint(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    argv = ["train", "--backbone", "nds", "--problem", "cvrp", "--num-customers", "10",
            "--pe", "ipexpe", "--out", str(out), *_NDS_ARGV]
    assert main(argv) == 0
    return str(sorted(Path(out).rglob("last.ckpt"))[0])


def test_search_with_the_trained_policy_returns_checked_solutions(nds_checkpoint, tmp_path,
                                                                 capsys):
    policy = load_policy(nds_checkpoint, expect_problem="cvrp", expect_backbone="nds")
    assert type(policy).__name__ == "NDSPolicy" and policy.encoder.pe == "ipexpe"
    # NDS's policy has no compiled search path: asking for one is refused
    with pytest.raises(ValueError, match="NDSEncoder has no compiled search path"):
        load_policy(nds_checkpoint, compiled=True)
    code, out, err = run_cli(capsys, "search", "--destroy", "policy", "--checkpoint",
                             nds_checkpoint, "--problem", "cvrp", "--num-customers", "12",
                             "--test.instances", "2", "--test.seconds", "30", "--test.steps",
                             "2", "--test.augment", "2", "--test.rollouts", "5",
                             "--test.remove", "4", "--accelerator", "cpu", "--no-progress",
                             "--json", "--out", str(tmp_path / "s"))
    assert code == 0, err
    res = json.loads(out)
    assert res["destroy"].startswith("PolicyDestroy(k=4")
    # predict_step checks every returned solution (RoutingData.check) before costing it
    assert all(r["iterations"] == 2 and r["objective"] <= r["start_objective"] * (1 + 1e-6)
               for r in res["rows"])


@pytest.mark.slow
def test_policy_search_errors_are_clear(nds_checkpoint, tmp_path, capsys):
    code, _, err = run_cli(capsys, "search", "--destroy", "policy", "--num-customers", "12")
    assert code == 2 and "--destroy policy needs --checkpoint" in err
    code, _, err = run_cli(capsys, "search", "--destroy", "policy", "--checkpoint",
                           nds_checkpoint, "--problem", "vrptw", "--num-customers", "12")
    assert code == 2 and "trained with problem 'cvrp', but 'vrptw'" in err
    code, _, err = run_cli(capsys, "search", "--destroy", "sisr", "--checkpoint",
                           nds_checkpoint, "--num-customers", "12")
    assert code == 2 and "--destroy sisr takes none" in err
    # evaluate is every backbone's test command: an NDS checkpoint runs its
    # destroy-and-repair search, one budget per instance, with NDS's own options only
    code, out, err = run_cli(capsys, "evaluate", "--checkpoint", nds_checkpoint,
                             "--test.instances", "2", "--test.steps", "2", "--test.augment",
                             "2", "--test.rollouts", "4", "--reference.solver", "none",
                             "--no-progress", "--out", str(tmp_path / "eval"), "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["backbone"] == "nds" and res["rollouts"] == 4 and len(res["rows"]) == 2
    assert all(r["iterations"] == 2 for r in res["rows"])
    assert res["cost"] <= res["initial_cost"] + 1e-9
    code, _, err = run_cli(capsys, "evaluate", "--checkpoint", nds_checkpoint, "--test.init",
                           "random", "--reference.solver", "none")
    assert code == 2 and "--test.init is an option of the dact and n2s backbones; the nds " \
                         "backbone has no such option" in err
    code, _, err = run_cli(capsys, "evaluate", "--checkpoint", nds_checkpoint, "--backbone",
                           "dact", "--reference.solver", "none")
    assert code == 2 and "conflicts with checkpoint" in err
    out = tmp_path / "dact"
    assert main(["train", "--backbone", "dact", "--problem", "cvrp", "--out", str(out),
                 *tiny_argv(epochs=1)]) == 0
    capsys.readouterr()
    dact = str(sorted(out.rglob("last.ckpt"))[0])
    code, _, err = run_cli(capsys, "search", "--destroy", "policy", "--checkpoint", dact,
                           "--num-customers", "12")
    # refused while parsing, before the checkpoint is loaded as a policy
    assert code == 2 and f"conflicts with checkpoint {dact}, which is a dact policy" in err
    assert "Traceback" not in err


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_mixed_precision_training_step():
    model = _model()
    trainer = _trainer(accelerator="gpu", devices=1, precision="16-mixed",
                       limit_train_batches=1)
    trainer.fit(model, datamodule=_dm())
    assert torch.isfinite(trainer.callback_metrics["train/loss"])


@pytest.mark.slow
def test_compare_nds_trains_each_encoding_and_adds_destroy_baselines(tmp_path, capsys):
    code, out, err = run_cli(capsys, "compare", "--backbone", "nds", "--problem", "cvrp",
                             "--num-customers", "10", "--pe", "ipexpe,none", *_NDS_ARGV,
                             "--test.instances", "2", "--test.steps", "2", "--test.augment",
                             "2", "--test.rollouts", "5", "--reference.solver", "pyvrp",
                             "--reference.seconds", "0.1", "--root", str(tmp_path / "data"),
                             "--out", str(tmp_path))
    assert code == 0, err
    res = json.loads(out)
    rows = {r["encoding"]: r for r in res["rows"]}
    assert list(rows)[:3] == ["reference", "random", "sisr"]       # then the paper's order
    assert set(rows) == {"reference", "random", "sisr", "ipexpe", "none"}
    assert rows["sisr"]["method"] == "SISR destroy" and res["preset"] == "paper"
    for key in ("random", "sisr", "ipexpe", "none"):
        r = rows[key]
        assert r["objective"] <= r["initial_objective"] * (1 + 1e-9)
        assert r["gap_percent"] == pytest.approx(
            100 * (r["objective"] / rows["reference"]["objective"] - 1))
    assert (tmp_path / "compare_nds_cvrp10" / "table.md").exists()
