"""NDS as a backbone: the removal policy trained by winner-takes-all policy gradient
inside the destroy-and-repair search (Hottung et al. 2025, ``src/trainer.py``; paper
Alg. 1), on the shared trainer base.

One training batch (``training_step``) of ``B`` fresh instances:

1. NDS's start solutions (:meth:`DeconstructionEnv.reset`);
2. ``warmup_steps`` (J) rounds of the current policy in eval mode without gradient:
   ``rollouts`` sets per solution applied in sequence, improvements only;
3. ``iterations`` (I) training iterations, each: one encoder pass on the current
   solutions (the encoding recomputed from them), ``K = rollouts`` rollouts of
   ``remove`` picks with distinct PolyNet latents, every set repaired best of
   ``recreate`` against the SAME solution (:meth:`DeconstructionEnv.improve`), reward
   ``r = max(cost - cost_k, 0)``, the loss :func:`winner_takes_all_loss` backpropagated
   (gradients summed over the iterations), then the solution moves to the best
   candidate unconditionally;
4. ONE optimizer step (Adam, constant learning rate, no clipping: NDS).

Defaults are NDS's code (``configs/train/*.yaml``), which the paper's hyper-parameter
appendix contradicts in two places: NDS has a constant ``lr = 1e-4`` with no warm-up
(the appendix lists MultiStepLR milestones and a 5000-step warm-up) and validates with
``K = 100`` rollouts (the appendix: 200). We follow the code. Validation is NDS's: the
augmented search (:class:`~pyg_routing.search.DestroyRepairSearch`) at ``T = 0`` for
``val_steps`` iterations with ``val_rollouts`` sets per slot over ``val_augment`` symmetries; NDS
does not sync its validation slots, ours do (at ``T = 0`` every slot restarts from the
instance's best: a greedy beam; the metric only ranks checkpoints of one run).

Randomness (start solutions, latents, sampling, repairs) comes from generators seeded
by ``(seed, epoch, batch, rank)``, so a resumed run is exact. The repairs run on the
CPU cores (numba threads over the solution slots) while the policy runs on the
module's device; under ``--precision 16-mixed`` / ``bf16-mixed`` Lightning's autocast
and gradient scaler apply to the policy (NDS: AMP + GradScaler).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.envs.deconstruction import (
    DeconstructionEnv,
    PolicyDestroy,
    RandomDestroy,
    SISRDestroy,
)
from pyg_routing.models import NDSPolicy
from pyg_routing.models.nds.decoder import Z_DIM
from pyg_routing.search import DestroyRepairSearch, TemperatureSchedule
from pyg_routing.training.base import ImprovementLightning
from pyg_routing.training.config import BackboneConfig
from pyg_routing.training.sections import (
    DataOptions,
    Encoder,
    ModelOptions,
    TestOptions,
    TrainOptions,
    ValidateOptions,
    bound,
)


def winner_takes_all_loss(reward: Tensor, log_prob: Tensor) -> Tensor:
    """NDS's (PolyNet's) loss: ``-mean_{S x K}[(r - mean_K r) * log p * 1{k = best}]``.

    Only the best rollout per solution (highest reward, the first on ties) gets a
    gradient; its advantage is against the mean of the ``K`` rewards (POMO's shared
    baseline). All-equal rewards give no signal.

    Args:
        reward: ``[S, K]`` rewards (no gradient). log_prob: ``[S, K]`` summed
            log-probabilities of the rollouts.
    """
    reward = reward.to(log_prob.dtype)
    advantage = reward - reward.mean(dim=1, keepdim=True)
    winner = torch.zeros_like(reward, dtype=torch.bool)
    winner.scatter_(1, reward.argmax(dim=1, keepdim=True), True)
    return -(advantage * log_prob * winner).mean()


@dataclass
class NDSModel(ModelOptions):
    """Model: NDS's removal policy"""

    encoder: Encoder = "native"
    """the encoder: native (NDS's Transformer with tour and neighbour layers) or gps
    (the GraphGPS-style encoder of DACT, same width; the decoder is unchanged)"""
    layers: int = bound(4, low=2)
    """encoder layers (NDS: half before, half after its tour and message-passing
    layers)"""


