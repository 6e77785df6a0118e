"""Anisometry of routes (paper Sec. 3.1, Tab. 1): CV, max/min and residual MAD of the
edge lengths, over a dataset of solutions; :data:`DEFINITION` states them exactly."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

import torch
from torch import Tensor
from torch_geometric.data import Batch, Data
from torch_geometric.utils import scatter

from pyg_routing.errors import NoSolutionError
from pyg_routing.probes.definitions import ANISOMETRY

#: The definitions (shown by ``pyg-routing probe anisometry --help``).
DEFINITION = ANISOMETRY
__doc__ = f"{__doc__}\n{DEFINITION}\n"

#: Edges shorter than this fraction of the route's mean edge are ignored by max/min.
ZERO_EDGE_TOL = 1e-9


class RouteAnisometry(NamedTuple):
    """Per-route anisometry, one entry per route with ``>= min_customers`` customers
    (float64 tensors; ``max_min`` is NaN where a route has < 2 non-zero edges)."""

    route: Tensor          # long, route id (unique over the batch)
    graph: Tensor          # long, index of the route's instance
    num_customers: Tensor  # long, m
    cv: Tensor
    max_min: Tensor
    mad: Tensor
    mad_customers: Tensor  # variant: fit over customers only (see module docstring)


def as_batch(data: Data | Batch | Iterable[Data]) -> Data:
    """A single solution, a ``Batch``, or any iterable of solutions (a list, a
    :class:`~pyg_routing.data.RoutingDataset`) as one ``Data``/``Batch``.

    Raises:
        NoSolutionError: the data holds no solution (no route quantities).
    """
    if not isinstance(data, Data):
        items = list(data)
        if not items:
            raise ValueError("no solutions given")
        data = Batch.from_data_list(items)
    if "route_index" not in data or "cum_dist" not in data:
        raise NoSolutionError("the probes need solutions; build them with "
                              "RoutingData.from_routes or RoutingDataset(..., solver=...)")
    return data


def node_route_id(data: Data) -> Tensor:
    """``[N]`` route id of every node (unique over a batch), -1 for depot/unvisited."""
    rid = torch.full((data.num_nodes,), -1, dtype=torch.long, device=data.pos.device)
    rid[data.route_index[0]] = data.route_index[1]
    return rid


def node_graph(data: Data) -> Tensor:
    """``[N]`` instance index of every node (zeros for a single instance)."""
    batch = getattr(data, "batch", None)
    if batch is not None:
        return batch
    return torch.zeros(data.num_nodes, dtype=torch.long, device=data.pos.device)


def segment_median(values: Tensor, segment: Tensor, num_segments: int) -> Tensor:
    """Median of ``values`` within each segment id (mean of the two middle values
    for even counts; NaN for empty segments), by one lexicographic sort."""
    order = torch.argsort(values, stable=True)
    order = order[torch.argsort(segment[order], stable=True)]
    ordered = values[order]
    counts = torch.bincount(segment, minlength=num_segments)
    starts = torch.cumsum(counts, 0) - counts
    lo = (starts + (counts - 1).clamp(min=0) // 2).clamp(max=max(values.numel() - 1, 0))
    hi = (starts + counts // 2).clamp(max=max(values.numel() - 1, 0))
    if values.numel() == 0:
        return values.new_full((num_segments,), math.nan)
    med = (ordered[lo] + ordered[hi]) / 2
    return torch.where(counts > 0, med, torch.full_like(med, math.nan))


def _fit_median_residual(x: Tensor, y: Tensor, segment: Tensor, num_segments: int) -> Tensor:
    """Per segment: median absolute residual of the least-squares line ``y ≈ a + b x``."""
    def seg_sum(v: Tensor) -> Tensor:
        return scatter(v, segment, 0, dim_size=num_segments, reduce="sum")

    n, sx, sy = seg_sum(torch.ones_like(x)), seg_sum(x), seg_sum(y)
    sxx, sxy = seg_sum(x * x), seg_sum(x * y)
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    icpt = (sy - slope * sx) / n
    residual = (y - icpt[segment] - slope[segment] * x).abs()
    return segment_median(residual, segment, num_segments)


def route_anisometry(data: Data | Batch | Iterable[Data],
                     min_customers: int = 2) -> RouteAnisometry:
    """Per-route CV, max/min and residual MAD (definitions in the module docstring).

    Args:
        data: a solution, a ``Batch`` of solutions, or an iterable of solutions.
        min_customers: routes with fewer customers are left out (the paper's
            statistics are degenerate on a one-customer route: two equal edges).
    """
    data = as_batch(data)
    pos = data.pos.double()
    rid = node_route_id(data)
    graph = node_graph(data)
    num_routes = int(rid.max()) + 1 if rid.numel() and int(rid.max()) >= 0 else 0
    src, dst = data.edge_index
    # Each arc belongs to the route of its customer end (depot -> depot never occurs).
    arc_route = torch.where(rid[dst] >= 0, rid[dst], rid[src])
    edge = (pos[dst] - pos[src]).norm(dim=-1)

    num_edges = scatter(torch.ones_like(edge), arc_route, 0, dim_size=num_routes, reduce="sum")
    mean_edge = scatter(edge, arc_route, 0, dim_size=num_routes, reduce="mean")
    sq = scatter(edge * edge, arc_route, 0, dim_size=num_routes, reduce="mean")
    std = (sq - mean_edge * mean_edge).clamp(min=0).sqrt()
    cv = std / mean_edge
    big = scatter(edge, arc_route, 0, dim_size=num_routes, reduce="max")
    nonzero = edge > ZERO_EDGE_TOL * mean_edge[arc_route]
    small = scatter(torch.where(nonzero, edge, torch.full_like(edge, math.inf)), arc_route, 0,
                    dim_size=num_routes, reduce="min")
    num_nonzero = scatter(nonzero.double(), arc_route, 0, dim_size=num_routes, reduce="sum")
    max_min = torch.where(num_nonzero >= 2, big / small, torch.full_like(big, math.nan))

    # Least-squares fit of d_i on i over (0, 0), (k, d_k), (m + 1, d_L).
    cust = rid >= 0
    r_c, x_c, y_c = rid[cust], data.route_pos[cust].double(), data.cum_dist[cust].double()
    m = num_edges - 1
    d_len = scatter(edge, arc_route, 0, dim_size=num_routes, reduce="sum")
    routes = torch.arange(num_routes, device=pos.device)
    mad = _fit_median_residual(torch.cat([x_c, torch.zeros_like(d_len), m + 1]),
                               torch.cat([y_c, torch.zeros_like(d_len), d_len]),
                               torch.cat([r_c, routes, routes]), num_routes) / mean_edge
    # Variant: customers only, in units of the mean customer-to-customer edge.
    first = scatter(y_c, r_c, 0, dim_size=num_routes, reduce="min")
    last = scatter(y_c, r_c, 0, dim_size=num_routes, reduce="max")
    inner_edge = (last - first) / (m - 1).clamp(min=1)
    mad_customers = _fit_median_residual(x_c, y_c, r_c, num_routes) / inner_edge

    route_graph = torch.zeros(num_routes, dtype=torch.long, device=pos.device)
    route_graph[r_c] = graph[cust]
    keep = m >= min_customers
    return RouteAnisometry(routes[keep], route_graph[keep], m[keep].long(), cv[keep],
                           max_min[keep], mad[keep], mad_customers[keep])


def _summary(values: Tensor) -> dict[str, float | None]:
    finite = values[torch.isfinite(values)]
    if finite.numel() == 0:
        return {"mean": None, "median": None}
    return {"mean": float(finite.mean()), "median": float(finite.median())}


def anisometry(data: Data | Batch | Iterable[Data], min_customers: int = 2) -> dict[str, Any]:
    """Dataset-level anisometry: the mean over routes of CV, max/min and MAD.

    Returns:
        ``{"cv", "max_min", "mad", "mad_customers"}`` (means over routes; the
        first three are the Tab. 1 numbers), ``"median"`` (the same keys, medians),
        ``"num_routes"`` (routes used), ``"num_instances"`` and ``"mean_customers_per_route"``.
    """
    data = as_batch(data)
    per = route_anisometry(data, min_customers)
    stats = {k: _summary(getattr(per, k)) for k in ("cv", "max_min", "mad", "mad_customers")}
    num_graphs = int(node_graph(data).max()) + 1
    return {
        "cv": stats["cv"]["mean"], "max_min": stats["max_min"]["mean"],
        "mad": stats["mad"]["mean"], "mad_customers": stats["mad_customers"]["mean"],
        "median": {k: v["median"] for k, v in stats.items()},
        "num_routes": int(per.route.numel()),
        "num_instances": num_graphs,
        "mean_customers_per_route": float(per.num_customers.double().mean())
        if per.route.numel() else None,
    }


__all__ = ["DEFINITION", "RouteAnisometry", "anisometry", "as_batch", "route_anisometry",
           "segment_median"]
