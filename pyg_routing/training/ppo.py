"""n-step PPO training of :class:`~pyg_routing.models.DACTPolicy` with Lightning.

The algorithm is DACT's (Ma et al., "Learning to Iteratively Solve Routing
Problems with Dual-Aspect Collaborative Transformer", NeurIPS 2021); the paper's
App. I ("Training Configuration") states that the DACT layer uses the published
configuration unchanged, only the positional encoding being replaced.

One training batch = ``B`` instances. Their initial solutions (``init``) are first
improved by the current policy (no gradient) for ``curriculum_steps() =
floor(epoch / warm_up)`` steps (DACT's curriculum, ``--warm_up``), then a rollout
of ``t_train`` 2-opt steps is split into chunks of ``n_step`` steps. The rollout
runs with gradients, and its forward passes serve the first of the ``ppo_epochs`` (K)
PPO updates after each chunk (DACT does the same: its first update reuses the stored
log-probabilities and values; later updates re-evaluate the chunk). The updates use
the n-step returns
``R_t = r_t + gamma r_{t+1} + ... + gamma^{n-t} V(s_n)`` (``V(s_n)`` recomputed by
the current critic at every update, as in DACT), the clipped surrogate with
``clip`` and a value loss (clipped around the first update's values from the
second update on). The reward is the improvement of the best-so-far cost
(:func:`~pyg_routing.envs.two_opt.step`). The critic sees DETACHED node embeddings
(DACT): the critic loss does not train the encoder.

Defaults and their sources (DACT paper Sec. 5 / its public repository):
``t_train=200``, ``n_step=4``, ``ppo_epochs=3``, ``clip=0.1``, ``gamma=0.999``,
``lr_actor=1e-4``, ``lr_critic=3e-5``, ``lr_decay=0.985`` per epoch,
``batch_size=512``, ``init="random"``. ``max_grad_norm=0.2`` and ``warm_up=2``
are the values of DACT's training commands as recalled from its repository README
(TSP; CVRP used ``max_grad_norm=0.05``); they could not be checked here.
Deviations: one Adam with two parameter groups (DACT: one optimizer per module)
and gradient-norm clipping over all parameters at once (DACT: per group).

Reproducibility: all randomness of a training batch (initial solutions, sampled
moves, and the global RNG, e.g. dropout, inside the step) comes from generators
seeded by ``(seed, epoch, batch_idx, rank)``; no generator state survives a
batch, so a checkpoint needs only the weights and the optimizer/scheduler state
that Lightning already stores. The initial weights come from the global RNG when
the module is built (the CLI seeds it with ``seed_everything(seed)`` first).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch import Tensor

from pyg_routing import encodings
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.envs.observation import Observation, observe
from pyg_routing.envs.rollout import improve
from pyg_routing.envs.state import TwoOptState
from pyg_routing.envs.two_opt import action_mask, reset, step
from pyg_routing.functional.route_pe import FREQUENCIES
from pyg_routing.models.dact_policy import DACTPolicy
from pyg_routing.models.gps_encoder import check_local_mp
from pyg_routing.transforms.ipe import IPE_DIRECTIONS

_MOD = 2**62
#: Hyperparameters that shape the weights, or what the first layer reads (the IPE
#: variant): a resumed run must match its checkpoint.
ARCHITECTURE_HPARAMS = ("problem", "pe", "dim", "heads", "num_layers", "pe_dim", "num_bands",
                        "local_mp", "ipe_frequencies", "ipe_direction")


def default_init(problem: str | Problem) -> str:
    """DACT trains from random solutions; random giant tours are rarely
    time-window feasible, so VRPTW starts from nearest-neighbour solutions."""
    return "nearest_neighbor" if Problem.parse(problem) is Problem.VRPTW else "random"


def _stack_steps(steps: list) -> tuple[Tensor, Tensor, Tensor]:
    """``n`` per-step ``(log_prob, entropy, value)`` triples (each ``[B]``) ->
    three ``[n, B]`` tensors."""
    logp, ent, value = (torch.stack(x) for x in zip(*steps))
    return logp, ent, value


class DACTLightning(L.LightningModule):
    """DACT policy + n-step PPO (manual optimization).

    Args:
        problem, num_customers, pe, dim, heads, num_layers, pe_dim, num_bands:
            the policy (:meth:`DACTPolicy.build`) and the problem it is trained on.
        batch_size: instances per batch (recorded; the data module draws them).
        t_train: env steps per training batch (``T_train``).
        n_step: steps per PPO chunk (``t_train`` must be a multiple).
        ppo_epochs: PPO updates per chunk (``K``).
        clip: PPO ratio clip ``epsilon`` (also the value clip).
        gamma: discount.
        lr_actor, lr_critic: Adam learning rates of encoder+decoder / value head.
        lr_decay: per-epoch exponential learning-rate decay.
        max_grad_norm: gradient-norm clip (``None``: no clipping).
        value_coef: weight of the value loss.
        warm_up: curriculum divisor, ``floor(epoch / warm_up)`` warm-up steps
            (``0``: no curriculum).
        init: initial solutions (``"random"``, ``"sweep"``, ``"nearest_neighbor"``);
            default :func:`default_init` (random, as DACT; nearest neighbour for VRPTW).
        val_steps: greedy improvement steps per validation instance.
        seed: base seed of the per-batch generators.
        pe_init: how the encoder's weights on the node code start
            (:class:`~pyg_routing.models.GPSEncoder`): ``"zero"`` (default; every
            encoding starts as the No-PE model of the same seed), ``"default"``
            (PyTorch's default over the concatenated fan-in) or a number ``s`` (the
            No-PE model plus a code block ``s`` times PyTorch's draw).
        ipe_frequencies: IPE frequencies of ``ipe`` / ``ipexpe`` (ignored by the
            other encodings): ``"harmonic"`` (default; ``ω_k = k + 1``, exactly
            circular and reversal-invariant) or ``"geometric"`` (the paper's printed
            ``λ^(-2k/D)``, which is neither; for reproduction).
        ipe_direction: IPE variant of ``ipe`` / ``ipexpe`` (ignored by the other
            encodings): ``"auto"`` (default; direction-aware for VRPTW/PDTSP, the
            reversal-invariant cosine code for TSP/CVRP, as the paper picks),
            ``"aware"`` or ``"invariant"`` (the paper's direction ablation).
        local_mp: route-graph message passing in the encoder (GraphGPS):
            ``"directed"`` (default; separate GINs for predecessor and successor),
            ``"undirected"`` (one GIN over both arc directions) or ``"none"`` (the
            paper's plain Transformer encoder, Sec. 3.3); see
            :class:`~pyg_routing.models.GPSEncoder`.
        compiled: score move pairs with ``torch.compile``
            (:class:`~pyg_routing.models.PairDecoder`) where no gradient flows
            (curriculum warm-up, validation); same model, faster steps.
    """

    def __init__(self, problem: str = "cvrp", num_customers: int = 20, pe: str = "ipexpe",
                 dim: int = 64, heads: int = 4, num_layers: int = 3, pe_dim: int = 32,
                 num_bands: int = 4, batch_size: int = 512, t_train: int = 200, n_step: int = 4,
                 ppo_epochs: int = 3, clip: float = 0.1, gamma: float = 0.999,
                 lr_actor: float = 1e-4, lr_critic: float = 3e-5, lr_decay: float = 0.985,
                 max_grad_norm: float | None = 0.2, value_coef: float = 1.0,
                 warm_up: float = 2.0, init: str | None = None, val_steps: int = 200,
                 seed: int = 0, pe_init: str | float = "zero", compiled: bool = False,
                 ipe_frequencies: str = "harmonic", local_mp: str = "directed",
                 ipe_direction: str = "auto") -> None:
        super().__init__()
        problem = Problem.parse(problem).value
        if t_train % n_step:
            raise ValueError(f"t_train={t_train} must be a multiple of n_step={n_step}")
        local_mp = check_local_mp(local_mp)
        self.save_hyperparameters()
        self.hparams.problem = problem
        self.hparams.local_mp = local_mp
        self.hparams.init = init or default_init(problem)
        self.automatic_optimization = False
        if ipe_frequencies not in FREQUENCIES:
            raise ValueError(f"unknown ipe_frequencies {ipe_frequencies!r}; choose from "
                             f"{FREQUENCIES}")
        if ipe_direction not in IPE_DIRECTIONS:
            raise ValueError(f"unknown ipe_direction {ipe_direction!r}; choose from "
                             f"{IPE_DIRECTIONS}")
        ipe_kwargs = {"frequencies": ipe_frequencies, "direction": ipe_direction} \
            if encodings.info(pe).name in ("ipe", "ipexpe") else {}
        self.policy = DACTPolicy.build(problem, pe=pe, dim=dim, heads=heads,
                                       num_layers=num_layers, pe_dim=pe_dim,
                                       num_bands=num_bands, pe_init=pe_init,
                                       compiled=compiled, local_mp=local_mp, **ipe_kwargs)

    # ------------------------------------------------------------------ policy
    def evaluate(self, obs: Observation, action: Tensor | None = None,
                 generator: torch.Generator | None = None, greedy: bool = False
                 ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Like ``DACTPolicy.forward`` but the critic reads DETACHED embeddings.

        Returns:
            ``action [B, 2]``, ``log_prob [B]``, ``entropy [B]``, ``value [B]``.
        """
        pol = self.policy
        h = pol.embed(obs)                                   # [B, M, dim]
        action, log_prob, entropy = pol.decoder.act(h, obs.mask, action, greedy, generator)
        value = pol.critic(h.detach(), extra=obs.extra.to(h.dtype)).float()
        return action, log_prob, entropy, value

    def value(self, obs: Observation) -> Tensor:
        """Critic value ``[B]`` of ``obs``."""
        h = self.policy.embed(obs)
        return self.policy.critic(h, extra=obs.extra.to(h.dtype)).float()

    def observe(self, state: TwoOptState) -> Observation:
        """Observation with the no-op ``(0, 0)`` allowed where no move is."""
        mask = action_mask(state)
        stuck = ~mask.flatten(1).any(1)
        if bool(stuck.any()):
            mask[stuck, 0, 0] = True
        return observe(state, self.policy, mask)

    def curriculum_steps(self, epoch: int | None = None) -> int:
        """Warm-up steps before the training rollout: ``floor(epoch / warm_up)``."""
        epoch = self.current_epoch if epoch is None else epoch
        w = self.hparams.warm_up
        return int(epoch // w) if w else 0

    # ------------------------------------------------------------------ seeds
    def batch_seed(self, batch_idx: int, epoch: int | None = None) -> int:
        """Seed of all randomness of training batch ``(epoch, batch_idx)`` on this rank."""
        epoch = self.current_epoch if epoch is None else epoch
        s = self.hparams.seed
        for v in (epoch, batch_idx, self.global_rank):
            s = (s * 1_000_003 + int(v) + 1) % _MOD
        return s

    @contextlib.contextmanager
    def _seeded(self, seed: int) -> Iterator[tuple[torch.Generator, torch.Generator]]:
        """(CPU generator, device generator) seeded by ``seed``; the global RNG is
        forked and seeded too, and restored afterwards."""
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            cpu = torch.Generator().manual_seed(seed)
            dev = cpu if self.device.type == "cpu" else \
                torch.Generator(device=self.device).manual_seed(seed)
            yield cpu, dev

    # ------------------------------------------------------------------ training
    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Refuse, naming the options, a checkpoint of another architecture when
        Lightning resumes into this model (before it loads the weights, where it would
        fail on mismatched names or shapes)."""
        stored = legacy_hparams(checkpoint.get("hyper_parameters") or {})
        diff = [f"{k}={stored[k]!r} (this run: {self.hparams[k]!r})"
                for k in ARCHITECTURE_HPARAMS if k in stored and stored[k] != self.hparams[k]]
        if diff:
            path = getattr(self._trainer, "ckpt_path", None) or "the checkpoint"
            raise ValueError(f"cannot resume {path}: it was trained with " + ", ".join(diff)
                             + "; pass the same options to resume it")

    def configure_optimizers(self) -> Any:
        hp = self.hparams
        critic = list(self.policy.critic.parameters())
        ids = {id(p) for p in critic}
        actor = [p for p in self.policy.parameters() if id(p) not in ids]
        opt = torch.optim.Adam([{"params": actor, "lr": hp.lr_actor, "name": "actor"},
                                {"params": critic, "lr": hp.lr_critic, "name": "critic"}])
        sch = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=hp.lr_decay)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sch, "interval": "epoch"}}

    def on_train_epoch_start(self) -> None:
        # The decay is caught up to the epoch at its START, not stepped at the end:
        # an end-of-epoch checkpoint (ModelCheckpoint saves before the module's
        # on_train_epoch_end) would otherwise resume with an undecayed rate.
        sch = self.lr_schedulers()
        if sch is not None:
            while sch.last_epoch < self.current_epoch:
                sch.step()

    def _ppo_update(self, obs: list[Observation], actions: list[Tensor],
                    rollout: tuple[Tensor, Tensor, Tensor], rewards: Tensor,
                    last: Observation) -> dict[str, Tensor]:
        """K PPO updates on one chunk of ``n`` steps.

        Args:
            obs, actions: the chunk's observations and moves (``[B, 2]`` each).
            rollout: ``(log_prob, entropy, value)``, each ``[n, B]``, of the rollout's
                own forward passes, still attached to their graphs: they are the
                first update's (the parameters have not changed since), so only the
                later updates evaluate the chunk again.
            rewards: ``[n, B]``. last: the observation after the chunk (bootstrap).
        """
        hp = self.hparams
        opt = self.optimizers()
        logp, ent, value = rollout
        old_logp = logp.detach()
        old_value = None
        for k in range(hp.ppo_epochs):
            if k:
                logp, ent, value = _stack_steps([self.evaluate(o, a)[1:]
                                                 for o, a in zip(obs, actions)])
            with torch.no_grad():
                ret = self.value(last)                               # [B] bootstrap
                returns = []
                for r in rewards.flip(0):
                    ret = r + hp.gamma * ret
                    returns.append(ret)
                returns = torch.stack(returns[::-1])                 # [n, B]
            adv = returns - value.detach()
            ratio = torch.exp(logp - old_logp)
            surrogate = -torch.min(ratio * adv,
                                   ratio.clamp(1 - hp.clip, 1 + hp.clip) * adv).mean()
            if old_value is None:
                value_loss = (value - returns).pow(2).mean()
                old_value = value.detach()
            else:
                clipped = old_value + (value - old_value).clamp(-hp.clip, hp.clip)
                value_loss = torch.max((value - returns).pow(2),
                                       (clipped - returns).pow(2)).mean()
            loss = surrogate + hp.value_coef * value_loss
            opt.zero_grad()
            self.manual_backward(loss)
            if hp.max_grad_norm:
                self.clip_gradients(opt, gradient_clip_val=hp.max_grad_norm,
                                    gradient_clip_algorithm="norm")
            opt.step()
        return {"loss": loss.detach(), "policy_loss": surrogate.detach(),
                "value_loss": value_loss.detach(), "entropy": ent.detach().mean()}

    def training_step(self, batch: RoutingInstances, batch_idx: int) -> None:
        """One batch: curriculum warm-up, then ``t_train`` steps in n-step PPO chunks."""
        hp = self.hparams
        self.policy.train()
        with self._seeded(self.batch_seed(batch_idx)) as (cpu_gen, gen):
            state = reset(batch, init=hp.init, generator=cpu_gen)
            warm = self.curriculum_steps()
            if warm:
                self.policy.eval()
                with torch.no_grad():
                    for _ in range(warm):
                        state, _ = step(state, self.evaluate(self.observe(state),
                                                             generator=gen)[0])
                self.policy.train()
                # the warmed-up solution is the initial one of the training rollout
                state = replace(state, best_cost=state.cost.clone(),
                                best_order=state.order.clone())
            init_cost = state.cost.clone()
            total_reward = torch.zeros_like(init_cost)
            logs: dict[str, Tensor] = {}
            for _ in range(hp.t_train // hp.n_step):
                obs, actions, rollout, rewards = [], [], [], []
                for _ in range(hp.n_step):
                    with torch.no_grad():
                        o = self.observe(state)
                    # with gradients: this forward is the first PPO update's
                    a, *lp_ent_value = self.evaluate(o, generator=gen)
                    with torch.no_grad():
                        state, r = step(state, a)
                    obs.append(o)
                    actions.append(a)
                    rollout.append(lp_ent_value)
                    rewards.append(r.float())
                with torch.no_grad():
                    last = self.observe(state)
                rew = torch.stack(rewards)                              # [n, B]
                total_reward += rew.sum(0)
                logs = self._ppo_update(obs, actions, _stack_steps(rollout), rew, last)
        b = len(batch)
        self.log("train/reward", total_reward.mean(), prog_bar=True, batch_size=b)
        self.log("train/best_cost", state.best_cost.float().mean(), prog_bar=True, batch_size=b)
        self.log("train/init_cost", init_cost.float().mean(), batch_size=b)
        self.log("train/curriculum_steps", float(warm), batch_size=b)
        for k, v in logs.items():
            self.log(f"train/{k}", v, batch_size=b)

    # ------------------------------------------------------------------ validation
    def validation_step(self, batch: RoutingInstances, batch_idx: int) -> Tensor:
        """Greedy improvement for ``val_steps`` steps; logs ``val/cost`` (mean best cost)."""
        gen = torch.Generator().manual_seed(self.hparams.seed + batch_idx)  # init="random"
        res = improve(batch, self.policy, steps=self.hparams.val_steps, init=self.hparams.init,
                      greedy=True, generator=gen)
        cost = res.best_cost.float().mean()
        self.log("val/cost", cost, prog_bar=True, batch_size=len(batch), sync_dist=True)
        self.log("val/init_cost", res.initial_cost.float().mean(), batch_size=len(batch),
                 sync_dist=True)
        return cost


def legacy_hparams(hp: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint's hyperparameters in today's terms (a new dict). Before
    ``local_mp`` took ``"directed"``, the encoder's message passing was one GIN over
    both arc directions: a stored ``local_mp=True``, or none stored, means
    ``"undirected"``; ``False`` means ``"none"``."""
    hp = dict(hp)
    mp = hp.get("local_mp", True)
    if isinstance(mp, bool):
        hp["local_mp"] = "undirected" if mp else "none"
    return hp


def load_policy(ckpt_path: str | Path, expect_problem: str | Problem | None = None,
                expect_pe: str | None = None, map_location: Any = "cpu",
                compiled: bool | None = None) -> DACTPolicy:
    """The trained :class:`DACTPolicy` of a :class:`DACTLightning` checkpoint (eval mode).
    ``compiled`` overrides whether its decoder uses ``torch.compile`` (default: as trained).

    Raises:
        ValueError: the file is not a ``DACTLightning`` checkpoint, or it was
            trained on another problem / with another encoding than expected.
    """
    ckpt = torch.load(ckpt_path, map_location=map_location, weights_only=False)
    hp = ckpt.get("hyper_parameters") if isinstance(ckpt, dict) else None
    if not hp or "problem" not in hp or "pe" not in hp:
        raise ValueError(f"{ckpt_path} is not a DACTLightning checkpoint (no problem/pe "
                         f"hyperparameters)")
    if expect_problem is not None:
        want = Problem.parse(expect_problem).value
        if Problem.parse(hp["problem"]).value != want:
            raise ValueError(f"checkpoint {ckpt_path} was trained on problem "
                             f"{hp['problem']!r}, but {want!r} was expected")
    if expect_pe is not None and hp["pe"] != expect_pe:
        raise ValueError(f"checkpoint {ckpt_path} uses positional encoding {hp['pe']!r}, "
                         f"but {expect_pe!r} was expected")
    hp = legacy_hparams(hp)
    if hp.get("pe_gate"):
        raise ValueError(f"checkpoint {ckpt_path} was trained with pe_gate=True, an option "
                         f"pyg_routing no longer has (pe_init='zero' replaced it): retrain it")
    # Hyperparameters of earlier versions that no longer exist (pe_gate=False) are
    # dropped; the weights must then load strictly.
    known = inspect.signature(DACTLightning.__init__).parameters
    model = DACTLightning(**{k: v for k, v in hp.items() if k in known})
    model.load_state_dict(ckpt["state_dict"])
    model.to(map_location if isinstance(map_location, (str, torch.device)) else "cpu")
    if compiled is not None:
        model.policy.decoder.compiled = compiled
    return model.policy.eval()