@dataclass
class NDSTrain(TrainOptions):
    """Training: NDS's winner-takes-all policy gradient inside its search"""

    rollouts: int = bound(128, low=1, high=2**Z_DIM)
    """removal sets (K) sampled per solution and training iteration, each with its own
    latent z"""
    remove: int = bound(15, low=1)
    """customers per removal set (k)"""
    recreate: int = bound(5, low=1)
    """greedy repairs per removal set, the best kept"""
    warmup_steps: int = bound(10, low=0)
    """improvement rounds (J) of the current policy before a batch's training
    iterations"""
    iterations: int = bound(100, low=1)
    """training iterations (I) per batch; their gradients are summed into one optimizer
    step"""
    lr: float = bound(1e-4, positive=True)
    """Adam learning rate"""
    weight_decay: float = bound(1e-6, low=0.0)
    """Adam weight decay"""
    lr_milestones: list[int] = bound(low=1, factory=list)
    """epochs at which the learning rate is multiplied by --train.lr_gamma (MultiStepLR)"""
    lr_gamma: float = bound(0.1, positive=True)
    """the factor of every --train.lr_milestones epoch"""
    lr_warmup_steps: int = bound(0, low=0)
    """optimizer steps of a linear learning-rate warm-up (0: none)"""
    lr_warmup_start: float = bound(0.01, positive=True, high=1.0)
    """the warm-up's first factor (it rises linearly to 1)"""

    def __post_init__(self) -> None:
        super().__post_init__()
        for m in self.lr_milestones:
            if isinstance(m, bool) or not isinstance(m, int) or m < 1:
                raise ValueError(f"--train.lr_milestones must be integers >= 1, got "
                                 f"{self.lr_milestones!r}")
        if list(self.lr_milestones) != sorted(set(self.lr_milestones)):
            raise ValueError(f"--train.lr_milestones must increase, got "
                             f"{self.lr_milestones!r}")

    def lr_factor(self, step: int, epoch: int) -> float:
        """The learning rate's factor at optimizer step ``step`` (0-based) of epoch
        ``epoch``: the linear warm-up from ``lr_warmup_start`` to 1 over
        ``lr_warmup_steps`` steps, times ``lr_gamma`` per milestone reached (the paper's
        MultiStepLR with linear warm-up, App. tab:hyperparams)."""
        warm = 1.0
        if step < self.lr_warmup_steps:
            warm = self.lr_warmup_start + (1.0 - self.lr_warmup_start) * step \
                / self.lr_warmup_steps
        return warm * self.lr_gamma ** sum(epoch >= m for m in self.lr_milestones)


@dataclass
class NDSValidate(ValidateOptions):
    """Validation: NDS's search at T = 0 on a fixed set after every epoch"""

    steps: int = bound(50, low=0)
    """search iterations per validation instance"""
    rollouts: int = bound(100, low=1, high=2**Z_DIM)
    """removal sets per slot and validation iteration"""
    augment: int = bound(8, low=1)
    """solution slots (symmetries) per validation instance"""


@dataclass
class NDSTest(TestOptions):
    """Test protocol: NDS's augmented simulated annealing"""

    rollouts: int = bound(200, low=1)
    """removal sets per slot and iteration"""
    recreate: int | None = bound(None, low=1)
    """repairs per removal set (null: as trained)"""
    remove: int | None = bound(None, low=1)
    """customers per removal set (null: as trained; the non-learned destroys: 15)"""
    exact: bool = False
    """nds presets: NDS's own test instances (its random streams; with seed 1234 and
    NDS's instance count this rebuilds its test file)"""


@dataclass
class NDSConfig(BackboneConfig):
    """NDS: a learned policy removes customers, exact greedy repair, simulated
    annealing"""

    backbone = "nds"

    num_customers: int = bound(100, low=1)
    """customers per instance"""
    data: DataOptions = field(default_factory=lambda: DataOptions(preset="nds"))
    model: NDSModel = field(default_factory=NDSModel)
    train: NDSTrain = field(default_factory=NDSTrain)
    validate: NDSValidate = field(default_factory=NDSValidate)
    test: NDSTest = field(default_factory=NDSTest)

    ARCHITECTURE: ClassVar[tuple[str, ...]] = (*BackboneConfig.ARCHITECTURE,)

    def __post_init__(self) -> None:
        super().__post_init__()
        DeconstructionEnv(self.train.recreate).check_problem(self.problem)

    def check_training(self) -> None:
        super().check_training()
        if self.train.remove > self.num_customers:
            raise ValueError(f"--train.remove {self.train.remove} exceeds the "
                             f"{self.num_customers} customers per instance")


