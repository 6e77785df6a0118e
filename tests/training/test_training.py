"""Lightning n-step PPO training of the DACT policy: smoke, checkpoints, resume."""

import math
import warnings

import pytest
import torch

pytest.importorskip("lightning")
import lightning as L  # noqa: E402
from lightning.pytorch.loggers import CSVLogger  # noqa: E402

from pyg_routing.data.generators import make_generator  # noqa: E402
from pyg_routing.envs.two_opt import (
    observe,  # noqa: E402
    reset,  # noqa: E402
)
from pyg_routing.training import DACTLightning, RoutingDataModule, load_policy  # noqa: E402
from tests.helpers import TINY, TINY_DATA  # noqa: E402


def _model(problem="cvrp", pe="ipexpe", **kw):
    torch.manual_seed(0)
    return DACTLightning(problem=problem, pe=pe, **{**TINY, **kw})


def _dm(problem="cvrp"):
    return RoutingDataModule(problem, num_customers=TINY["num_customers"],
                             batch_size=TINY["batch_size"], seed=TINY["seed"], **TINY_DATA)


def _trainer(tmp_path, **kw):
    args = dict(max_epochs=1, limit_train_batches=2, limit_val_batches=1,
                enable_progress_bar=False, enable_model_summary=False,
                logger=CSVLogger(tmp_path), accelerator="cpu", deterministic=True,
                enable_checkpointing=False, num_sanity_val_steps=0, log_every_n_steps=1)
    args.update(kw)
    return L.Trainer(**args)


def test_datamodule_is_seeded_and_changes_per_epoch():
    dm = _dm()
    dl = dm.train_dataloader()
    a = [b.pos for b in dl]
    b = [b.pos for b in dm.train_dataloader()]
    assert len(a) == 2 and all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a[0], a[1])
    ref = make_generator("cvrp", 8, seed=1).sample(4)
    assert torch.equal(a[1], ref.pos)
    dl.sampler.set_epoch(1)
    c = [b.pos for b in dl]
    assert torch.equal(c[0], make_generator("cvrp", 8, seed=2).sample(4).pos)
    v1 = [b.pos for b in dm.val_dataloader()]
    v2 = [b.pos for b in dm.val_dataloader()]
    assert torch.equal(v1[0], v2[0]) and not torch.equal(v1[0], a[0])


@pytest.mark.slow
@pytest.mark.parametrize("problem", ["cvrp", "tsp", "pdtsp"])
def test_smoke_training_changes_parameters_and_logs_finite(tmp_path, problem):
    model = _model(problem)
    before = [p.detach().clone() for p in model.parameters()]
    trainer = _trainer(tmp_path)
    trainer.fit(model, datamodule=_dm(problem))
    changed = [not torch.equal(a, p) for a, p in zip(before, model.parameters())]
    assert any(changed)
    m = trainer.callback_metrics
    for key in ("train/reward", "train/best_cost", "train/policy_loss", "train/value_loss",
                "val/cost"):
        assert key in m and math.isfinite(float(m[key])), key
    assert float(m["train/reward"]) >= 0
    # manual optimization: K = 3 updates per n-step chunk, 2 chunks, 2 batches
    assert trainer.global_step == 3 * 2 * 2
    csv = (tmp_path / "lightning_logs" / "version_0" / "metrics.csv").read_text()
    assert "train/reward" in csv and "val/cost" in csv


@pytest.mark.slow
def test_first_ppo_update_reuses_the_rollout_forward(tmp_path):
    """The rollout's forward passes (with gradients) are the first PPO update's, as
    in DACT: the same weights as re-evaluating the chunk, with fewer encoder calls."""
    calls = []

    def fit(reevaluate: bool):
        model = _model("tsp", encoder="gps")     # no dropout: re-evaluation is exact
        encoder = model.policy.encoder
        forward_dense = encoder.forward_dense

        def counted(*args, **kwargs):
            calls[-1] += 1
            return forward_dense(*args, **kwargs)

        encoder.forward_dense = counted
        if reevaluate:   # the first update evaluates the chunk again, as before
            update = model._ppo_update

            def fresh(obs, actions, rollout, rewards, last):
                out = [model.policy(o, a, detach_critic=True) for o, a in zip(obs, actions)]
                again = tuple(torch.stack(x) for x in list(zip(*out))[1:])
                torch.testing.assert_close(again[0], rollout[0])   # same log-probs
                return update(obs, actions, again, rewards, last)

            model._ppo_update = fresh
        calls.append(0)
        _trainer(tmp_path, limit_train_batches=1, limit_val_batches=0).fit(
            model, datamodule=_dm("tsp"))
        return model

    reused, again = fit(False), fit(True)
    for a, b in zip(reused.parameters(), again.parameters()):
        torch.testing.assert_close(a, b)
    # t_train 4 in chunks of n = 2, K = 3: 4 rollout forwards, then per chunk
    # (K - 1) * n re-evaluations and K bootstrap values
    assert calls[0] == 4 + 2 * ((3 - 1) * 2 + 3)
    assert calls[1] == calls[0] + 2 * 2


