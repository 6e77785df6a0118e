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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.presets import PRESETS
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
from pyg_routing.training.config import TrainConfig, encoder_option, option, refuse_gps_options


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
class NDSConfig(TrainConfig):
    """NDS's model and training hyper-parameters (see the module docstring)."""

    backbone = "nds"

    problem: str = option("cvrp", "routing problem", cli=False)
    num_customers: int = option(100, "customers per instance", low=1, cli=False)
    pe: str = option("none", "positional encoding", cli=False)
    encoder: str = encoder_option("NDS's Transformer with tour and neighbour layers")
    dim: int = option(128, "model width", low=1)
    heads: int = option(8, "attention heads (must divide --dim)", low=1)
    num_layers: int = option(4, "encoder layers", flag="--layers", low=2)
    batch_size: int = option(64, "instances per training batch", low=1)
    val_steps: int = option(50, "search iterations per validation instance", low=0)
    preset: str = option("nds", "data family of training and validation instances (nds: "
                                "NDS's own generators)", choices=tuple(PRESETS))
    rollouts: int = option(128, "removal sets (K) sampled per solution and training "
                                "iteration, each with its own latent z", low=1)
    remove: int = option(15, "customers per removal set (k)", low=1)
    recreate: int = option(5, "greedy repairs per removal set, the best kept", low=1)
    warmup_steps: int = option(10, "improvement rounds (J) of the current policy "
                                   "before a batch's training iterations", low=0)
    iterations: int = option(100, "training iterations (I) per batch; their "
                                  "gradients are summed into one optimizer step", low=1)
    lr: float = option(1e-4, "Adam learning rate (constant)", positive=True)
    weight_decay: float = option(1e-6, "Adam weight decay", low=0.0)
    val_rollouts: int = option(100, "removal sets per slot and validation iteration",
                               low=1)
    val_augment: int = option(8, "solution slots (symmetries) per validation "
                                 "instance", low=1)

    ARCHITECTURE: ClassVar[tuple[str, ...]] = (
        "problem", "pe", "encoder", "dim", "heads", "num_layers", "pe_dim", "num_bands",
        "local_mp", "ipe_frequencies", "ipe_amplitude", "ipe_direction", "ipe_phase",
        "xpe_aggregation")

    def __post_init__(self) -> None:
        super().__post_init__()
        env = DeconstructionEnv(self.recreate)
        env.check_problem(self.problem)
        self.init = self.init or env.inits[0]
        if self.init not in env.inits:
            raise ValueError(f"unknown init {self.init!r}; the nds backbone starts from "
                             f"{', '.join(env.inits)}")
        if self.remove > self.num_customers:
            raise ValueError(f"--remove {self.remove} exceeds the {self.num_customers} "
                             f"customers per instance")
        if max(self.rollouts, self.val_rollouts) > 1024:
            raise ValueError("--rollouts and --val-rollouts must be <= 1024 (distinct "
                             "10-bit latents z)")
        refuse_gps_options(self, self.backbone)

    def data_options(self) -> dict[str, Any]:
        return {**super().data_options(), "preset": self.preset}


class NDSLightning(ImprovementLightning):
    """NDS policy + winner-takes-all training. Keyword arguments: the fields of
    :class:`NDSConfig`."""

    config_class = NDSConfig
    baselines = {"random": ("Random destroy", lambda remove: RandomDestroy(k=remove)),
                 "sisr": ("SISR destroy", lambda remove: SISRDestroy(c_bar=remove))}
    search_options = ("rollouts", "recreate", "remove", "threads")
    budget_per_instance = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # Several backward passes per optimizer step (gradient accumulation over the
        # iterations): manual optimization, with Lightning's precision plugin.
        self.automatic_optimization = False

    @classmethod
    def make_env(cls, config: TrainConfig | None = None) -> DeconstructionEnv:
        return DeconstructionEnv()

    def build_policy(self) -> NDSPolicy:
        c = self.config
        self.env = DeconstructionEnv(c.recreate)
        first = c.num_layers // 2
        gps = {"local_mp": c.local_mp, "pe_init": c.pe_init} if c.encoder == "gps" else {}
        return NDSPolicy.build(c.problem, pe=c.pe, dim=c.dim, heads=c.heads, pe_dim=c.pe_dim,
                               num_bands=c.num_bands, encoder_layer_num=first,
                               encoder_layer_num_2=c.num_layers - first, encoder=c.encoder,
                               **gps, **c.encoding_options())

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.policy.parameters(), lr=self.config.lr,
                                weight_decay=self.config.weight_decay)

    def training_step(self, batch: RoutingInstances, batch_idx: int) -> Tensor:
        c = self.config
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
                obs = destroy.observe(work.state)
                sets, log_prob, _ = self.policy(obs, c.rollouts, c.remove, generator=gen)
                res = self.env.improve(work, sets.cpu().numpy(), rng)
                reward = torch.from_numpy(res.reward).to(log_prob.device)
                loss = winner_takes_all_loss(reward, log_prob)
                self.manual_backward(loss)
                losses.append(loss.detach())
                rewards.append(float(res.reward.max(axis=1).mean()))
            opt.step()
            opt.zero_grad()
        n = len(batch)
        self.log("train/loss", torch.stack(losses).mean(), batch_size=n)
        self.log("train/reward", float(np.mean(rewards)), prog_bar=True, batch_size=n)
        self.log("train/start_cost", float(work.start_cost.mean()), batch_size=n)
        self.log("train/warm_cost", float(warm_cost), batch_size=n)
        self.log("train/cost", float(work.state.cost.mean()), prog_bar=True, batch_size=n)
        return torch.stack(losses).sum()

    @classmethod
    def test_search(cls, config: NDSConfig, augment: int, options: dict[str, Any]
                    ) -> DestroyRepairSearch:
        """NDS's augmented simulated annealing (``options``: ``rollouts``, ``recreate``,
        ``remove``; defaults NDS's test settings, 200 x 5 and the configuration's
        removal size)."""
        return DestroyRepairSearch(augment=augment, rollouts=options.get("rollouts") or 200,
                                   recreate_n=options.get("recreate") or config.recreate,
                                   remove=options.get("remove") or config.remove)

    @classmethod
    def check_policy_search(cls, search: DestroyRepairSearch,
                            flags: Mapping[str, str] | None = None) -> None:
        """A trained policy samples each slot's sets from distinct latents: at most
        ``2 ** Z_DIM`` (1024) per iteration (the non-learned destroys take more)."""
        if search.rollouts > 2 ** Z_DIM:
            flag = (flags or {}).get("rollouts")
            option = f"{flag} {search.rollouts}: " if flag else ""
            raise ValueError(f"{option}rollouts={search.rollouts}: a trained NDS policy "
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
        return DestroyRepairSearch(augment=c.val_augment, rollouts=c.val_rollouts,
                                   recreate_n=c.recreate, schedule=TemperatureSchedule(0, 0),
                                   remove=c.remove)
