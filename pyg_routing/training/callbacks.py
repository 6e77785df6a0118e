"""Lightning callbacks of the training commands."""

from __future__ import annotations

import time
from typing import Any

import lightning as L
import torch


class ValidationCurve(L.Callback):
    """Records ``(seconds since fit start, epoch, global step, mean validation cost)``
    after every validation pass, the sanity check included (the untrained policy,
    recorded at 0 s) when it covers the whole validation set.

    The mean is weighted by batch size and read from what
    :meth:`~pyg_routing.training.ppo.DACTLightning.validation_step` returns (the
    batch's mean best cost), so it does not depend on the logger.

    Attributes:
        points: list of dicts with keys ``seconds``, ``epoch``, ``step``, ``cost``.
    """

    def __init__(self) -> None:
        self.points: list[dict[str, float]] = []
        self._start = 0.0
        self._sum = 0.0
        self._count = 0

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._start = time.perf_counter()

    def on_validation_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule
                                  ) -> None:
        self._sum, self._count = 0.0, 0

    def on_validation_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule,
                                outputs: Any, batch: Any, batch_idx: int,
                                dataloader_idx: int = 0) -> None:
        if isinstance(outputs, torch.Tensor):
            n = len(batch)
            self._sum += float(outputs) * n
            self._count += n

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule
                                ) -> None:
        if not self._count:
            return
        sanity = trainer.sanity_checking
        if sanity and self._count < _val_size(trainer):
            return                       # a partial sanity pass is not comparable
        self.points.append({
            "seconds": 0.0 if sanity else time.perf_counter() - self._start,
            "epoch": float(trainer.current_epoch), "step": float(trainer.global_step),
            "cost": self._sum / self._count})


def _val_size(trainer: L.Trainer) -> int:
    dm = getattr(trainer, "datamodule", None)
    size = getattr(getattr(dm, "hparams", None), "val_size", None)
    return int(size) if size is not None else 0
