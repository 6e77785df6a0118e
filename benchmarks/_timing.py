"""Shared timing helper for the benchmark scripts."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch


def best_of(fn: Callable[[], object], repeat: int = 5, device: str = "cpu") -> float:
    """Best wall time in seconds of ``repeat`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return min(times)
