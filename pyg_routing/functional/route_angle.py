r"""Per-route depot angles: the aggregations of the paper's per-route XPE ablation (Tab. 9).

Per-node XPE encodes each customer's own depot angle θ_v. A per-route variant computes
one angle per route from the multiset ``{θ_v : v ∈ r}`` and gives it to every node of
the route; :func:`route_angle` does that for a batch of solutions in one pass of
segment reductions (no loop over routes or graphs). The aggregations:

* ``"mean"``: the arithmetic mean of θ.
* ``"circular_mean"``: ``arg Σ_v e^{iθ_v}`` (0 where the sum vanishes, e.g. two
  customers at opposite angles).
* ``"demand_mean"``: the demand-weighted arithmetic mean ``Σ q_v θ_v / Σ q_v`` (the
  plain mean on a route whose demands sum to 0).
* ``"median"``: the median of θ (the mean of the two middle angles on an even count).
* ``"midpoint"``: ``(max θ + min θ) / 2``, the middle of the route's angular extent.

θ lives in ``(-π, π]``, and every aggregation but the circular mean treats it as a
number on that interval. A route that straddles the ±π cut (customers just above and
just below the negative x-axis seen from the depot) therefore gets an angle near 0 from
the mean, the weighted mean, the median (for balanced splits) and the midpoint — the
opposite direction of where the route is — while the circular mean gives ≈ ±π. This
artefact is one reason the paper keeps the per-node design, which needs no aggregation.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pyg_routing.options import AGGREGATIONS


def check_aggregation(aggregation: str) -> None:
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"unknown XPE aggregation {aggregation!r}; choose from "
                         f"{AGGREGATIONS}")


def route_angle(depot_angle: Tensor, route_id: Tensor, aggregation: str,
                batch: Tensor | None = None, demand: Tensor | None = None,
                depot_mask: Tensor | None = None) -> Tensor:
    r"""``[N]`` angles: each routed customer's replaced by its route's aggregate.

    Args:
        depot_angle: ``[N]`` depot-relative angles θ of the nodes of ``G`` graphs.
        route_id: ``[N]`` route of each node within its graph (``< 0``: depot or an
            unvisited customer; those keep their own θ).
        aggregation: one of :data:`AGGREGATIONS` (``"node"`` returns ``depot_angle``).
        batch: ``[N]`` graph of each node (``None``: one graph).
        demand: ``[N]`` demands, needed by ``"demand_mean"``.
        depot_mask: ``[N]`` bool, True at depots (they keep their own θ).

    Raises:
        ValueError: an unknown aggregation, or ``"demand_mean"`` without demands.
    """
    check_aggregation(aggregation)
    if aggregation == "node":
        return depot_angle
    if aggregation == "demand_mean" and demand is None:
        raise ValueError("XPE aggregation 'demand_mean' needs node demands; this "
                         "problem has none")
    on_route = route_id >= 0
    if depot_mask is not None:
        on_route = on_route & ~depot_mask
    graph = torch.zeros_like(route_id) if batch is None else batch
    # one segment per (graph, route): ids made dense by unique (sorted, so stable)
    key = torch.where(on_route, graph * (route_id.max() + 1).clamp(min=1) + route_id,
                      torch.full_like(route_id, -1))
    segments, seg = torch.unique(key, return_inverse=True)
    theta = depot_angle
    num = segments.numel()
    count = torch.zeros(num, dtype=theta.dtype, device=theta.device).index_add_(
        0, seg, torch.ones_like(theta))
    if aggregation == "mean":
        agg = _segment_sum(theta, seg, num) / count
    elif aggregation == "circular_mean":
        agg = torch.atan2(_segment_sum(torch.sin(theta), seg, num),
                          _segment_sum(torch.cos(theta), seg, num))
    elif aggregation == "demand_mean":
        q = demand.to(theta.dtype)
        weight = _segment_sum(q, seg, num)
        weighted = _segment_sum(q * theta, seg, num) / torch.where(weight != 0, weight, 1)
        agg = torch.where(weight != 0, weighted, _segment_sum(theta, seg, num) / count)
    elif aggregation == "median":
        agg = _segment_median(theta, seg, num, count)
    else:                                                      # midpoint
        high = torch.full((num,), -torch.inf, dtype=theta.dtype, device=theta.device)
        low = torch.full((num,), torch.inf, dtype=theta.dtype, device=theta.device)
        high = high.scatter_reduce(0, seg, theta, "amax")
        low = low.scatter_reduce(0, seg, theta, "amin")
        agg = (high + low) / 2
    return torch.where(on_route, agg[seg], theta)


def _segment_sum(values: Tensor, seg: Tensor, num: int) -> Tensor:
    return torch.zeros(num, dtype=values.dtype, device=values.device).index_add_(
        0, seg, values)


def _segment_median(theta: Tensor, seg: Tensor, num: int, count: Tensor) -> Tensor:
    """The median per segment: sort by (segment, θ) with two stable sorts, then read
    the two middle elements of each segment's run."""
    by_theta = torch.argsort(theta, stable=True)
    order = by_theta[torch.argsort(seg[by_theta], stable=True)]
    sorted_theta = theta[order]
    n = count.long()
    start = torch.cumsum(n, 0) - n
    low = sorted_theta[start + (n - 1) // 2]
    high = sorted_theta[start + n // 2]
    return (low + high) / 2
