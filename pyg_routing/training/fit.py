"""One training run with Lightning, shared by ``pyg-routing train`` and ``compare``.

:func:`fit` turns a backbone's configuration (a recipe:
:class:`~pyg_routing.training.config.BackboneConfig`) into the backbone's
``LightningModule``, a :class:`~pyg_routing.training.datamodule.RoutingDataModule` and a
``lightning.Trainer`` (CSV logs, ``last.ckpt`` and ``best.ckpt`` under ``out``) and
fits them. :func:`check_trainer` refuses Trainer options this machine cannot run
before anything is written.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from pyg_routing.errors import one_line
from pyg_routing.training import backbones
from pyg_routing.training.config import BackboneConfig

#: Validation instances use this seed offset from the training seed (disjoint seeds).
VAL_SEED_OFFSET = 10**9


def wants_gpu(accelerator: str) -> bool:
    """Whether ``--accelerator`` asks for GPUs (``auto``: when CUDA is available)."""
    return accelerator in ("gpu", "cuda") or (accelerator == "auto"
                                              and torch.cuda.is_available())


#: how the command line spells the Trainer options (``train``, ``compare``)
TRAINER_FLAGS = {"accelerator": "--trainer.accelerator", "devices": "--trainer.devices",
                 "num_nodes": "--trainer.num_nodes", "strategy": "--trainer.strategy",
                 "precision": "--trainer.precision"}


def parse_devices(value: str, accelerator: str, flag: str = "--trainer.devices"
                  ) -> int | str:
    """Parse a number of devices (``flag``) and refuse more than this machine has."""
    if value == "auto":
        return value
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{flag} must be an integer or 'auto', got {value!r}") from None
    if number < 1:
        raise ValueError(f"{flag} must be >= 1, got {number}")
    use_gpu = wants_gpu(accelerator)
    have = torch.cuda.device_count() if use_gpu else (os.cpu_count() or 1)
    kind = "GPU" if use_gpu else "CPU core"
    if number > have:
        raise ValueError(f"{flag} {number} asks for more than the {have} {kind}(s) "
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


def _bare_trainer(**options: Any) -> Any:
    """A ``lightning.Trainer`` with ``options`` that logs, writes and warns nothing: its
    warnings are those the real Trainer built with the same options gives next, shown
    there (or kept off by :func:`quiet_lightning`), once; leaving the
    ``warnings.catch_warnings`` here resets Python's once-per-place registry, so they
    are not lost."""
    import logging

    import lightning as L

    level = logging.root.manager.disable
    logging.disable(logging.INFO)                  # "GPU available: ..." notices
    try:
        with warnings.catch_warnings(record=True):
            return L.Trainer(logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False, **options)
    finally:
        logging.disable(level)


def check_trainer(accelerator: str, devices: int | str = 1, *, num_nodes: int = 1,
                  strategy: str = "auto", precision: str = "32-true",
                  flags: dict[str, str] | None = None) -> int | str:
    """Refuse ``lightning.Trainer`` options this machine cannot run, in one line naming
    the option and what was found, before anything is written or trained; returns
    ``--devices`` parsed (:func:`parse_devices`).

    ``--accelerator gpu``/``cuda`` without CUDA and ``--devices`` beyond this machine are
    refused here; every other refusal is Lightning's own (an accelerator that is not
    there, an unknown strategy or precision, a missing package), raised while a bare
    ``Trainer`` is built and named by the first option that makes it fail.
    ``--precision 16-mixed`` on the CPU is refused too: Lightning would silently run
    ``bf16-mixed`` instead. ``flags`` spells the options as the command took them
    (default :data:`TRAINER_FLAGS`).

    Raises:
        ValueError: ``"--<option> <value>: <what is wrong>"``.
    """
    flags = {**TRAINER_FLAGS, **(flags or {})}
    if accelerator in ("gpu", "cuda") and not torch.cuda.is_available():
        raise ValueError(f"{flags['accelerator']} {accelerator}: no CUDA device is available "
                         f"here")
    number = parse_devices(str(devices), accelerator, flags["devices"])
    cpu = accelerator == "cpu" or (accelerator == "auto" and not torch.cuda.is_available()
                                   and not torch.backends.mps.is_available())
    if str(precision) in ("16", "16-mixed") and cpu:       # before Lightning warns of it
        _refuse_fp16_on_cpu(precision, flags["precision"])
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
                raise ValueError(f"{flags[name]} {value}: {one_line(culprit)}") from None
        shown = " ".join(f"{flags[k]} {v}" for k, v in options.items())
        raise ValueError(f"{shown}: {one_line(exc)}") from None
    from lightning.pytorch.accelerators import CPUAccelerator

    if str(precision) in ("16", "16-mixed") and isinstance(trainer.accelerator, CPUAccelerator):
        _refuse_fp16_on_cpu(precision, flags["precision"])
    return number


def _refuse_fp16_on_cpu(precision: str, flag: str) -> None:
    raise ValueError(f"{flag} {precision}: float16 mixed precision needs a GPU and this "
                     f"run is on the CPU (Lightning would run bf16-mixed instead; pass "
                     f"{flag} bf16-mixed)")


def build_model(config: BackboneConfig) -> Any:
    """The backbone's ``LightningModule`` for ``config`` (draws the initial weights from
    the global RNG)."""
    return backbones.get(config.backbone)(**config.to_dict())


def fit(config: BackboneConfig, out: Path, *, max_minutes: float | None = None,
        resume: str | None = None, callbacks: Sequence[Any] = (), progress: bool = True,
        verbose: bool = False, trust: bool = False,
        on_start: Callable[[], None] | None = None) -> dict[str, Any]:
    """Train one policy as ``config`` says; logs and checkpoints go to ``out``.

    ``resume`` continues a ``last.ckpt`` (read as data unless ``trust``: UNSAFE, it
    runs code from the file); ``verbose`` shows Lightning's own notices and model
    summary (off by default: a quiet terminal); ``on_start`` is called once every
    option and file was checked, before anything is written.

    Returns:
        ``checkpoint`` (path of ``last.ckpt``), ``best_checkpoint`` (``best.ckpt``, the
        lowest ``val/cost`` so far; ``""`` when no validation ran) and its
        ``best_val_cost``, ``epochs``, ``global_step``, ``seconds`` (wall time of
        ``fit``) and the last logged ``metrics``.
    """
    import lightning as L
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.loggers import CSVLogger
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    from pyg_routing.errors import RunInterrupted
    from pyg_routing.training.callbacks import BestCheckpoint
    from pyg_routing.training.datamodule import RoutingDataModule
    from pyg_routing.training.stopping import RunBudget

    config.check_training()
    t = config.trainer
    devices = check_trainer(t.accelerator, t.devices, strategy=t.strategy,
                            precision=t.precision)
    # the seed fixes the initial weights too (the batches and search draws are seeded
    # inside the module): the same recipe gives the same model in any process.
    L.seed_everything(config.seed, workers=True, verbose=False)
    model = build_model(config)
    # resume reads the file as data, as read_checkpoint does, unless trusted; a foreign
    # file or another backbone's or architecture's checkpoint is refused here, before
    # Lightning writes a log folder
    if resume is not None:
        model.check_resume(backbones.read_checkpoint(resume, trust=trust), resume)
    if on_start is not None:
        on_start()
    v = config.validate
    data = RoutingDataModule(config.problem, config.num_customers,
                             batch_size=config.train.batch_size,
                             batches_per_epoch=config.train.batches_per_epoch,
                             val_size=v.instances, val_batch_size=v.batch_size or v.instances,
                             seed=config.seed, val_seed=config.seed + VAL_SEED_OFFSET,
                             **config.data.generator_options())
    checkpoint = ModelCheckpoint(dirpath=out / "checkpoints", save_last=True)
    budget = RunBudget(max_minutes, out / "checkpoints" / "last.ckpt")
    # A second, separate callback keeps the weights of the lowest validation cost as
    # checkpoints/best.ckpt (overwritten in place), leaving last.ckpt's schedule and
    # the exact-resume path as they are.
    best = BestCheckpoint(out / "checkpoints")
    with quiet_lightning(not verbose):
        trainer = L.Trainer(
            max_epochs=config.train.epochs, accelerator=t.accelerator, devices=devices,
            strategy=t.strategy, precision=t.precision, default_root_dir=out,
            logger=CSVLogger(out, name="logs"),
            callbacks=[budget, checkpoint, best, *callbacks],
            log_every_n_steps=max(1, min(50, config.train.batches_per_epoch)),
            enable_progress_bar=shows_progress(progress), enable_model_summary=verbose)
        start = time.perf_counter()
        try:
            trainer.fit(model, data, ckpt_path=resume, weights_only=not trust)
        except SIGTERMException:
            raise RunInterrupted(
                f"stopped by SIGTERM after {trainer.global_step} optimizer steps (epoch "
                f"{trainer.current_epoch}); resume with --resume {budget.saved}"
                if budget.saved else "stopped by SIGTERM before the first batch ended; "
                "nothing to resume") from None
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    best_score = best.best_model_score
    return {"checkpoint": checkpoint.last_model_path, "best_checkpoint": best.best_model_path,
            "best_val_cost": None if best_score is None else float(best_score),
            "epochs": trainer.current_epoch, "global_step": trainer.global_step,
            "seconds": time.perf_counter() - start, "metrics": metrics,
            "stopped_by": budget.stopped_by}


def is_worker_rank() -> bool:
    """Whether this process is a distributed run's rank other than 0 (after ``fit``;
    Lightning's ``rank_zero_only.rank``): its command returns no result, so a
    ``--json`` run prints one object, rank 0's."""
    from lightning.pytorch.utilities import rank_zero_only

    return getattr(rank_zero_only, "rank", 0) != 0


def shows_progress(wanted: bool = True) -> bool:
    """Whether to draw progress bars: when wanted and stderr is a terminal (redrawn bars
    in a log file are noise)."""
    return bool(wanted) and sys.stderr.isatty()


#: Lightning's warnings about what we chose (see :func:`quiet_lightning`), as the
#: ``warnings`` filter's message patterns Lightning's "Warnings" page suggests.
_NOT_THE_USERS = (r".*does not have many workers", r"GPU available but not used")


@contextlib.contextmanager
def quiet_lightning(quiet: bool = True) -> Iterator[None]:
    """Lightning's device lines ("GPU available: ..."), tips and info-level notices
    off while ``quiet`` (its warnings that mean something still show). Two warnings are
    off too, being about our choices, not the user's: DataLoader workers (ours generate
    or hand over in-memory instances; a worker process would only copy them) and "GPU
    available but not used" (a baseline searches on the CPU by design; a CPU training is
    what the user asked for)."""
    if not quiet:
        yield
        return
    loggers = [logging.getLogger(name) for name in
               ("lightning.pytorch", "lightning.fabric", "pytorch_lightning",
                "lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            for message in _NOT_THE_USERS:
                warnings.filterwarnings("ignore", message=message)
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)
