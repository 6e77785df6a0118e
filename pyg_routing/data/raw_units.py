"""The original units of a benchmark instance: the fields :meth:`RoutingData.cost` and
:meth:`RoutingData.check` read so that a file's instance reports the benchmark's own
numbers (coordinates, windows and service times, and an explicit matrix, unscaled).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from pyg_routing.data.costs import checked_cost_matrix
from pyg_routing.data.problems import Problem
from pyg_routing.errors import InvalidInstanceError, where


def raw_unit_fields(problem: Problem, num_nodes: int, field: Any, instance: str | None,
                    raw_pos: Any, raw_time_window: Any, raw_service_time: Any,
                    has_matrix: bool, raw_cost_matrix: Any) -> dict[str, Tensor]:
    """The original-unit fields of a benchmark instance (``raw_pos``, ``raw_time_window``,
    ``raw_service_time``, ``raw_travel_cost``: what :meth:`RoutingData.cost` and
    :meth:`RoutingData.check` read), converted by ``field(value, key, dtype)``.

    Raises:
        InvalidInstanceError: ``raw_pos`` of a time-window problem without raw times, or
            with a cost matrix but no raw one; a raw matrix without its scaled twin.
    """
    out: dict[str, Tensor] = {}
    if raw_pos is not None:
        out["raw_pos"] = field(raw_pos, "raw_pos", torch.float64)
        if problem.has_time_windows and (raw_time_window is None or raw_service_time is None):
            # Feasibility uses raw distances, so times must be in the same raw units.
            raise InvalidInstanceError(
                f"{where(instance)}`raw_pos` of a time-window problem needs "
                f"`raw_time_window` and `raw_service_time` in the same units")
        if raw_time_window is not None:
            out["raw_time_window"] = field(raw_time_window, "raw_time_window", torch.float64)
            out["raw_service_time"] = field(raw_service_time, "raw_service_time",
                                            torch.float64)
    if raw_pos is not None and has_matrix and raw_cost_matrix is None:
        # cost() and check() read original units when raw_pos is given.
        raise InvalidInstanceError(f"{where(instance)}`raw_pos` with `cost_matrix` needs "
                                   f"`raw_cost_matrix`: the costs in original units")
    if raw_cost_matrix is not None:
        if not has_matrix:
            raise InvalidInstanceError(f"{where(instance)}`raw_cost_matrix` needs "
                                       f"`cost_matrix` (the same costs in pos's units)")
        raw = field(raw_cost_matrix, "raw_cost_matrix", torch.float64)
        out["raw_travel_cost"] = checked_cost_matrix(raw, num_nodes, instance).reshape(-1)
    return out