def _outputs(policy, problem="cvrp"):
    inst = make_generator(problem, 8, seed=123).sample(3)
    obs = observe(reset(inst))
    policy.eval()
    with torch.no_grad():
        a, lp, ent, v = policy(obs, greedy=True)
    return a, lp, ent, v


@pytest.mark.slow
def test_checkpoint_round_trip_and_load_policy_errors(tmp_path):
    model = _model("cvrp", pe="ipexpe", encoder="gps")
    trainer = _trainer(tmp_path, limit_train_batches=1)
    trainer.fit(model, datamodule=_dm())
    path = tmp_path / "m.ckpt"
    trainer.save_checkpoint(path)
    loaded = DACTLightning.load_from_checkpoint(path)
    assert loaded.hparams.problem == "cvrp" and loaded.hparams.pe == "ipexpe"
    assert loaded.hparams.num_customers == 8
    for x, y in zip(_outputs(model.policy), _outputs(loaded.policy)):
        assert torch.equal(x, y)
    pol = load_policy(path, expect_problem="cvrp", expect_pe="ipexpe")
    assert not pol.training and not pol.decoder.compiled and not pol.encoder.compiled
    compiled = load_policy(path, compiled=True)                     # override at load
    assert compiled.decoder.compiled and compiled.encoder.compiled
    for x, y in zip(_outputs(model.policy), _outputs(pol)):
        assert torch.equal(x, y)
    with pytest.raises(ValueError, match="trained with pe 'ipexpe', but 'ipe' was expected"):
        load_policy(path, expect_pe="ipe")
    with pytest.raises(ValueError, match="problem 'cvrp'.*'tsp'"):
        load_policy(path, expect_problem="tsp")
    with pytest.raises(ValueError, match="backbone 'dact', but 'n2s' was expected"):
        load_policy(path, expect_backbone="n2s")
    bad = tmp_path / "bad.ckpt"
    torch.save({"state_dict": {}}, bad)
    with pytest.raises(ValueError, match=f"{bad} is not a pyg_routing training checkpoint"):
        load_policy(bad)
    foreign = dict(torch.load(path, weights_only=False))
    foreign["hyper_parameters"] = {**foreign["hyper_parameters"], "backbone": "lkh"}
    torch.save(foreign, bad)
    with pytest.raises(ValueError, match="unknown backbone 'lkh'; choose from dact"):
        load_policy(bad)
    # a checkpoint whose weights do not fit what its hyper-parameters build (e.g. a DACT
    # model from before the arc-length features): one line, naming the file
    old = dict(torch.load(path, weights_only=False))
    hp = old["hyper_parameters"]
    old["hyper_parameters"] = {**hp, "model": {**hp["model"], "encoder": "native"}}
    torch.save(old, bad)
    with pytest.raises(ValueError, match=f"{bad} does not fit the dact model"):
        load_policy(bad)


def test_native_checkpoint_round_trip(tmp_path):
    model = _model("cvrp", pe="dact_cpe")
    c = model.config
    assert c.model.encoder == "native" and c.encoding.cpe_scope == "tour"
    assert model.hparams["model"]["encoder"] == "native"
    trainer = _trainer(tmp_path, limit_train_batches=1)
    trainer.fit(model, datamodule=_dm())
    path = tmp_path / "native.ckpt"
    trainer.save_checkpoint(path)
    pol = load_policy(path, expect_problem="cvrp", expect_pe="dact_cpe")
    assert type(pol.decoder).__name__ == "MHCDecoder" and not pol.training
    assert not pol.encoder.compiled and not pol.decoder.compiled
    compiled = load_policy(path, compiled=True)                     # override at load
    assert compiled.encoder.compiled and compiled.decoder.compiled
    model.policy.eval()
    for x, y in zip(_outputs(model.policy), _outputs(pol)):
        assert torch.equal(x, y)


@pytest.mark.slow
def test_resume_is_exact(tmp_path):
    """2 epochs x 1 batch in one go == 1 epoch + checkpoint + resume for 1 epoch
    (curriculum of epoch 1 = 1 warm-up step; lr decayed once; Adam state restored)."""
    straight = _model()
    _trainer(tmp_path / "a", max_epochs=2, limit_train_batches=1).fit(straight,
                                                                       datamodule=_dm())
    first = _model()
    t1 = _trainer(tmp_path / "b", max_epochs=1, limit_train_batches=1)
    t1.fit(first, datamodule=_dm())
    path = tmp_path / "epoch0.ckpt"
    t1.save_checkpoint(path)
    resumed = _model()
    _trainer(tmp_path / "c", max_epochs=2, limit_train_batches=1).fit(
        resumed, datamodule=_dm(), ckpt_path=path)
    assert not all(torch.equal(a, b) for a, b in zip(first.parameters(),
                                                      straight.parameters()))
    for a, b in zip(straight.parameters(), resumed.parameters()):
        assert torch.equal(a, b)



