"""Lightning callbacks of the training commands."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint


class ValidationCurve(L.Callback):
    """Records ``(seconds since fit start, epoch, global step, mean validation cost)``
    after every validation pass (not Lightning's sanity check, a two-instance check of
    the pipeline that returns no cost).

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
        if not self._count or trainer.sanity_checking:
            return
        self.points.append({
            "seconds": time.perf_counter() - self._start,
            "epoch": float(trainer.current_epoch), "step": float(trainer.global_step),
            "cost": self._sum / self._count})



class BestCheckpoint(ModelCheckpoint):
    """``checkpoints/best.ckpt``: the weights of the lowest ``val/cost`` so far. A
    validation that recorded no cost (cut short because the run was told to stop) keeps
    the best so far instead of failing (Lightning's own callback refuses a pass without
    its monitored key)."""

    def __init__(self, dirpath: str | Path) -> None:
        super().__init__(dirpath=dirpath, filename="best", monitor="val/cost", mode="min",
                         save_top_k=1, enable_version_counter=False)

    def _save_topk_checkpoint(self, trainer: L.Trainer,
                              monitor_candidates: dict[str, torch.Tensor]) -> None:
        if self.monitor in monitor_candidates:
            super()._save_topk_checkpoint(trainer, monitor_candidates)
