"""Acceptance rules of the search: keep a candidate move, or undo it.

A rule is called once per search step with the current and the candidate costs
(``[B]`` each) and the search's progress in ``[0, 1]`` (steps or wall-clock time
used), and answers ``[B]`` bool: True keeps the candidate. :func:`improve` undoes
the others (:meth:`ImprovementEnv.accept`); the best-so-far solution is tracked
either way.

* :class:`AlwaysAccept`: DACT and N2S (every move is kept; best-so-far tracking
  makes the search an exploration).
* :class:`ImprovementOnly`: keep moves that do not worsen the current solution.
* :class:`SimulatedAnnealing`: Metropolis acceptance with an exponential
  temperature schedule over the steps or the wall-clock time (NDS).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

#: What the progress of :class:`SimulatedAnnealing`'s schedule is measured in.
SCHEDULES = ("steps", "time")


class Acceptance(Protocol):
    """One method: ``[B]`` bool, True where the candidate is kept."""

    def __call__(self, current: Tensor, candidate: Tensor, progress: float,
                 generator: torch.Generator | None = None) -> Tensor: ...


@dataclass(frozen=True)
class AlwaysAccept:
    """Keep every move (DACT, N2S). Draws no random numbers."""

    def __call__(self, current: Tensor, candidate: Tensor, progress: float,
                 generator: torch.Generator | None = None) -> Tensor:
        return torch.ones_like(candidate, dtype=torch.bool)


@dataclass(frozen=True)
class ImprovementOnly:
    """Keep moves whose cost is at most the current one (ties are kept, so the
    search may walk across plateaus). Draws no random numbers."""

    def __call__(self, current: Tensor, candidate: Tensor, progress: float,
                 generator: torch.Generator | None = None) -> Tensor:
        return candidate <= current


@dataclass(frozen=True)
class SimulatedAnnealing:
    """Metropolis acceptance: an improving move is always kept, a worsening one by
    ``Δ`` with probability ``exp(-Δ / T)``; the temperature falls exponentially
    from ``t0`` to ``t_final``, ``T(p) = t_final (t0 / t_final)^(1 - p)`` over the
    progress ``p`` (NDS: ``t0 = 0.1``, ``t_final = 0.001`` over wall-clock time, in
    the units of the cost).

    Args:
        t0: starting temperature (> 0).
        t_final: final temperature (``0 < t_final <= t0``).
        schedule: ``"steps"`` (progress = steps taken / steps) or ``"time"``
            (seconds used / ``time_limit`` of :func:`improve`, which then needs one).
    """

    t0: float = 0.1
    t_final: float = 0.001
    schedule: str = "time"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.t0) and math.isfinite(self.t_final)
                and 0 < self.t_final <= self.t0):
            raise ValueError(f"SimulatedAnnealing needs 0 < t_final <= t0 (finite), got "
                             f"t0={self.t0!r}, t_final={self.t_final!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r}; choose from {SCHEDULES}")

    def temperature(self, progress: float) -> float:
        """``T`` at ``progress`` in ``[0, 1]`` (clamped)."""
        p = min(max(float(progress), 0.0), 1.0)
        return self.t_final * (self.t0 / self.t_final) ** (1.0 - p)

    def __call__(self, current: Tensor, candidate: Tensor, progress: float,
                 generator: torch.Generator | None = None) -> Tensor:
        delta = (candidate - current).double()
        u = torch.rand(candidate.shape, generator=generator, dtype=torch.float64).to(
            candidate.device)
        # Metropolis in log form (no overflow): keep iff delta < -T ln u.
        return delta < -self.temperature(progress) * torch.log(u)