class NDSLightning(ImprovementLightning):
    """NDS policy + winner-takes-all training. Keyword arguments: the fields of
    :class:`NDSConfig`."""

    config_class = NDSConfig
    baselines = {"random": ("Random destroy", lambda remove: RandomDestroy(k=remove)),
                 "sisr": ("SISR destroy", lambda remove: SISRDestroy(c_bar=remove))}
    budget_per_instance = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # Several backward passes per optimizer step (gradient accumulation over the
        # iterations): manual optimization, with Lightning's precision plugin.
        self.automatic_optimization = False

    @classmethod
    def make_env(cls, config: BackboneConfig | None = None) -> DeconstructionEnv:
        return DeconstructionEnv()

    def build_policy(self) -> NDSPolicy:
        c, m = self.config, self.config.model
        self.env = DeconstructionEnv(c.train.recreate)
        first = m.layers // 2
        gps = {"local_mp": m.local_mp, "pe_init": m.pe_init} if m.encoder == "gps" else {}
        return NDSPolicy.build(c.problem, pe=c.encoding_spec, dim=m.dim, heads=m.heads,
                               encoder_layer_num=first, encoder_layer_num_2=m.layers - first,
                               encoder=m.encoder, **gps)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.policy.parameters(), lr=self.config.train.lr,
                                weight_decay=self.config.train.weight_decay)

    def training_step(self, batch: RoutingInstances, batch_idx: int) -> Tensor:
        c = self.config.train
        seed = self.batch_seed(batch_idx)
        rng = np.random.default_rng(seed)
        opt = self.optimizers()
        opt.zero_grad()
        with self.seeded(seed) as (_, gen):
            work = self.env.reset(batch, rng=rng)
            destroy = PolicyDestroy(self.policy, batch, k=c.remove)
            self.env.warm_up(work, destroy, c.warmup_steps, c.rollouts, rng)
            warm_cost = work.state.cost.mean()
            self.policy.train()
            losses, rewards = [], []
            for _ in range(c.iterations):     # each iteration starts from the last one's
                if self.stop_requested() and losses:  # budget spent or SIGTERM
                    break
                obs = destroy.observe(work.state)
                sets, log_prob, _ = self.policy(obs, c.rollouts, c.remove, generator=gen)
                res = self.env.improve(work, sets.cpu().numpy(), rng)
                reward = torch.from_numpy(res.reward).to(log_prob.device)
                loss = winner_takes_all_loss(reward, log_prob)
                self.manual_backward(loss)
                losses.append(loss.detach())
                rewards.append(float(res.reward.max(axis=1).mean()))
            # the schedule is a function of (step, epoch): set before every step, so a
            # resumed run continues it exactly
            factor = c.lr_factor(self.global_step, self.current_epoch)
            for group in opt.param_groups:
                group["lr"] = c.lr * factor
            opt.step()
            opt.zero_grad()
        n = len(batch)
        self.log("train/loss", torch.stack(losses).mean(), batch_size=n)
        self.log("train/reward", float(np.mean(rewards)), prog_bar=True, batch_size=n)
        self.log("train/start_cost", float(work.start_cost.mean()), batch_size=n)
        self.log("train/warm_cost", float(warm_cost), batch_size=n)
        self.log("train/cost", float(work.state.cost.mean()), prog_bar=True, batch_size=n)
        self.log("train/lr", c.lr * factor, batch_size=n)
        return torch.stack(losses).sum()

    @classmethod
    def test_search(cls, config: NDSConfig) -> DestroyRepairSearch:
        """NDS's augmented simulated annealing as ``config.test`` says (the removal size
        and repairs as trained where it says null)."""
        t = config.test
        return DestroyRepairSearch(augment=t.augment, rollouts=t.rollouts,
                                   recreate_n=t.recreate or config.train.recreate,
                                   remove=t.remove or config.train.remove)

    @classmethod
    def check_policy_search(cls, search: DestroyRepairSearch) -> None:
        """A trained policy samples each slot's sets from distinct latents: at most
        ``2 ** Z_DIM`` (1024) per iteration (the non-learned destroys take more)."""
        if search.rollouts > 2 ** Z_DIM:
            raise ValueError(f"--test.rollouts {search.rollouts}: a trained NDS policy "
                             f"samples at most {2 ** Z_DIM} removal sets per slot and "
                             f"iteration (distinct {Z_DIM}-bit latents)")

    @classmethod
    def search_settings(cls, search: DestroyRepairSearch) -> dict[str, Any]:
        return {"rollouts": search.rollouts, "recreate": search.recreate_n,
                "remove": search.remove}

    def validation_search(self) -> DestroyRepairSearch:
        """NDS's validation search: ``T = 0`` over ``val_augment`` slots with
        ``val_rollouts`` sets per slot and iteration."""
        c = self.config
        return DestroyRepairSearch(augment=c.validate.augment, rollouts=c.validate.rollouts,
                                   recreate_n=c.train.recreate,
                                   schedule=TemperatureSchedule(0, 0), remove=c.train.remove)
