"""Stopping criteria: when a search ends, and how far through its budget it is.

A criterion is asked before every iteration (a step of a step search, a round of a
destroy-and-repair search) with the iterations done and the seconds since the
search was called (its start solutions included), and answers whether to stop. Its
:meth:`~StoppingCriterion.progress` is the fraction of the budget used, which drives
a temperature schedule (:mod:`.schedule`). Criteria hold no state, so one object
serves any number of searches.

* :class:`MaxIterations`: stop after ``n`` iterations (progress: iterations / n).
* :class:`MaxRuntime`: stop once ``seconds`` have passed (progress: elapsed / seconds);
  the iteration running when the limit passes is finished.
* :class:`FirstOf`: stop when any of its criteria does (progress: the largest of
  theirs, so an annealing schedule ends with whichever budget ends first).
* :class:`WhenRequested`: stop once a callable says so (a run's own budget or a
  signal, asked inside a training run's validation; progress: 0).

As in PyVRP's ``pyvrp.stop`` package, the budget is an object handed to the search,
not ``steps`` / ``time_limit`` arguments threaded through every loop.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@runtime_checkable
class StoppingCriterion(Protocol):
    """Two methods: whether to stop, and the fraction of the budget used."""

    def __call__(self, iterations: int, seconds: float) -> bool: ...

    def progress(self, iterations: int, seconds: float) -> float: ...


@dataclass(frozen=True)
class MaxIterations:
    """Stop after ``max_iterations`` iterations (``0``: run none)."""

    max_iterations: int

    def __post_init__(self) -> None:
        n = self.max_iterations
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"max_iterations must be an integer >= 0, got {n!r}")

    def __call__(self, iterations: int, seconds: float) -> bool:
        return iterations >= self.max_iterations

    def progress(self, iterations: int, seconds: float) -> float:
        return iterations / self.max_iterations if self.max_iterations else 0.0


@dataclass(frozen=True)
class MaxRuntime:
    """Stop once more than ``max_runtime`` wall-clock seconds have passed."""

    max_runtime: float

    def __post_init__(self) -> None:
        t = self.max_runtime
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) \
                or not t > 0:
            raise ValueError(f"max_runtime must be a finite number of seconds > 0, got {t!r}")

    def __call__(self, iterations: int, seconds: float) -> bool:
        return seconds > self.max_runtime

    def progress(self, iterations: int, seconds: float) -> float:
        return seconds / self.max_runtime


class FirstOf:
    """Stop when any of ``criteria`` does; progress is the largest of theirs."""

    def __init__(self, *criteria: StoppingCriterion) -> None:
        if not criteria:
            raise ValueError("FirstOf needs at least one stopping criterion")
        for c in criteria:
            check_stop(c)
        self.criteria = criteria

    def __call__(self, iterations: int, seconds: float) -> bool:
        return any(c(iterations, seconds) for c in self.criteria)

    def progress(self, iterations: int, seconds: float) -> float:
        return max(c.progress(iterations, seconds) for c in self.criteria)

    def __repr__(self) -> str:
        return f"FirstOf({', '.join(map(repr, self.criteria))})"


@dataclass(frozen=True)
class WhenRequested:
    """Stop once ``requested()`` returns true (e.g. the training run was asked to stop:
    its time budget passed or it received SIGTERM); it takes no part in progress."""

    requested: Callable[[], bool]

    def __call__(self, iterations: int, seconds: float) -> bool:
        return bool(self.requested())

    def progress(self, iterations: int, seconds: float) -> float:
        return 0.0


def check_stop(stop: object) -> StoppingCriterion:
    """``stop`` if it is a stopping criterion; ``TypeError`` naming what it is else."""
    if isinstance(stop, type) or not isinstance(stop, StoppingCriterion):
        what = f"the class {stop.__name__}" if isinstance(stop, type) else type(stop).__name__
        raise TypeError(f"a search's stop must be a stopping criterion (MaxIterations, "
                        f"MaxRuntime, FirstOf), got {what}")
    return stop


def budget(iterations: int | None = None, seconds: float | None = None) -> StoppingCriterion:
    """The criterion of an iteration cap, a time limit or both (the first reached);
    ``ValueError`` when neither is given."""
    parts: list[StoppingCriterion] = []
    if iterations is not None:
        parts.append(MaxIterations(iterations))
    if seconds is not None:
        parts.append(MaxRuntime(seconds))
    if not parts:
        raise ValueError("a search needs an iteration cap or a time limit")
    return parts[0] if len(parts) == 1 else FirstOf(*parts)
