"""One DACT training run with Lightning, shared by ``pyg-routing train`` and ``compare``.

:func:`add_training_options` declares the model, PPO and Trainer options on an
argparse parser; :func:`fit_dact` turns such options into a
:class:`~pyg_routing.training.ppo.DACTLightning`, a
:class:`~pyg_routing.training.datamodule.RoutingDataModule` and a ``lightning.Trainer``
(CSV logs and ``last.ckpt`` under ``out``) and fits them.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from pyg_routing.functional.route_pe import FREQUENCIES
from pyg_routing.models.gps_encoder import LOCAL_MPS, check_pe_init
from pyg_routing.transforms.ipe import IPE_DIRECTIONS

#: Validation instances use this seed offset from the training seed (disjoint seeds).
VAL_SEED_OFFSET = 10**9
#: Problems of the DACT 2-opt environment (``train``, ``evaluate``, ``compare``).
PROBLEMS = ("tsp", "cvrp", "vrptw")


def wants_gpu(accelerator: str) -> bool:
    """Whether ``--accelerator`` asks for GPUs (``auto``: when CUDA is available)."""
    return accelerator in ("gpu", "cuda") or (accelerator == "auto"
                                              and torch.cuda.is_available())


def add_training_options(p: argparse.ArgumentParser, *, batch_size: int = 512,
                         t_train: int = 200, batches_per_epoch: int = 20, val_size: int = 256,
                         val_steps: int = 200) -> None:
    """Model, PPO and ``lightning.Trainer`` options (defaults: DACT's, scaled where given)."""
    p.add_argument("--dim", type=int, default=64, help="model width")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--pe-dim", type=int, default=32, help="width of node encodings")
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--t-train", type=int, default=t_train, help="environment steps per batch")
    p.add_argument("--n-step", type=int, default=4, help="PPO n-step length")
    p.add_argument("--epochs", type=int, default=100, help="maximum number of epochs")
    p.add_argument("--batches-per-epoch", type=int, default=batches_per_epoch)
    p.add_argument("--val-size", type=int, default=val_size)
    p.add_argument("--val-steps", type=int, default=val_steps)
    p.add_argument("--lr-actor", type=float, default=1e-4,
                   help="Adam learning rate of encoder + decoder (DACT: 1e-4)")
    p.add_argument("--lr-critic", type=float, default=3e-5,
                   help="Adam learning rate of the critic (DACT: 3e-5)")
    p.add_argument("--pe-init", type=_pe_init_option, default="zero",
                   help="first-layer weights on the node code: zero (default; every "
                        "encoding starts as the No-PE model of the same seed), default "
                        "(PyTorch's init over the concatenated fan-in, where the code "
                        "channels drown the node features at the start), or a number s "
                        "(the No-PE model plus a code block s times PyTorch's draw)")
    p.add_argument("--ipe-frequencies", choices=FREQUENCIES, default="harmonic",
                   help="IPE frequencies of ipe/ipexpe: harmonic (default, k + 1: exactly "
                        "circular and reversal-invariant) or geometric (the paper's printed "
                        "lambda^(-2k/D), which is neither)")
    p.add_argument("--ipe-direction", choices=IPE_DIRECTIONS, default="auto",
                   help="IPE variant of ipe/ipexpe: auto (default; direction-aware for "
                        "VRPTW/PDTSP, the reversal-invariant cosine code for TSP/CVRP, as "
                        "the paper picks), aware or invariant (the paper's direction "
                        "ablation)")
    p.add_argument("--local-mp", choices=LOCAL_MPS, default="directed",
                   help="the encoder's message passing over the route graph: directed "
                        "(default; separate GINs for predecessor and successor, so nodes "
                        "know the tour direction the 2-opt moves are defined in), "
                        "undirected (one GIN over both arc directions), or none (the "
                        "paper's plain Transformer, Sec. 3.3, which sees the solution only "
                        "through the encoding)")
    p.add_argument("--no-local-mp", dest="local_mp", action="store_const", const="none",
                   help="same as --local-mp none")
    p.add_argument("--compile", action="store_true",
                   help="score move pairs with torch.compile where no gradient flows "
                        "(validation, warm-up, the saved policy's search; the first call "
                        "compiles for a few seconds; needs a C++ compiler on CPU)")
    p.add_argument("--seed", type=int, default=0,
                   help="training seed: initial weights, batches and sampled moves")
    p.add_argument("--accelerator", default="auto", help="lightning accelerator")
    p.add_argument("--devices", default="1", help="number of devices (or 'auto')")
    p.add_argument("--strategy", default="auto", help="lightning strategy, e.g. ddp")
    p.add_argument("--precision", default="32-true", help="e.g. 32-true, bf16-mixed, 16-mixed")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def _pe_init_option(value: str) -> str | float:
    """``--pe-init`` parsed by :func:`check_pe_init`, refused as an argparse error."""
    try:
        return check_pe_init(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def parse_devices(value: str, accelerator: str) -> int | str:
    """Parse ``--devices`` and refuse more devices than this machine has."""
    if value == "auto":
        return value
    count = int(value)
    if count < 1:
        raise ValueError(f"--devices must be >= 1, got {count}")
    use_gpu = wants_gpu(accelerator)
    have = torch.cuda.device_count() if use_gpu else (os.cpu_count() or 1)
    kind = "GPU" if use_gpu else "CPU core"
    if count > have:
        raise ValueError(f"--devices {count} asks for more than the {have} {kind}(s) "
                         f"available here")
    return count


def fit_dact(args: argparse.Namespace, pe: str, out: Path, *, max_minutes: float | None = None,
             resume: str | None = None, callbacks: Sequence[Any] = ()) -> dict[str, Any]:
    """Train one DACT policy with encoding ``pe`` as ``args`` (see
    :func:`add_training_options`) say; logs and checkpoints go to ``out``.

    Returns:
        ``checkpoint`` (path of ``last.ckpt``), ``best_checkpoint`` (``best.ckpt``, the
        lowest ``val/cost`` so far; ``""`` when no validation ran) and its
        ``best_val_cost``, ``epochs``, ``global_step``, ``seconds`` (wall time of
        ``fit``) and the last logged ``metrics``.
    """
    import lightning as L
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.loggers import CSVLogger

    from pyg_routing.training.datamodule import RoutingDataModule
    from pyg_routing.training.ppo import DACTLightning

    devices = parse_devices(args.devices, args.accelerator)
    # --seed fixes the initial weights too (the batches and search draws are seeded
    # inside DACTLightning): the same command gives the same model in any process.
    L.seed_everything(args.seed, workers=True, verbose=False)
    model = DACTLightning(problem=args.problem, num_customers=args.num_customers, pe=pe,
                          dim=args.dim, heads=args.heads, num_layers=args.layers,
                          pe_dim=args.pe_dim, batch_size=args.batch_size,
                          t_train=args.t_train, n_step=args.n_step, val_steps=args.val_steps,
                          lr_actor=args.lr_actor, lr_critic=args.lr_critic, seed=args.seed,
                          pe_init=args.pe_init, compiled=args.compile,
                          ipe_frequencies=args.ipe_frequencies,
                          ipe_direction=args.ipe_direction,
                          local_mp=args.local_mp)
    # One validation batch holding the whole set: it is then exactly the instances of
    # ``RoutingDataset(..., num_instances=val_size, seed=seed + VAL_SEED_OFFSET)``.
    data = RoutingDataModule(args.problem, args.num_customers, batch_size=args.batch_size,
                             batches_per_epoch=args.batches_per_epoch, val_size=args.val_size,
                             val_batch_size=args.val_size, seed=args.seed,
                             val_seed=args.seed + VAL_SEED_OFFSET)
    checkpoint = ModelCheckpoint(dirpath=out / "checkpoints", save_last=True)
    # A second, separate callback keeps the weights of the lowest validation cost as
    # checkpoints/best.ckpt (overwritten in place), leaving last.ckpt's schedule and
    # the exact-resume path as they are.
    best = ModelCheckpoint(dirpath=out / "checkpoints", filename="best", monitor="val/cost",
                           mode="min", save_top_k=1, enable_version_counter=False)
    trainer = L.Trainer(
        max_epochs=args.epochs, accelerator=args.accelerator, devices=devices,
        strategy=args.strategy, precision=args.precision, default_root_dir=out,
        logger=CSVLogger(out, name="logs"), callbacks=[checkpoint, best, *callbacks],
        max_time=None if max_minutes is None else {"seconds": 60.0 * max_minutes},
        log_every_n_steps=max(1, min(50, args.batches_per_epoch)),
        enable_progress_bar=not args.no_progress, enable_model_summary=not args.no_progress)
    start = time.perf_counter()
    trainer.fit(model, data, ckpt_path=resume)
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    best_score = best.best_model_score
    return {"checkpoint": checkpoint.last_model_path, "best_checkpoint": best.best_model_path,
            "best_val_cost": None if best_score is None else float(best_score),
            "epochs": trainer.current_epoch, "global_step": trainer.global_step,
            "seconds": time.perf_counter() - start, "metrics": metrics}