class _RankSync(L.Callback):
    """Gathers a parameter checksum and a checksum of the first training batch of
    every rank at the end of training."""

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if batch_idx == 0:
            self.data = batch.pos.sum().reshape(1)

    def on_train_end(self, trainer, pl_module):
        flat = torch.cat([p.detach().flatten() for p in pl_module.parameters()])
        sums = pl_module.all_gather(torch.stack([flat.sum(), flat.abs().sum()]))
        data = pl_module.all_gather(self.data)
        if trainer.global_rank == 0:
            torch.save({"sums": sums, "data": data}, trainer.default_root_dir + "/sums.pt")


class _StopAfterFirstBatch(L.Callback):
    """Saves a checkpoint after batch 0 of epoch 0 and stops (a mid-epoch stop, as
    ``--max-minutes`` or a preemption gives)."""

    def __init__(self, path):
        self.path = path

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.current_epoch == 0 and batch_idx == 0:
            trainer.save_checkpoint(self.path)
            trainer.should_stop = True


class _RecordBatches(L.Callback):
    def __init__(self):
        self.seen = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.seen.append((trainer.current_epoch, batch_idx, batch.pos.sum().item()))


@pytest.mark.slow
def test_resume_from_a_mid_epoch_checkpoint_is_exact(tmp_path):
    """Stopped after batch 0 of 2 and resumed: the resumed run gets batch 1's data
    (not batch 0's again) and ends with the weights of an uninterrupted run."""
    seen_straight, seen_resumed = _RecordBatches(), _RecordBatches()
    straight = _model()
    _trainer(tmp_path / "a", max_epochs=2, callbacks=[seen_straight]).fit(
        straight, datamodule=_dm())
    path = tmp_path / "mid.ckpt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # Lightning warns that the loader is not stateful
        _trainer(tmp_path / "b", max_epochs=2, callbacks=[_StopAfterFirstBatch(path)]).fit(
            _model(), datamodule=_dm())
        resumed = _model()
        _trainer(tmp_path / "c", max_epochs=2, callbacks=[seen_resumed]).fit(
            resumed, datamodule=_dm(), ckpt_path=path)
    assert len(seen_straight.seen) == 4
    assert seen_resumed.seen == seen_straight.seen[1:]
    for a, b in zip(straight.parameters(), resumed.parameters()):
        assert torch.equal(a, b)


@pytest.mark.slow
def test_resume_from_the_last_checkpoint_of_model_checkpoint_is_exact(tmp_path):
    """The checkpoint the CLI writes (``ModelCheckpoint(save_last=True)``, saved at the
    end of epoch 0 before the epoch counter moves on): resuming it trains epoch 1 on
    epoch 1's batches with the once-decayed learning rate, as an uninterrupted run."""
    from lightning.pytorch.callbacks import ModelCheckpoint

    seen_straight, seen_resumed = _RecordBatches(), _RecordBatches()
    straight = _model()
    _trainer(tmp_path / "a", max_epochs=2, callbacks=[seen_straight]).fit(
        straight, datamodule=_dm())
    ckpt = ModelCheckpoint(dirpath=tmp_path / "ck", save_last=True)
    _trainer(tmp_path / "b", max_epochs=1, enable_checkpointing=True, callbacks=[ckpt]).fit(
        _model(), datamodule=_dm())
    resumed = _model()
    _trainer(tmp_path / "c", max_epochs=2, callbacks=[seen_resumed]).fit(
        resumed, datamodule=_dm(), ckpt_path=tmp_path / "ck" / "last.ckpt")
    assert seen_resumed.seen == seen_straight.seen[2:]
    lr = resumed.optimizers().optimizer.param_groups[0]["lr"]
    train = resumed.hparams["train"]             # hyper-parameters are nested by section
    assert lr == pytest.approx(train["lr_actor"] * train["lr_decay"])
    for a, b in zip(straight.parameters(), resumed.parameters()):
        assert torch.equal(a, b)


@pytest.mark.slow
def test_ddp_spawn_two_cpu_processes(tmp_path):
    """2-process DDP on CPU (gloo, ~15 s): trains, and gradients are synchronised
    (both ranks end with the same parameters although they saw different data)."""
    model = _model()
    before = [p.detach().clone() for p in model.parameters()]
    trainer = _trainer(tmp_path, strategy="ddp_spawn", devices=2, limit_train_batches=1,
                       deterministic=False, callbacks=[_RankSync()],
                       default_root_dir=str(tmp_path))
    trainer.fit(model, datamodule=_dm())
    saved = torch.load(tmp_path / "sums.pt")
    sums, data = saved["sums"], saved["data"].flatten()
    assert sums.shape == (2, 2)
    torch.testing.assert_close(sums[0], sums[1], rtol=0, atol=0)
    assert data[0] != data[1]       # each rank trained on its own share of the batches
    assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters()))
