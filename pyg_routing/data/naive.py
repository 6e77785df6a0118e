"""Plain-Python reference implementations, one instance and one route at a time.

They exist to test the vectorized code against something obviously right and to
give the benchmarks a baseline measured in the same run. Never use them in a
search loop.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from pyg_routing.data.route_quantities import RouteQuantities


def naive_route_quantities(pos: Tensor, routes: list[list[int]]) -> RouteQuantities:
    """Route quantities of one instance (node 0 = depot) from its list of routes."""
    n = pos.size(0)
    xy = pos.tolist()
    route_id = [-1] * n
    route_pos = [0] + [-1] * (n - 1)
    cum = [0.0] * n
    length = [0.0] * n
    for r, route in enumerate(routes):
        prev, acc = 0, 0.0
        for k, v in enumerate(route, start=1):
            acc += math.dist(xy[prev], xy[v])
            route_id[v], route_pos[v], cum[v] = r, k, acc
            prev = v
        total = acc + math.dist(xy[prev], xy[0])
        for v in route:
            length[v] = total
    theta = [0.0] + [math.atan2(y - xy[0][1], x - xy[0][0]) for x, y in xy[1:]]
    return RouteQuantities(
        torch.tensor(route_id), torch.tensor(route_pos),
        torch.tensor(cum, dtype=pos.dtype), torch.tensor(length, dtype=pos.dtype),
        torch.tensor(theta, dtype=pos.dtype), torch.tensor([len(routes)]))


def naive_start_times(pos: Tensor, routes: list[list[int]], time_window: Tensor,
                      service_time: Tensor) -> list[float]:
    """Earliest service start per node by the textbook sequential recurrence."""
    xy, tw, st = pos.tolist(), time_window.tolist(), service_time.tolist()
    start = [float("-inf")] * len(xy)
    for route in routes:
        t, prev = tw[0][0], 0
        for v in route:
            t = max(tw[v][0], t + st[prev] + math.dist(xy[prev], xy[v]))
            start[v], prev = t, v
    return start
