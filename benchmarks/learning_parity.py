"""Learning parity at equal budget: the original and ours, trained with one recipe,
validated on the same instances after every epoch.

    python benchmarks/learning_parity.py --dact PATH/TO/VRP-DACT [--seeds 0 1 2]
    python benchmarks/learning_parity.py --n2s PATH/TO/PDP-N2S --compare n2s

``--dact`` / ``--n2s`` is a checkout of yining043/VRP-DACT / yining043/PDP-N2S (a git
repository or a plain copy). It is exported to a temporary folder outside any repository
(``git archive``, or a copy of its code files) and run there in a child process by
``_parity_originals.py``, on the CPU, with today's torch; nothing of it is written into
this repository. Ours is trained by our own trainer (Lightning), once per network
(``--encoders native gps``).

The recipes (:data:`ORIGINALS`): VRP-DACT's CVRP-20 training command (its README:
``--n_step 5 --T_train 250 --Xi_CL 1 --best_cl --max_grad_norm 0.04 --dummy_rate 0.5``,
its options' learning rates, decay, K and clip), PDP-N2S's PDTSP-21 command (``--warm_up
2 --max_grad_norm 0.05``, its options for the rest), both at a CPU budget: ``--epochs``
epochs of ``--batches-per-epoch`` batches of ``--batch-size`` instances. Validation, for
both sides: the mean best cost after ``--val-steps`` sampled steps on the same
``--val-size`` instances (our generator, seed ``VAL_SEED``, written in the original's
dataset format), from each side's own initial solutions (VRP-DACT's CVRP "random" rule,
first fit in index order, and ours ``init="first_fit"``; random feasible tours for N2S).

Prints one row per (side, seed) with the validation cost after each epoch, the mean
per epoch over the seeds, and writes everything as JSON (``--out``, as it goes).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch import Tensor

from pyg_routing.data.generators import make_generator
from pyg_routing.search import MaxIterations
from pyg_routing.training import backbones
from pyg_routing.training.datamodule import RoutingDataModule

HERE = Path(__file__).resolve().parent
VAL_SEED = 20_240_601


@dataclass(frozen=True)
class Original:
    """One comparison: the original's code and recipe, and our backbone and problem."""

    label: str
    backbone: str
    problem: str
    recipe: dict[str, Any]
    code: tuple[str, ...]            # the files of its code (no datasets, no checkpoints)
    writer: str                      # _parity_originals' writer of its dataset format
    ours: tuple[str, ...]            # the recipe's keys our configuration takes
    model: dict[str, Any] = field(default_factory=dict)   # our model's options


_PPO_KEYS = ("num_customers", "n_step", "t_train", "ppo_epochs", "max_grad_norm", "lr_actor",
             "lr_critic", "lr_decay", "clip", "gamma", "batch_size", "val_steps")
ORIGINALS = {
    # VRP-DACT's CVRP-20 recipe (README training command; options.py for the rest)
    "dact": Original(
        "VRP-DACT", "dact", "cvrp",
        dict(num_customers=20, depot_rate=0.5, n_step=5, t_train=250, ppo_epochs=3, xi_cl=1.0,
             max_grad_norm=0.04, lr_actor=1e-4, lr_critic=3e-5, lr_decay=0.985, clip=0.1,
             gamma=0.999),
        ("agent", "nets", "problems", "utils", "options.py"), "write_dact_instances",
        (*_PPO_KEYS, "depot_rate", "xi_cl"), dict(dim=64, heads=4, num_layers=3)),
    # PDP-N2S's PDTSP-21 recipe (README: --warm_up 2 --max_grad_norm 0.05; options.py)
    "n2s": Original(
        "PDP-N2S", "n2s", "pdtsp",
        dict(num_customers=20, warm_up=2.0, n_step=5, t_train=250, ppo_epochs=3,
             max_grad_norm=0.05, lr_actor=8e-5, lr_critic=2e-5, lr_decay=0.985, clip=0.1,
             gamma=0.999),
        ("agent", "nets", "problems", "utils", "options.py"), "write_n2s_instances",
        (*_PPO_KEYS, "warm_up")),
}


