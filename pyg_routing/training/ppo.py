"""Backbone-neutral n-step PPO with Lightning (DACT's and N2S's training rule).

One training batch = ``B`` instances. Their initial solutions (``init``) are first
improved by the current policy (no gradient, sampled) for :meth:`curriculum_steps`
steps: ``floor(epoch / warm_up)`` (``curriculum="floor"``, N2S's) or VRP-DACT's
normalised sigmoid over the epochs (``"sigmoid"``, :func:`sigmoid_curriculum_steps`);
the training rollout then starts from the last warm-up solution or the best one
(``curriculum_start``, VRP-DACT's ``best_cl``). A rollout of ``t_train`` environment
steps is split into chunks of ``n_step`` steps. The rollout runs with
gradients, and its forward passes serve the first of the ``ppo_epochs`` (K) PPO
updates after each chunk (as in DACT: its first update reuses the stored
log-probabilities and values; later updates re-evaluate the chunk). The updates use
the n-step returns ``R_t = r_t + gamma r_{t+1} + ... + gamma^{n-t} V(s_n)`` (``V(s_n)``
recomputed by the current critic at every update), the clipped surrogate with
``clip`` and a value loss (clipped around the first update's values from the second
update on). The reward is the environment's: the improvement of the best-so-far
cost. The critic reads DETACHED node embeddings: its loss does not train the encoder.

The environment and the policy come from the backbone (:mod:`.dact`); nothing here
knows what an action is. Optimizer: one Adam with two parameter groups (actor:
everything but ``policy.critic``; critic), gradient-norm clipping over all
parameters at once (``grad_clip="joint"``) or per group, each group to the same norm
(``"per_group"``, VRP-DACT's ``utils.clip_grad_norms``), exponential learning-rate
decay per epoch.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.envs import Observation
from pyg_routing.envs.base import BatchedState
from pyg_routing.training.base import ImprovementLightning


def sigmoid_curriculum_steps(epoch: int, epochs: int, xi: float) -> int:
    """VRP-DACT's curriculum (``agent/ppo.py``, ``train_batch``): ``int(z[epoch])`` with
    ``y = 1 / (1 + exp(-k x + E k / 2))`` over ``x = 0 .. E - 1`` (``k = 0.02``,
    ``E = epochs``), ``y`` normalised to ``[0, 1]`` and ``z = y E xi``. One epoch (where
    VRP-DACT divides by zero) has none."""
    if epochs <= 1:
        return 0
    k = 0.02

    def y(x: float) -> float:                      # the logistic, without overflow
        t = k * (x - epochs / 2)
        return 1.0 / (1.0 + math.exp(-t)) if t >= 0 else math.exp(t) / (1.0 + math.exp(t))

    low, high = y(0.0), y(float(epochs - 1))       # y rises: its min and max
    return int((y(float(epoch)) - low) / (high - low) * epochs * xi)


def clip_grad_norms(groups: list[dict[str, Any]], max_norm: float) -> list[Tensor]:
    """Clip each parameter group's gradients to ``max_norm`` on its own (VRP-DACT's
    ``utils.clip_grad_norms``); returns the norms before clipping, per group."""
    return [torch.nn.utils.clip_grad_norm_(g["params"], max_norm) for g in groups]


def stack_steps(steps: list) -> tuple[Tensor, Tensor, Tensor]:
    """``n`` per-step ``(log_prob, entropy, value)`` triples (each ``[B]``) ->
    three ``[n, B]`` tensors."""
    logp, ent, value = (torch.stack(x) for x in zip(*steps))
    return logp, ent, value


class PPOLightning(ImprovementLightning):
    """n-step PPO (manual optimization) for any backbone whose policy has a critic
    (``policy.critic``) and follows :class:`~pyg_routing.models.ImprovementPolicy`."""


    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.automatic_optimization = False

    def observe(self, state: BatchedState) -> Observation:
        """The policy's observation (a no-op allowed where no action is), with its node
        code computed once (PPO scores every observation again in each update)."""
        dtype = next(self.policy.parameters()).dtype
        return self.policy.prepare(self.env.policy_observation(state, dtype))

    def curriculum_steps(self, epoch: int | None = None, epochs: int | None = None) -> int:
        """Warm-up steps before the training rollout at ``epoch`` (default: the current
        one): ``floor(epoch / warm_up)``, or VRP-DACT's :func:`sigmoid_curriculum_steps`
        over ``epochs`` (default: the trainer's ``max_epochs``)."""
        epoch = self.current_epoch if epoch is None else epoch
        cfg = self.config.train
        if cfg.curriculum == "sigmoid":
            if epochs is None and self._trainer is not None:
                epochs = self.trainer.max_epochs
            if epochs is None or epochs < 0:
                raise ValueError("the sigmoid curriculum needs the number of epochs "
                                 "(Trainer(max_epochs=...))")
            return sigmoid_curriculum_steps(epoch, epochs, cfg.xi_cl)
        w = cfg.warm_up
        return int(epoch // w) if w else 0

    def configure_optimizers(self) -> Any:
        cfg = self.config.train
        critic = list(self.policy.critic.parameters())
        ids = {id(p) for p in critic}
        actor = [p for p in self.policy.parameters() if id(p) not in ids]
        opt = torch.optim.Adam([{"params": actor, "lr": cfg.lr_actor, "name": "actor"},
                                {"params": critic, "lr": cfg.lr_critic, "name": "critic"}])
        sch = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=cfg.lr_decay)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sch, "interval": "epoch"}}

    def _ppo_update(self, obs: list[Observation], actions: list[Tensor],
                    rollout: tuple[Tensor, Tensor, Tensor], rewards: Tensor,
                    last: Observation) -> dict[str, Tensor]:
        """K PPO updates on one chunk of ``n`` steps.

        Args:
            obs, actions: the chunk's observations and actions.
            rollout: ``(log_prob, entropy, value)``, each ``[n, B]``, of the rollout's
                own forward passes, still attached to their graphs: they are the
                first update's (the parameters have not changed since), so only the
                later updates evaluate the chunk again.
            rewards: ``[n, B]``. last: the observation after the chunk (bootstrap).
        """
        cfg = self.config.train
        opt = self.optimizers()
        logp, ent, value = rollout
        old_logp = logp.detach()
        old_value = None
        for k in range(cfg.ppo_epochs):
            if k:
                logp, ent, value = stack_steps([self.policy(o, a, detach_critic=True)[1:]
                                                for o, a in zip(obs, actions)])
            with torch.no_grad():
                ret = self.policy.value(last)                        # [B] bootstrap
                returns = []
                for r in rewards.flip(0):
                    ret = r + cfg.gamma * ret
                    returns.append(ret)
                returns = torch.stack(returns[::-1])                 # [n, B]
            adv = returns - value.detach()
            ratio = torch.exp(logp - old_logp)
            surrogate = -torch.min(ratio * adv,
                                   ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * adv).mean()
            if old_value is None:
                value_loss = (value - returns).pow(2).mean()
                old_value = value.detach()
            else:
                clipped = old_value + (value - old_value).clamp(-cfg.clip, cfg.clip)
                value_loss = torch.max((value - returns).pow(2),
                                       (clipped - returns).pow(2)).mean()
            loss = surrogate + cfg.value_coef * value_loss
            opt.zero_grad()
            self.manual_backward(loss)
            if cfg.max_grad_norm and cfg.grad_clip == "per_group":
                clip_grad_norms(opt.param_groups, cfg.max_grad_norm)
            elif cfg.max_grad_norm:
                self.clip_gradients(opt, gradient_clip_val=cfg.max_grad_norm,
                                    gradient_clip_algorithm="norm")
            opt.step()
        return {"loss": loss.detach(), "policy_loss": surrogate.detach(),
                "value_loss": value_loss.detach(), "entropy": ent.detach().mean()}

    def training_step(self, batch: RoutingInstances, batch_idx: int) -> None:
        """One batch: curriculum warm-up, then ``t_train`` steps in n-step PPO chunks."""
        cfg, env = self.config.train, self.env
        self.policy.train()
        with self.seeded(self.batch_seed(batch_idx)) as (cpu_gen, gen):
            state = env.reset(batch, init=cfg.init, generator=cpu_gen)
            warm = self.curriculum_steps()
            if warm:
                self.policy.eval()
                with torch.no_grad():
                    for _ in range(warm):
                        state, _ = env.step(state, self.policy(
                            self.observe(state), generator=gen, detach_critic=True)[0])
                self.policy.train()
                # the last (or best) warm-up solution is the rollout's initial one
                if cfg.curriculum_start == "best":
                    state = env.resume_best(state)
                state = env.restart_best(state)
            init_cost = state.cost.clone()
            total_reward = torch.zeros_like(init_cost)
            logs: dict[str, Tensor] = {}
            for _ in range(cfg.t_train // cfg.n_step):
                if self.stop_requested():       # budget spent or SIGTERM: end the batch
                    break
                obs, actions, rollout, rewards = [], [], [], []
                for _ in range(cfg.n_step):
                    with torch.no_grad():
                        o = self.observe(state)
                    # with gradients: this forward is the first PPO update's
                    a, *lp_ent_value = self.policy(o, generator=gen, detach_critic=True)
                    with torch.no_grad():
                        state, r = env.step(state, a)
                    obs.append(o)
                    actions.append(a)
                    rollout.append(lp_ent_value)
                    rewards.append(r.float())
                with torch.no_grad():
                    last = self.observe(state)
                rew = torch.stack(rewards)                              # [n, B]
                total_reward += rew.sum(0)
                logs = self._ppo_update(obs, actions, stack_steps(rollout), rew, last)
        b = len(batch)
        self.log("train/reward", total_reward.mean(), prog_bar=True, batch_size=b)
        self.log("train/best_cost", state.best_cost.float().mean(), prog_bar=True, batch_size=b)
        self.log("train/init_cost", init_cost.float().mean(), batch_size=b)
        self.log("train/curriculum_steps", float(warm), batch_size=b)
        for k, v in logs.items():
            self.log(f"train/{k}", v, batch_size=b)
