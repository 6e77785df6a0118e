"""Budgets that bound a whole training run, and stopping when told.

:class:`RunBudget` is a Lightning callback that the training commands add to every fit.
It holds the run's deadline (``--max_minutes``) and watches Lightning's own SIGTERM flag
(``trainer.received_sigterm``, set by Lightning's signal handler). A backbone's training
step asks :meth:`ImprovementLightning.stop_requested` between its chunks (PPO: every
n-step chunk; NDS: every training iteration) and the validation search asks it before
every iteration, so a stop is honoured within one chunk, not at the next batch or epoch
boundary. When a batch ends with a stop requested, the callback saves a resumable
``last.ckpt`` and ends the fit; a SIGTERM then makes :func:`~.fit.fit` raise
:class:`~pyg_routing.errors.RunInterrupted` (a non-zero exit), a spent budget ends the
run normally.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import lightning as L


class RunBudget(L.Callback):
    """The run's deadline and stop requests (see the module docstring).

    Args:
        max_minutes: wall-clock minutes of the whole fit, validation included
            (``None``: no deadline).
        checkpoint: where the resumable checkpoint of a stopped run is written.
    """

    def __init__(self, max_minutes: float | None = None,
                 checkpoint: str | Path | None = None) -> None:
        self.max_minutes = max_minutes
        self.checkpoint = None if checkpoint is None else Path(checkpoint)
        self.start = time.monotonic()
        self.stopped_by: str | None = None
        self.saved: str | None = None

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.start = time.monotonic()

    def reason(self, trainer: L.Trainer) -> str | None:
        """Why the run should stop now (``"SIGTERM"``, ``"max_minutes"``), else ``None``."""
        if getattr(trainer, "received_sigterm", False):
            return "SIGTERM"
        if self.max_minutes is not None and \
                time.monotonic() - self.start > 60.0 * self.max_minutes:
            return "max_minutes"
        return None

    def _stop(self, trainer: L.Trainer) -> None:
        reason = self.reason(trainer)
        if reason is None or trainer.sanity_checking:
            return
        trainer.should_stop = True
        if self.stopped_by is None:
            self.stopped_by = reason
            if self.checkpoint is not None:
                trainer.save_checkpoint(self.checkpoint)
                self.saved = str(self.checkpoint)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule,
                           outputs: Any, batch: Any, batch_idx: int) -> None:
        self._stop(trainer)

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._stop(trainer)


def stop_requested(trainer: L.Trainer | None) -> bool:
    """Whether the fit ``trainer`` runs was asked to stop (its :class:`RunBudget`, or
    Lightning's SIGTERM flag when it has none)."""
    if trainer is None:
        return False
    budget = next((c for c in trainer.callbacks if isinstance(c, RunBudget)), None)
    if budget is not None:
        return budget.reason(trainer) is not None
    return bool(getattr(trainer, "received_sigterm", False))
