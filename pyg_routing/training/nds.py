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

from typing import Any

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
from pyg_routing.training.nds_config import NDSConfig


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
