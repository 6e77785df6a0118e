"""What every search returns, and the one gap-to-reference rule."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor


@dataclass
class SearchResult:
    """Outcome of a search on ``B`` instances.

    Attributes:
        routes: the best routes per instance in original node ids (customers
            ``1 .. N-1``, depot omitted), for ``RoutingData.from_routes``.
        cost: ``[B]`` their cost in the original coordinates (the step search: the
            environment's dtype and device; destroy-and-repair: ``float64`` on the
            CPU, recomputed exactly from the tours).
        initial_cost: ``[B]`` the start solutions' cost (with several copies or
            slots per instance: the step search's first copy, destroy-and-repair's
            best slot).
        iterations: iterations run (steps, or destroy-and-repair rounds).
        seconds: wall-clock time of the whole call, start solutions included (a
            compiled policy's untimed first move excluded: :class:`~.step.StepSearch`).
        start_seconds: the part of ``seconds`` spent building the start solutions
            (destroy-and-repair; 0 where not measured).
        best_copy: ``[B]`` long, the augmentation copy that found ``routes`` (step
            search), else ``None``.
        accepted: fraction of the candidates kept (destroy-and-repair), else ``None``.
        trace: ``(seconds, mean best cost)`` after every iteration, where recorded.
        depots: each route's depot (``0 .. K-1``) per instance, in the order of
            ``routes``, on multi-depot instances (``RoutingData.from_routes(instance,
            routes, depots)``); ``None`` with one depot.
    """

    routes: list[list[list[int]]]
    cost: Tensor
    initial_cost: Tensor
    iterations: int
    seconds: float
    start_seconds: float = 0.0
    best_copy: Tensor | None = None
    accepted: float | None = None
    trace: list[tuple[float, float]] = field(default_factory=list)
    depots: list[list[int]] | None = None


def gap_percent(cost: Tensor | float, reference: Tensor | float) -> float:
    """The gap of the mean objectives, in percent, as the paper computes it
    (``17.42 / 15.58 - 1 = 11.81 %``): ``100 (mean(cost) / mean(reference) - 1)``."""
    cost, reference = _pair(cost, reference)
    return float(100 * (cost.mean() / reference.mean() - 1))


def instance_gap_percent(cost: Tensor, reference: Tensor) -> float:
    """The mean of the per-instance gaps, in percent: ``100 mean(cost / reference - 1)``
    (the tables' ``instance_gap_percent``)."""
    cost, reference = _pair(cost, reference)
    return float(100 * (cost / reference - 1).mean())


def _pair(cost: Tensor, reference: Tensor) -> tuple[Tensor, Tensor]:
    cost = torch.as_tensor(cost).double().cpu()
    reference = torch.as_tensor(reference).double().cpu()
    if cost.shape != reference.shape:
        raise ValueError(f"costs of shape {tuple(cost.shape)} against references of shape "
                         f"{tuple(reference.shape)}")
    return cost, reference
