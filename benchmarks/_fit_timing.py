"""Timing helpers of ``bench_vs_rl4co.py``'s sections: interleaved rounds, Lightning
fits timed per batch, rl4co rollouts, and the table."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import lightning as L
import torch

REPEAT = 5         # inference: best of 5 interleaved rounds for every runner
TRAIN_ROUNDS = 3   # training: best batch over 3 interleaved short fits per runner


class BatchTimer(L.Callback):
    """Wall time of every training batch."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def on_train_batch_start(self, *args: object) -> None:
        self._t = time.perf_counter()

    def on_train_batch_end(self, *args: object) -> None:
        self.times.append(time.perf_counter() - self._t)


def trainer(timer: BatchTimer, batches: int) -> L.Trainer:
    return L.Trainer(max_epochs=1, limit_train_batches=batches, limit_val_batches=0,
                     num_sanity_val_steps=0, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False, callbacks=[timer],
                     accelerator="cpu")


def fastest_batch(times: list[float]) -> float:
    """Seconds of the fastest batch after the first (warm-up): the machine's noise
    only ever adds time."""
    return min(times[1:] or times)


def fit_runner(model: Callable[[], L.LightningModule], batches: int,
               data: Callable[[], Any] | None = None) -> Callable[[int], float]:
    """A short fit of a fresh ``model()`` (on ``data()``, or the model's own data):
    ``run(round) -> seconds`` of its fastest timed batch."""
    def run(_: int) -> float:
        timer = BatchTimer()
        trainer(timer, batches).fit(model(), None if data is None else data())
        return fastest_batch(timer.times)
    return run


def rl4co_rollout(env: Any, model: Any, b: int, steps: int) -> Callable[[int], float]:
    """rl4co's test-phase rollout of ``steps`` steps on ``b`` instances (after two
    warm-up steps): ``run(round) -> seconds``."""
    policy = model.policy.eval()
    td = env.reset(batch_size=[b])
    with torch.no_grad():
        for _ in range(2):                                           # warm-up
            policy(td, env, phase="test")
            env.step(td)

    def run(_: int) -> float:
        with torch.no_grad():
            start = time.perf_counter()
            for _ in range(steps):
                policy(td, env, phase="test")
                env.step(td)
            return time.perf_counter() - start
    return run


def interleaved_rates(runners: dict[Any, Callable[[int], float]], inst_steps: int | dict,
                      repeat: int = REPEAT) -> dict[Any, float]:
    """Instance-steps/s of every runner, best of ``repeat`` rounds that time each
    runner once in turn, so a slow phase of the machine hits all of them alike.
    ``inst_steps``: instance-steps of one run, for all runners or per runner."""
    best = dict.fromkeys(runners, math.inf)
    for r in range(repeat):
        for name, run in runners.items():
            best[name] = min(best[name], run(r))
    work = inst_steps if isinstance(inst_steps, dict) else dict.fromkeys(runners, inst_steps)
    return {name: work[name] / sec for name, sec in best.items()}


def print_table(rows: list[tuple[str, float, float | None]]) -> None:
    print(f"{'':25s} {'ours inst-steps/s':>18s} {'rl4co inst-steps/s':>19s} {'ratio':>7s}")
    for name, ours, ref in rows:
        ref_s = "-" if ref is None else f"{ref:.0f}"
        ratio = "-" if ref is None else f"{ours / ref:.1f}x"
        print(f"{name:25s} {ours:18.0f} {ref_s:>19s} {ratio:>7s}")
