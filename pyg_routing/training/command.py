"""``pyg-routing train`` and ``pyg-routing evaluate``: CLI glue around Lightning."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import torch

from pyg_routing import encodings

PROBLEMS = ("tsp", "cvrp", "vrptw")


def add_train_parser(sub: Any) -> None:
    p = sub.add_parser("train", help="train an improvement policy with Lightning",
                       description="Train a DACT policy (n-step PPO) with any encoding; "
                                   "checkpoints and CSV logs go to --out.")
    p.add_argument("--backbone", choices=("dact",), default="dact", help="improvement backbone")
    p.add_argument("--problem", choices=PROBLEMS, default="cvrp")
    p.add_argument("--num-customers", type=int, default=20)
    p.add_argument("--pe", choices=list(encodings.available()), default="ipexpe",
                   help="positional encoding")
    p.add_argument("--dim", type=int, default=64, help="model width")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--pe-dim", type=int, default=32, help="width of node encodings")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--t-train", type=int, default=200, help="environment steps per batch")
    p.add_argument("--n-step", type=int, default=4, help="PPO n-step length")
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--batches-per-epoch", type=int, default=20)
    p.add_argument("--val-size", type=int, default=256)
    p.add_argument("--val-steps", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-minutes", type=float, default=None, help="stop training after this")
    p.add_argument("--accelerator", default="auto", help="lightning accelerator")
    p.add_argument("--devices", default="1", help="number of devices (or 'auto')")
    p.add_argument("--strategy", default="auto", help="lightning strategy, e.g. ddp")
    p.add_argument("--precision", default="32-true", help="e.g. 32-true, bf16-mixed, 16-mixed")
    p.add_argument("--out", default="runs", help="folder for checkpoints and logs")
    p.add_argument("--resume", default=None, help="checkpoint to resume from")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--json", action="store_true", help="print a JSON object")


def add_evaluate_parser(sub: Any) -> None:
    p = sub.add_parser("evaluate", help="improve held-out instances with a trained policy",
                       description="Run T improvement steps (best-so-far, optional 8-fold "
                                   "augmentation) and report the objective, the gap to a "
                                   "cached PyVRP reference and the wall time.")
    p.add_argument("--checkpoint", default=None,
                   help="a `pyg-routing train` checkpoint (omit with --policy random)")
    p.add_argument("--policy", choices=("checkpoint", "random"), default="checkpoint",
                   help="'random': uniformly random valid moves (baseline)")
    p.add_argument("--problem", choices=PROBLEMS, default="cvrp")
    p.add_argument("--num-customers", type=int, default=20)
    p.add_argument("--instances", type=int, default=256)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--augment", type=int, default=8, help="symmetric copies (1..8)")
    p.add_argument("--init", choices=("sweep", "nearest_neighbor", "random"), default="sweep",
                   help="starting solutions (DACT trains from random ones)")
    p.add_argument("--seed", type=int, default=1234, help="test-set seed")
    p.add_argument("--any-size", action="store_true",
                   help="allow a problem size other than the one trained on")
    p.add_argument("--reference", choices=("pyvrp", "none"), default="pyvrp")
    p.add_argument("--time-limit", type=float, default=1.0, help="PyVRP seconds per instance")
    p.add_argument("--root", default="data", help="dataset cache for the reference")
    p.add_argument("--json", action="store_true", help="print a JSON object")


def _devices(value: str, accelerator: str) -> int | str:
    """Parse ``--devices`` and refuse more devices than this machine has."""
    if value == "auto":
        return value
    count = int(value)
    if count < 1:
        raise ValueError(f"--devices must be >= 1, got {count}")
    use_gpu = accelerator in ("gpu", "cuda") or (accelerator == "auto"
                                                 and torch.cuda.is_available())
    have = torch.cuda.device_count() if use_gpu else (os.cpu_count() or 1)
    kind = "GPU" if use_gpu else "CPU core"
    if count > have:
        raise ValueError(f"--devices {count} asks for more than the {have} {kind}(s) "
                         f"available here")
    return count


def run_train(args: argparse.Namespace) -> dict[str, Any]:
    import lightning as L
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.loggers import CSVLogger

    from pyg_routing.training.datamodule import RoutingDataModule
    from pyg_routing.training.ppo import DACTLightning

    devices = _devices(args.devices, args.accelerator)
    out = Path(args.out) / f"{args.backbone}_{args.problem}{args.num_customers}_{args.pe}"
    model = DACTLightning(problem=args.problem, num_customers=args.num_customers, pe=args.pe,
                          dim=args.dim, heads=args.heads, num_layers=args.layers,
                          pe_dim=args.pe_dim, batch_size=args.batch_size,
                          t_train=args.t_train, n_step=args.n_step, val_steps=args.val_steps,
                          seed=args.seed)
    data = RoutingDataModule(args.problem, args.num_customers, batch_size=args.batch_size,
                             batches_per_epoch=args.batches_per_epoch, val_size=args.val_size,
                             seed=args.seed)
    checkpoint = ModelCheckpoint(dirpath=out / "checkpoints", save_last=True)
    trainer = L.Trainer(
        max_epochs=args.epochs, accelerator=args.accelerator, devices=devices,
        strategy=args.strategy, precision=args.precision, default_root_dir=out,
        logger=CSVLogger(out, name="logs"), callbacks=[checkpoint],
        max_time=None if args.max_minutes is None else {"minutes": args.max_minutes},
        log_every_n_steps=max(1, min(50, args.batches_per_epoch)),
        enable_progress_bar=not args.no_progress)
    start = time.perf_counter()
    trainer.fit(model, data, ckpt_path=args.resume)
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    return {"checkpoint": checkpoint.last_model_path, "epochs": trainer.current_epoch,
            "global_step": trainer.global_step, "seconds": time.perf_counter() - start,
            "metrics": metrics}


def run_evaluate(args: argparse.Namespace) -> dict[str, Any]:
    from pyg_routing.data.generators import make_generator
    from pyg_routing.envs.rollout import improve
    from pyg_routing.training.ppo import load_policy

    policy = None
    if args.policy == "checkpoint":
        if args.checkpoint is None:
            raise ValueError("evaluate needs --checkpoint (or --policy random)")
        hp = torch.load(args.checkpoint, map_location="cpu",
                        weights_only=False).get("hyper_parameters", {})
        trained = hp.get("num_customers")
        if trained is not None and trained != args.num_customers and not args.any_size:
            raise ValueError(f"checkpoint {args.checkpoint} was trained on "
                             f"{args.problem}-{trained}, but --num-customers is "
                             f"{args.num_customers}; pass --any-size to evaluate anyway")
        policy = load_policy(args.checkpoint, expect_problem=args.problem)
    instances = make_generator(args.problem, args.num_customers, seed=args.seed).sample(
        args.instances)
    result = improve(instances, policy, steps=args.steps, init=args.init, augment=args.augment,
                     generator=torch.Generator().manual_seed(args.seed))
    out: dict[str, Any] = {
        "policy": args.policy if policy is None else args.checkpoint,
        "problem": args.problem, "num_customers": args.num_customers,
        "instances": args.instances, "steps": args.steps, "augment": args.augment,
        "init": args.init,
        "initial_cost": float(result.initial_cost.mean()),
        "cost": float(result.best_cost.mean()), "seconds": result.seconds}
    if args.reference == "pyvrp":
        from pyg_routing.data.dataset import RoutingDataset

        ref = RoutingDataset(args.root, args.problem, args.num_customers, args.instances,
                             seed=args.seed, solver="pyvrp", time_limit=args.time_limit,
                             progress=False)
        ref_cost = torch.stack([d.cost() for d in ref]).double()
        gap = (result.best_cost.double() - ref_cost) / ref_cost
        out.update(reference_cost=float(ref_cost.mean()), gap_percent=float(100 * gap.mean()))
    return out