def export(checkout: Path, parts: tuple[str, ...], into: Path) -> Path:
    """The code of ``checkout`` in ``into``, outside any git repository: ``git archive``
    of HEAD when it is a repository (only ``parts``), else a copy of ``parts``."""
    into.mkdir(parents=True, exist_ok=True)
    git = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--git-dir"],
                         capture_output=True, text=True)
    if git.returncode == 0:
        archive = subprocess.run(["git", "-C", str(checkout), "archive", "HEAD", *parts],
                                 capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    else:
        for part in parts:
            src = checkout / part
            (shutil.copytree if src.is_dir() else shutil.copy)(src, into / part)
    return into


def run_original(which: str, root: Path, recipe: dict[str, Any], val_file: Path, seed: int
                 ) -> list[float]:
    """The original in a child process (its modules are named ``agent``, ``utils``, ...)."""
    cmd = [sys.executable, str(HERE / "_parity_originals.py"), which, str(root),
           json.dumps(recipe), str(val_file), str(seed)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=root)
    if done.returncode:
        raise SystemExit(f"{which} failed (seed {seed}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


class EpochValidation(L.Callback):
    """After every training epoch: the mean best cost of the model's own validation
    search (sampled) over ``val_steps`` steps on ``instances``, seeded alike each time."""

    def __init__(self, instances: Any, val_steps: int, seed: int) -> None:
        self.instances, self.val_steps, self.seed = instances, val_steps, seed
        self.curve: list[float] = []

    def on_train_epoch_end(self, trainer: L.Trainer, module: Any) -> None:
        search = module.validation_search()
        search.greedy = False
        res = search.run(self.instances, module.policy, MaxIterations(self.val_steps),
                         seed=self.seed)
        self.curve.append(float(res.cost.mean()))


class Diagnostics(L.Callback):
    """Per epoch, of our training: the gradient norms of the actor's and the critic's
    parameters before clipping (median over the updates), the critic's mean value, the
    mean n-step return it is fitted to, and the mean value and policy losses."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []
        self._epoch: dict[str, list[float]] = {}

    def setup(self, trainer: L.Trainer, module: Any, stage: str) -> None:
        update = module._ppo_update

        def recorded(obs, actions, rollout, rewards, last):       # same call, observed
            with torch.no_grad():
                ret, returns = module.policy.value(last), []
                for r in rewards.flip(0):
                    ret = r + module.config.train.gamma * ret
                    returns.append(ret)
            self._add(value=float(rollout[2].detach().mean()),
                      ret=float(torch.stack(returns).mean()))
            logs = update(obs, actions, rollout, rewards, last)
            self._add(value_loss=float(logs["value_loss"]), policy_loss=float(logs["policy_loss"]))
            return logs

        module._ppo_update = recorded

    def _add(self, **values: float) -> None:
        for k, v in values.items():
            self._epoch.setdefault(k, []).append(v)

    def on_after_backward(self, trainer: L.Trainer, module: Any) -> None:
        critic = {id(p) for p in module.policy.critic.parameters()}
        groups: dict[str, list[Tensor]] = {"grad_actor": [], "grad_critic": []}
        for p in module.policy.parameters():
            if p.grad is not None:
                groups["grad_critic" if id(p) in critic else "grad_actor"].append(p.grad)
        self._add(**{k: float(torch.stack([g.norm() for g in v]).norm()) for k, v in
                     groups.items() if v})

    def on_train_epoch_end(self, trainer: L.Trainer, module: Any) -> None:
        row = {k: float(torch.tensor(v).median() if k.startswith("grad") else
                        torch.tensor(v).mean()) for k, v in self._epoch.items()}
        self.rows.append(row)
        self._epoch = {}


def ours_options(original: Original, recipe: dict[str, Any], encoder: str, pe: str
                 ) -> dict[str, Any]:
    """Our configuration of ``recipe`` for the backbone of ``original``."""
    opts = {k: recipe[k] for k in original.ours}
    opts.update(problem=original.problem, pe=pe, **original.model)
    opts.update(recipe.get("ours", {}), encoder=encoder)
    return opts


def run_ours(original: Original, recipe: dict[str, Any], encoder: str, pe: str,
             instances: Any, seed: int, diagnostics: list | None = None) -> list[float]:
    """Our backbone trained by our trainer; the validation cost after every epoch (and,
    given a list ``diagnostics``, :class:`Diagnostics`' rows appended to it)."""
    L.seed_everything(seed, verbose=False)
    model = backbones.get(original.backbone)(**ours_options(original, recipe, encoder, pe),
                                             seed=seed)
    data = RoutingDataModule(original.problem, recipe["num_customers"],
                             batch_size=recipe["batch_size"],
                             batches_per_epoch=recipe["batches_per_epoch"], val_size=1,
                             seed=seed)
    val = EpochValidation(instances, recipe["val_steps"], VAL_SEED)
    diag = Diagnostics()
    callbacks = [val] if diagnostics is None else [diag, val]
    trainer = L.Trainer(max_epochs=recipe["epochs"], accelerator="cpu", logger=False,
                        enable_checkpointing=False, limit_val_batches=0, callbacks=callbacks,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model, data)
    if diagnostics is not None:
        diagnostics.extend(diag.rows)
    return val.curve


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dact", type=Path, help="a checkout of yining043/VRP-DACT")
    p.add_argument("--n2s", type=Path, help="a checkout of yining043/PDP-N2S")
    p.add_argument("--compare", nargs="+", choices=tuple(ORIGINALS), default=["dact"],
                   help="the comparisons to run (the original's side runs where its "
                        "checkout is given)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--batches-per-epoch", type=int, default=1)
    p.add_argument("--val-size", type=int, default=128)
    p.add_argument("--val-steps", type=int, default=100)
    p.add_argument("--encoders", nargs="*", default=["native", "gps"],
                   help="our networks to train (none: only the original)")
    p.add_argument("--pe", default="dact_cpe",
                   help="our encoding (default: DACT's CPE, which both originals use)")
    p.add_argument("--recipe", type=json.loads, default={},
                   help="recipe values for both sides as JSON (e.g. '{\"t_train\": 10}')")
    p.add_argument("--ours", type=json.loads, default={},
                   help="extra options of ours as JSON (e.g. '{\"grad_clip\": \"joint\"}')")
    p.add_argument("--threads", type=int, default=1, help="torch threads of every run")
    p.add_argument("--diagnostics", action="store_true",
                   help="print our gradient norms per group, critic values and returns, and "
                        "losses per epoch")
    p.add_argument("--out", type=Path, default=None, help="write the curves as JSON")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows: dict[str, dict[int, list[float]]] = {}
    seconds: dict[str, float] = {}
    diag: dict[str, list] = {}
    budget = dict(epochs=args.epochs, batch_size=args.batch_size,
                  batches_per_epoch=args.batches_per_epoch, val_size=args.val_size,
                  val_steps=args.val_steps, threads=args.threads, ours=args.ours)
    with tempfile.TemporaryDirectory() as tmp:
        for which in args.compare:
            original = ORIGINALS[which]
            recipe = {**original.recipe, **args.recipe, **budget}
            instances = make_generator(original.problem, recipe["num_customers"],
                                       seed=VAL_SEED).sample(args.val_size)
            sides: list[tuple[str, Any]] = []
            checkout = getattr(args, which)
            if checkout is not None:
                import _parity_originals

                root = export(checkout, original.code, Path(tmp) / which)
                val_file = Path(tmp) / f"{which}_val.pkl"
                getattr(_parity_originals, original.writer)(instances, val_file)
                sides.append((original.label,
                              lambda s, w=which, r=root, rc=recipe, v=val_file:
                              run_original(w, r, rc, v, s)))
            for enc in args.encoders:
                def ours(seed: int, enc: str = enc, original: Original = original,
                         recipe: dict = recipe, instances: Any = instances) -> list[float]:
                    found = [] if args.diagnostics else None
                    curve = run_ours(original, recipe, enc, args.pe, instances, seed, found)
                    for epoch, row in enumerate(found or []):
                        print(f"  {original.backbone} {enc} seed {seed} epoch {epoch + 1}: "
                              + " ".join(f"{k} {v:.4g}" for k, v in row.items()), flush=True)
                    if found is not None:
                        diag[f"ours {original.backbone} ({enc}) {seed}"] = found
                    return curve

                sides.append((f"ours {original.backbone} ({enc})", ours))
            for name, run in sides:
                rows[name] = {}
                start = time.perf_counter()
                for seed in args.seeds:
                    rows[name][seed] = run(seed)
                    print(f"{name:18s} seed {seed}: "
                          + " ".join(f"{c:6.3f}" for c in rows[name][seed]), flush=True)
                    seconds[name] = time.perf_counter() - start
                    if args.out is not None:        # as it goes: a long run keeps its rows
                        args.out.write_text(json.dumps(
                            {"budget": budget, "pe": args.pe, "curves": rows,
                             "seconds": seconds, "diagnostics": diag}, indent=1))
    print("\nmean over seeds, per epoch")
    for name, by_seed in rows.items():
        curves = torch.tensor(list(by_seed.values()))
        print(f"{name:18s}: " + " ".join(f"{c:6.3f}" for c in curves.mean(0).tolist())
              + f"   ({seconds[name] / len(by_seed):.0f} s per seed)")


if __name__ == "__main__":
    main()
