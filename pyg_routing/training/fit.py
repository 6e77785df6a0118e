"""One training run with Lightning, shared by ``pyg-routing train`` and ``compare``.

:func:`add_training_options` declares the backbone's hyper-parameters (from the
registered configurations, :mod:`.config`) and the run's options (epochs, data,
``lightning.Trainer``) on an argparse parser; :func:`fit` turns such options into
the backbone's ``LightningModule``, a
:class:`~pyg_routing.training.datamodule.RoutingDataModule` and a ``lightning.Trainer``
(CSV logs, ``last.ckpt`` and ``best.ckpt`` under ``out``) and fits them.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from pyg_routing.training import backbones
from pyg_routing.training.config import add_config_options

#: Validation instances use this seed offset from the training seed (disjoint seeds).
VAL_SEED_OFFSET = 10**9


def count(low: int) -> Any:
    """An argparse type: an integer ``>= low`` (the error names the option)."""
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {value!r}") from None
        if number < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {number}")
        return number
    parse.__name__ = f"integer >= {low}"
    return parse


def positive(value: str) -> float:
    """An argparse type: a finite number ``> 0``."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {value!r}") from None
    if not 0 < number < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {value!r}")
    return number


def add_backbone_option(p: argparse.ArgumentParser) -> None:
    names = list(backbones.available())
    p.add_argument("--backbone", choices=names, default=names[0],
                   help="improvement backbone: " + "; ".join(
                       f"{k} ({v})" for k, v in backbones.available().items()))


def add_training_options(p: argparse.ArgumentParser, defaults: dict[str, Any] | None = None,
                         *, batches_per_epoch: int = 20, val_size: int = 256) -> None:
    """The backbones' hyper-parameters (each backbone's defaults unless ``defaults``
    says otherwise) and the run's options."""
    add_config_options(p, [backbones.get(b).config_class for b in backbones.available()],
                       defaults)
    p.add_argument("--no-local-mp", dest="local_mp", action="store_const", const="none",
                   default=argparse.SUPPRESS, help="same as --local-mp none")
    p.add_argument("--epochs", type=count(1), default=100, help="maximum number of epochs")
    p.add_argument("--batches-per-epoch", type=count(1), default=batches_per_epoch)
    p.add_argument("--val-size", type=count(1), default=val_size,
                   help="validation instances")
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


def wants_gpu(accelerator: str) -> bool:
    """Whether ``--accelerator`` asks for GPUs (``auto``: when CUDA is available)."""
    return accelerator in ("gpu", "cuda") or (accelerator == "auto"
                                              and torch.cuda.is_available())


def parse_devices(value: str, accelerator: str) -> int | str:
    """Parse ``--devices`` and refuse more devices than this machine has."""
    if value == "auto":
        return value
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"--devices must be an integer or 'auto', got {value!r}") from None
    if number < 1:
        raise ValueError(f"--devices must be >= 1, got {number}")
    use_gpu = wants_gpu(accelerator)
    have = torch.cuda.device_count() if use_gpu else (os.cpu_count() or 1)
    kind = "GPU" if use_gpu else "CPU core"
    if number > have:
        raise ValueError(f"--devices {number} asks for more than the {have} {kind}(s) "
                         f"available here")
    return number


def build_model(args: argparse.Namespace, pe: str) -> Any:
    """The backbone's ``LightningModule`` for the options ``args`` and encoding ``pe``
    (draws the initial weights from the global RNG)."""
    lightning = backbones.get(args.backbone)
    config = lightning.config_class.from_options(args, pe=pe, compiled=args.compile)
    return lightning(**config.to_dict())


def fit(args: argparse.Namespace, pe: str, out: Path, *, max_minutes: float | None = None,
        resume: str | None = None, callbacks: Sequence[Any] = ()) -> dict[str, Any]:
    """Train one policy of ``args.backbone`` with encoding ``pe`` as ``args`` (see
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

    devices = parse_devices(args.devices, args.accelerator)
    # --seed fixes the initial weights too (the batches and search draws are seeded
    # inside the module): the same command gives the same model in any process.
    L.seed_everything(args.seed, workers=True, verbose=False)
    model = build_model(args, pe)
    # One validation batch holding the whole set: it is then exactly the instances of
    # ``RoutingDataset(..., num_instances=val_size, seed=seed + VAL_SEED_OFFSET)``.
    data = RoutingDataModule(args.problem, args.num_customers,
                             batch_size=model.config.batch_size,
                             batches_per_epoch=args.batches_per_epoch, val_size=args.val_size,
                             val_batch_size=args.val_size, seed=args.seed,
                             val_seed=args.seed + VAL_SEED_OFFSET,
                             **model.config.data_options())
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
    if resume is not None:
        backbones.read_checkpoint(resume)           # a clear error for a foreign file
    start = time.perf_counter()
    trainer.fit(model, data, ckpt_path=resume)
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    best_score = best.best_model_score
    return {"checkpoint": checkpoint.last_model_path, "best_checkpoint": best.best_model_path,
            "best_val_cost": None if best_score is None else float(best_score),
            "epochs": trainer.current_epoch, "global_step": trainer.global_step,
            "seconds": time.perf_counter() - start, "metrics": metrics}
