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


def count(low: int, high: int | None = None) -> Any:
    """An argparse type: an integer ``>= low`` (and ``<= high``; the error names the
    option)."""
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {value!r}") from None
        if high is not None and not low <= number <= high:
            raise argparse.ArgumentTypeError(f"must be an integer in {low}..{high}, "
                                             f"got {number}")
        if number < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {number}")
        return number
    parse.__name__ = f"integer >= {low}" if high is None else f"integer in {low}..{high}"
    return parse


#: Lightning's ``seed_everything`` takes seeds in ``0 .. MAX_SEED`` (numpy's range)
MAX_SEED = 2**32 - 1
#: an argparse type: the seed of generated instances, of a solver or of a search
seed_value = count(0)
#: an argparse type: a training seed (``seed_everything``'s range)
training_seed = count(0, MAX_SEED)


def training_seeds(value: str) -> list[int]:
    """An argparse type: comma-separated distinct training seeds (``compare --seeds``)."""
    try:
        seeds = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated integers, "
                                         f"got {value!r}") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"needs distinct integers, got {value!r}")
    if not all(0 <= s <= MAX_SEED for s in seeds):
        raise argparse.ArgumentTypeError(f"must be integers in 0..{MAX_SEED}, got {value!r}")
    return seeds


def positive(value: str) -> float:
    """An argparse type: a finite number ``> 0``."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {value!r}") from None
    if not 0 < number < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {value!r}")
    return number


#: the namespace attribute where the command line's parser records the options the
#: user typed: ``{dest: flag as typed}`` (``pyg_routing.cli``)
GIVEN = "_typed_options"


def record_given(parser: argparse.ArgumentParser, arg_strings: Sequence[str],
                 namespace: argparse.Namespace) -> None:
    """Record on ``namespace`` which of ``parser``'s options ``arg_strings`` gave
    (``--flag value`` and ``--flag=value``, up to ``--``), so a command can refuse an
    option that does not apply even when its value equals the default."""
    flags = parser._option_string_actions             # argparse's flag -> action map
    typed = dict(getattr(namespace, GIVEN, {}))
    for token in arg_strings:
        if token == "--":
            break
        flag = token.split("=", 1)[0] if token.startswith("--") else token
        action = flags.get(flag)
        if action is not None and action.dest != argparse.SUPPRESS:
            typed.setdefault(action.dest, flag)
    setattr(namespace, GIVEN, typed)


def given(args: argparse.Namespace, *dests: str) -> str | None:
    """The first of the options ``dests`` that the user typed, as typed (``None``: none
    of them; a namespace not made by the command line's parser records none)."""
    typed = getattr(args, GIVEN, {})
    return next((typed[d] for d in dests if d in typed), None)


def refuse_given(args: argparse.Namespace, dests: Sequence[str], why: str) -> None:
    """``ValueError`` ``"<flag> <value> <why>"`` for the first of ``dests`` the user
    typed (an option that does not apply to what the other options ask for)."""
    typed = getattr(args, GIVEN, {})
    for dest in dests:
        if dest in typed:
            value = getattr(args, dest, None)
            shown = "" if isinstance(value, bool) or value is None else f" {value}"
            raise ValueError(f"{typed[dest]}{shown} {why}")


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
    p.add_argument("--seed", type=training_seed, default=0,
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


def lightning_errors() -> tuple[type[BaseException], ...]:
    """What Lightning raises for ``Trainer`` options it cannot use: its
    ``MisconfigurationException`` (an accelerator that is not there, a strategy whose
    package is missing, ``devices=0``), ``ValueError`` (an unknown accelerator, strategy
    or precision name), ``TypeError`` (bad ``devices``) and ``ImportError`` (``tpu``,
    ``transformer-engine`` without their packages)."""
    from lightning.fabric.utilities.exceptions import MisconfigurationException

    return (MisconfigurationException, ValueError, TypeError, ImportError)


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (Lightning's span several)."""
    return " ".join(line.strip() for line in str(exc).splitlines() if line.strip())


def _bare_trainer(**options: Any) -> Any:
    """A ``lightning.Trainer`` with ``options`` that logs and writes nothing (its
    warnings, if any, are those the real Trainer gives, shown once as before: a
    ``warnings.catch_warnings`` here would reset Python's once-per-place registry and
    repeat other warnings later)."""
    import logging

    import lightning as L

    level = logging.root.manager.disable
    logging.disable(logging.INFO)                  # "GPU available: ..." notices
    try:
        return L.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, **options)
    finally:
        logging.disable(level)


def check_trainer(accelerator: str, devices: int | str = 1, *, num_nodes: int = 1,
                  strategy: str = "auto", precision: str = "32-true") -> int | str:
    """Refuse ``lightning.Trainer`` options this machine cannot run, in one line naming
    the option and what was found, before anything is written or trained; returns
    ``--devices`` parsed (:func:`parse_devices`).

    ``--accelerator gpu``/``cuda`` without CUDA and ``--devices`` beyond this machine are
    refused here; every other refusal is Lightning's own (an accelerator that is not
    there, an unknown strategy or precision, a missing package), raised while a bare
    ``Trainer`` is built and named by the first option that makes it fail.
    ``--precision 16-mixed`` on the CPU is refused too: Lightning would silently run
    ``bf16-mixed`` instead.

    Raises:
        ValueError: ``"--<option> <value>: <what is wrong>"``.
    """
    if accelerator in ("gpu", "cuda") and not torch.cuda.is_available():
        raise ValueError(f"--accelerator {accelerator}: no CUDA device is available here")
    number = parse_devices(str(devices), accelerator)
    cpu = accelerator == "cpu" or (accelerator == "auto" and not torch.cuda.is_available()
                                   and not torch.backends.mps.is_available())
    if str(precision) in ("16", "16-mixed") and cpu:       # before Lightning warns of it
        _refuse_fp16_on_cpu(precision)
    options = {"accelerator": accelerator, "devices": number, "num_nodes": num_nodes,
               "strategy": strategy, "precision": precision}
    errors = lightning_errors()
    try:
        trainer = _bare_trainer(**options)
    except errors as exc:
        tried: dict[str, Any] = {}
        for name, value in options.items():     # the first option that fails names it
            tried[name] = value
            try:
                _bare_trainer(**tried)
            except errors as culprit:
                raise ValueError(f"--{name.replace('_', '-')} {value}: "
                                 f"{one_line(culprit)}") from None
        raise ValueError(f"--accelerator {accelerator} --devices {devices} --strategy "
                         f"{strategy} --precision {precision}: {one_line(exc)}") from None
    from lightning.pytorch.accelerators import CPUAccelerator

    if str(precision) in ("16", "16-mixed") and isinstance(trainer.accelerator, CPUAccelerator):
        _refuse_fp16_on_cpu(precision)
    return number


def _refuse_fp16_on_cpu(precision: str) -> None:
    raise ValueError(f"--precision {precision}: float16 mixed precision needs a GPU and this "
                     f"run is on the CPU (Lightning would run bf16-mixed instead; pass "
                     f"--precision bf16-mixed)")


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

    devices = check_trainer(args.accelerator, args.devices, strategy=args.strategy,
                            precision=args.precision)
    # --seed fixes the initial weights too (the batches and search draws are seeded
    # inside the module): the same command gives the same model in any process.
    L.seed_everything(args.seed, workers=True, verbose=False)
    model = build_model(args, pe)
    # resume reads the file as data, as read_checkpoint does, unless --trust-checkpoint;
    # a foreign file or another backbone's or architecture's checkpoint is refused here,
    # before Lightning writes a log folder
    trust = bool(getattr(args, "trust_checkpoint", False))
    if resume is not None:
        model.check_resume(backbones.read_checkpoint(resume, trust=trust), resume)
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
    start = time.perf_counter()
    trainer.fit(model, data, ckpt_path=resume, weights_only=not trust)
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    best_score = best.best_model_score
    return {"checkpoint": checkpoint.last_model_path, "best_checkpoint": best.best_model_path,
            "best_val_cost": None if best_score is None else float(best_score),
            "epochs": trainer.current_epoch, "global_step": trainer.global_step,
            "seconds": time.perf_counter() - start, "metrics": metrics}
