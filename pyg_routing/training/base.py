"""What every backbone's ``LightningModule`` shares (the trainer seam).

:class:`ImprovementLightning` holds an environment and a policy built from one
configuration object (:mod:`.config`), and owns everything that is not the
learning rule:

* seeding: all randomness of a training batch comes from generators seeded by
  ``(seed, epoch, batch_idx, rank)`` (:meth:`batch_seed`, :meth:`seeded`); no
  generator state survives a batch, so a checkpoint needs only what Lightning
  stores (weights, optimizer and scheduler) and a resume is exact;
* the per-epoch learning-rate decay, caught up at the start of an epoch;
* validation by the backbone's search (:meth:`validation_search`, the search seam
  :mod:`pyg_routing.search`) for ``val_steps`` iterations, logged as ``val/cost``;
* the architecture check when Lightning resumes a checkpoint.

A learning rule subclasses it and writes ``training_step`` and
``configure_optimizers`` (n-step PPO: :mod:`.ppo`); a backbone names its
configuration, environment, policy, search and non-learned baselines (DACT:
:mod:`.dact`; NDS: :mod:`.nds`).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import lightning as L
import torch
from torch import Tensor

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.envs import ImprovementEnv
from pyg_routing.models import ImprovementPolicy
from pyg_routing.search import FirstOf, MaxIterations, Search, StepSearch, WhenRequested
from pyg_routing.training.config import BackboneConfig
from pyg_routing.training.stopping import stop_requested

_MOD = 2**62


class ImprovementLightning(L.LightningModule):
    """Environment + policy + the shared training plumbing (see the module docstring).

    Subclasses set ``config_class`` and implement :meth:`make_env` and
    :meth:`build_policy`. Keyword arguments are the fields of ``config_class``
    (all of them are saved as hyper-parameters, with ``backbone``).
    """

    config_class: ClassVar[type[BackboneConfig]] = BackboneConfig
    #: the non-learned baselines of the backbone's search, by name: the table's label
    #: and a factory of what fills the search's policy slot (from the removal size,
    #: where the baseline has one); ``None`` is uniformly random moves
    baselines: ClassVar[dict[str, tuple[str, Callable[[int], Any]]]] = {
        "random": ("Random moves", lambda remove: None)}
    #: whether the test search gives every instance its own budget (NDS's time limit
    #: per instance) instead of searching a batch of instances together
    budget_per_instance: ClassVar[bool] = False

    def __init__(self, **options: Any) -> None:
        super().__init__()
        backbone = options.pop("backbone", self.config_class.backbone)
        if backbone != self.config_class.backbone:
            raise ValueError(f"{type(self).__name__} trains the "
                             f"{self.config_class.backbone!r} backbone, not {backbone!r}")
        self.config = self.config_class.create(**options)
        self.save_hyperparameters({**self.config.to_dict(),
                                   "backbone": self.config_class.backbone})
        self.env = self.make_env(self.config)
        self.policy = self.build_policy()

    # ------------------------------------------------------------------ backbone
    @classmethod
    def make_env(cls, config: BackboneConfig | None = None) -> ImprovementEnv:
        """The backbone's environment for ``config`` (``None``: its defaults, e.g. to list
        its problems)."""
        raise NotImplementedError

    def build_policy(self) -> ImprovementPolicy:
        """The backbone's policy for ``self.config`` (draws the initial weights)."""
        raise NotImplementedError

    @classmethod
    def test_search(cls, config: BackboneConfig) -> Search:
        """The search of ``evaluate`` and ``compare`` as ``config.test`` says (default:
        the step search over :meth:`make_env` from ``test.init`` (null: the
        environment's first rule) with ``test.augment`` copies, each from its own start
        when ``test.starts`` is ``"independent"``)."""
        env, t = cls.make_env(config), config.test
        return StepSearch(env, init=t.init or env.inits[0], augment=t.augment,
                          independent_starts=t.starts == "independent",
                          symmetries=getattr(t, "symmetries", "distinct"))

    @classmethod
    def check_policy_search(cls, search: Search) -> None:
        """Refuse, before any training or search, a test search that a trained policy of
        this backbone cannot run (default: every search it builds can)."""

    @classmethod
    def search_settings(cls, search: Search) -> dict[str, Any]:
        """What a result table says of the test search."""
        return {"init": search.init,
                "starts": "independent" if search.independent_starts else "shared"}

    def validation_search(self) -> Search:
        """The search of validation (default: the step search over :attr:`env`,
        greedy unless the backbone samples, from the configuration's ``init``)."""
        return StepSearch(self.env, init=self.config.train.init,
                          greedy=not self.config.validate.sample)

    # ------------------------------------------------------------------ stopping
    def stop_requested(self) -> bool:
        """Whether the run was asked to stop (its time budget passed, or SIGTERM):
        learning rules ask between chunks of a batch (:mod:`.stopping`)."""
        return stop_requested(self._trainer)

    # ------------------------------------------------------------------ seeds
    def batch_seed(self, batch_idx: int, epoch: int | None = None) -> int:
        """Seed of all randomness of training batch ``(epoch, batch_idx)`` on this rank."""
        epoch = self.current_epoch if epoch is None else epoch
        s = self.config.seed
        for v in (epoch, batch_idx, self.global_rank):
            s = (s * 1_000_003 + int(v) + 1) % _MOD
        return s

    @contextlib.contextmanager
    def seeded(self, seed: int) -> Iterator[tuple[torch.Generator, torch.Generator]]:
        """(CPU generator, device generator) seeded by ``seed``; the global RNG is
        forked and seeded too, and restored afterwards."""
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            cpu = torch.Generator().manual_seed(seed)
            dev = cpu if self.device.type == "cpu" else \
                torch.Generator(device=self.device).manual_seed(seed)
            yield cpu, dev

    # ------------------------------------------------------------------ resume
    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Refuse, naming the options, a checkpoint of another backbone or
        architecture when Lightning resumes into this model (before it loads the
        weights, where it would fail on mismatched names or shapes)."""
        self.check_resume(checkpoint, getattr(self._trainer, "ckpt_path", None))

    def check_resume(self, checkpoint: dict[str, Any], path: Any = None) -> None:
        """``ValueError`` naming the options in which ``checkpoint`` (read from
        ``path``) differs from this model's backbone and architecture; the training
        command calls it before anything is written."""
        stored = checkpoint.get("hyper_parameters") or {}
        if stored.get("backbone", self.config.backbone) != self.config.backbone:
            raise ValueError(f"cannot resume {path or 'the checkpoint'}: it was trained with "
                             f"backbone={stored['backbone']!r} (this run: "
                             f"{self.config.backbone!r})")
        try:
            theirs = self.config_class.create(
                **{k: v for k, v in stored.items() if k != "backbone"}).architecture()
        except ValueError as err:
            raise ValueError(f"cannot resume {path or 'the checkpoint'}: its "
                             f"hyper-parameters are not a {self.config.backbone} "
                             f"configuration ({err})") from None
        ours = self.config.architecture()
        diff = [f"{k}={theirs.get(k)!r} (this run: {ours.get(k)!r})"
                for k in dict.fromkeys([*ours, *theirs]) if theirs.get(k) != ours.get(k)]
        if diff:
            raise ValueError(f"cannot resume {path or 'the checkpoint'}: it was trained with "
                             + ", ".join(diff) + "; pass the same options to resume it")

    # ------------------------------------------------------------------ schedule
    def on_train_epoch_start(self) -> None:
        # The decay is caught up to the epoch at its START, not stepped at the end:
        # an end-of-epoch checkpoint (ModelCheckpoint saves before the module's
        # on_train_epoch_end) would otherwise resume with an undecayed rate.
        sch = self.lr_schedulers()
        if sch is None or sch.last_epoch >= self.current_epoch:
            return
        # A resumed run catches its schedule up before this process's first optimizer
        # step, by design: torch's warning about that order would read like a bug.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)` "
                                                      r"before `optimizer\.step\(\)`")
            while sch.last_epoch < self.current_epoch:
                sch.step()

    # ------------------------------------------------------------------ validation
    def validation_step(self, batch: RoutingInstances, batch_idx: int) -> Tensor | None:
        """Search for ``validate.steps`` iterations (:meth:`validation_search`, seeded by
        ``seed + batch_idx``); logs ``val/cost`` (mean best cost) and ``val/init_cost``.

        Lightning's sanity check before training runs the search on two instances for
        two iterations (a check of the pipeline, in seconds) and records nothing. A run
        asked to stop (:meth:`stop_requested`) ends the search early and records
        nothing either (a shorter search is not comparable)."""
        steps = self.config.validate.steps
        if self.trainer.sanity_checking:
            self.validation_search().run(batch[:2], self.policy, MaxIterations(min(steps, 2)),
                                         seed=self.config.seed + batch_idx)
            return None
        stop = FirstOf(MaxIterations(steps), WhenRequested(self.stop_requested))
        res = self.validation_search().run(batch, self.policy, stop,
                                           seed=self.config.seed + batch_idx)
        if res.iterations < steps:         # cut short by the run's stop: not comparable
            return None
        # the mean in the search's own dtype, logged as float32 on this device
        cost = res.cost.mean().float().to(self.device)
        self.log("val/cost", cost, prog_bar=True, batch_size=len(batch), sync_dist=True)
        self.log("val/init_cost", res.initial_cost.mean().float().to(self.device),
                 batch_size=len(batch), sync_dist=True)
        return cost
