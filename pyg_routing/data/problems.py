"""The routing problems and their per-problem conventions."""

from __future__ import annotations

import math
from enum import Enum

from pyg_routing.errors import InvalidInstanceError


class Problem(str, Enum):
    """A routing problem. Node 0 is the depot; instances of a problem of
    :data:`MULTI_DEPOT_PROBLEMS` may have ``K`` depots, nodes ``0 .. K-1``.

    ``pdptw`` is not one of the paper's training problems; it exists so that the
    Li & Lim benchmark (pickup and delivery with time windows) can be loaded and
    checked with the same machinery.
    """

    TSP = "tsp"
    CVRP = "cvrp"
    VRPTW = "vrptw"
    PCVRP = "pcvrp"
    PDTSP = "pdtsp"
    PDPTW = "pdptw"

    @classmethod
    def parse(cls, value: str | Problem) -> Problem:
        if isinstance(value, Problem):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            valid = ", ".join(p.value for p in cls)
            raise InvalidInstanceError(
                f"unknown problem {value!r}; valid problems: {valid}") from None

    # Which constraints / fields a problem carries.
    @property
    def has_capacity(self) -> bool:
        return self in (Problem.CVRP, Problem.VRPTW, Problem.PCVRP, Problem.PDPTW)

    @property
    def has_time_windows(self) -> bool:
        return self in (Problem.VRPTW, Problem.PDPTW)

    @property
    def has_prizes(self) -> bool:
        return self is Problem.PCVRP

    @property
    def has_pairs(self) -> bool:
        return self in (Problem.PDTSP, Problem.PDPTW)

    @property
    def single_route(self) -> bool:
        return self in (Problem.TSP, Problem.PDTSP)

    @property
    def instance_fields(self) -> tuple[str, ...]:
        """The fields an instance of this problem must carry besides ``pos``."""
        return ((("demand", "capacity") if self.has_capacity else ())
                + (("time_window", "service_time") if self.has_time_windows else ())
                + (("prize",) if self.has_prizes else ())
                + (("pickup_delivery_index",) if self.has_pairs else ()))

    @property
    def direction_sensitive(self) -> bool:
        """Whether reversing a route can change feasibility (paper Sec. 3.1)."""
        return self in (Problem.VRPTW, Problem.PCVRP, Problem.PDTSP, Problem.PDPTW)


#: Problems with the open-route option (vehicles end at their last customer).
OPEN_ROUTE_PROBLEMS = (Problem.CVRP, Problem.VRPTW)

#: Problems whose instances may have several depots (nodes ``0 .. K-1``); every other
#: problem has one (node 0)
MULTI_DEPOT_PROBLEMS = (Problem.CVRP,)


def capacity_for(num_customers: int) -> int:
    """Vehicle capacity C(n) of paper App. F (Kool et al. / POMO convention).

    ``30`` for n <= 20, ``30 + floor(n / 5)`` for 20 < n <= 1000 and
    ``30 + floor(1000 / 5 + (n - 1000) / 33.3)`` above.
    """
    n = int(num_customers)
    if n > 1000:
        return 30 + math.floor(1000 / 5 + (n - 1000) / 33.3)
    if n > 20:
        return 30 + n // 5
    return 30


#: Names of the problems with a generator (the commands' ``--problem`` choices):
#: every problem but PDPTW, which only the Li & Lim benchmark files bring
PROBLEMS = tuple(p.value for p in Problem if p is not Problem.PDPTW)
