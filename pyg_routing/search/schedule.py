"""The simulated-annealing temperature schedule, shared by the step search's
acceptance rule (:class:`~pyg_routing.search.acceptance.SimulatedAnnealing`) and the
destroy-and-repair search (:class:`~pyg_routing.search.DestroyRepairSearch`)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class TemperatureSchedule:
    """Exponential cooling from ``t_start`` to ``t_final`` over the search's progress
    ``p`` in ``[0, 1]`` (a stopping criterion's fraction of the budget used):
    ``T(p) = t_final (t_start / t_final)^(1 - p)``.

    NDS's values are ``t_start = 0.1``, ``t_final = 0.001`` over wall-clock time, in
    the units of the cost. Both 0 is no annealing: only improvements are kept (NDS's
    validation and training warm-up).
    """

    t_start: float = 0.1
    t_final: float = 0.001

    def __post_init__(self) -> None:
        for name in ("t_start", "t_final"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) \
                    or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if (self.t_start == 0) != (self.t_final == 0):
            raise ValueError(f"t_start and t_final must both be > 0 (annealing) or both 0 "
                             f"(improvements only), got {self.t_start} and {self.t_final}")
        if self.t_final > self.t_start:
            raise ValueError(f"t_final {self.t_final} must not exceed t_start {self.t_start}")

    def __call__(self, progress: float) -> float:
        """``T`` at ``progress`` (clamped to ``[0, 1]``)."""
        if self.t_start == 0:
            return 0.0
        p = min(max(float(progress), 0.0), 1.0)
        return self.t_final * (self.t_start / self.t_final) ** (1.0 - p)
