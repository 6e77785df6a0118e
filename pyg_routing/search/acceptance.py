"""Acceptance rules of the search: keep a candidate move, or undo it.

A rule is called once per search step with the current and the candidate costs
(``[B]`` each) and the search's progress in ``[0, 1]`` (steps or wall-clock time
used), and answers ``[B]`` bool: True keeps the candidate. The step search undoes
the others (:meth:`ImprovementEnv.accept`); the best-so-far solution is tracked
either way.

* :class:`AlwaysAccept`: DACT and N2S (every move is kept; best-so-far tracking
  makes the search an exploration).
* :class:`ImprovementOnly`: keep moves that do not worsen the current solution.
* :class:`SimulatedAnnealing`: Metropolis acceptance with the shared exponential
  temperature schedule over the budget's progress (NDS).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

from pyg_routing.search.schedule import TemperatureSchedule


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
    ``Δ`` with probability ``exp(-Δ / T)``, ``T = schedule(progress)`` (the shared
    :class:`~pyg_routing.search.schedule.TemperatureSchedule`; progress is the stopping
    criterion's fraction of the budget used: steps, or wall-clock time).

    Args:
        schedule: the temperatures (default NDS's ``0.1 -> 0.001``); a schedule of
            zeros keeps improvements only.
    """

    schedule: TemperatureSchedule = TemperatureSchedule()

    def __post_init__(self) -> None:
        if not isinstance(self.schedule, TemperatureSchedule):
            raise TypeError(f"SimulatedAnnealing's schedule must be a TemperatureSchedule, "
                            f"got {type(self.schedule).__name__}")

    def temperature(self, progress: float) -> float:
        """``T`` at ``progress`` in ``[0, 1]`` (clamped)."""
        return self.schedule(progress)

    def __call__(self, current: Tensor, candidate: Tensor, progress: float,
                 generator: torch.Generator | None = None) -> Tensor:
        delta = (candidate - current).double()
        u = torch.rand(candidate.shape, generator=generator, dtype=torch.float64).to(
            candidate.device)
        # Metropolis in log form (no overflow): keep iff delta < -T ln u.
        return delta < -self.temperature(progress) * torch.log(u)
