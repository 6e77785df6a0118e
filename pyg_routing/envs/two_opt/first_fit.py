"""VRP-DACT's initial CVRP solution (its ``init_val_met='random'``, the default of its
training and validation; ``problems/problem_vrp.py``, ``get_initial_solutions``): from
the depot, repeatedly visit the lowest-index unvisited customer that still fits the
vehicle, and open the next route when none does. Deterministic despite VRP-DACT's name
for it; on a TSP it is the tour in index order. VRP-DACT sums the demands divided by
the capacity in float32 and compares with 1, so rounding can refuse a customer that
fills the vehicle exactly; here the demands are compared with the capacity as given
(within :data:`~pyg_routing.data.feasibility.CAPACITY_RTOL`).
"""

from __future__ import annotations

import torch
from torch import Tensor

from pyg_routing.data.feasibility import CAPACITY_RTOL


def first_fit_order(demand: Tensor, capacity: Tensor) -> tuple[Tensor, int]:
    """First-fit tours of ``B`` instances as cycles ``[B, C + R]`` with depot slots
    labelled ``0 .. R-1`` in the order they open routes and customer ``c`` (``1 .. C``)
    labelled ``c + R - 1``; ``R`` is the largest number of routes in the batch (rows
    with fewer routes end with their spare slots, empty routes). Returns ``(order, R)``.

    One step per visit (``C`` customers and the route switches), each a few ``[B, C]``
    operations: the rule is sequential; the batch is not looped over.

    Args:
        demand: ``[B, N]`` demands, node 0 the depot.
        capacity: ``[B]`` vehicle capacities (``inf``: one route, the index order).

    Raises:
        ValueError: a customer's demand exceeds the capacity (names the instance).
    """
    b, n = demand.shape
    c = n - 1
    dev = demand.device
    need = demand[:, 1:].double()
    limit = capacity.double().reshape(b, 1) * (1 + CAPACITY_RTOL)
    too_big = (need > limit).any(1)
    if bool(too_big.any()):
        raise ValueError(f"first_fit: a demand above the capacity in instance(s) "
                         f"{torch.nonzero(too_big).flatten()[:5].tolist()}")
    left = torch.ones(b, c, dtype=torch.bool, device=dev)
    load = torch.zeros(b, 1, dtype=torch.float64, device=dev)
    index = torch.arange(c, device=dev).expand(b, c)
    big = torch.full_like(index, c)
    events = []                       # per step: customer 0-based, or -1 for a new route
    while bool(left.any()):
        fits = left & (load + need <= limit)
        pick = torch.where(fits, index, big).min(1).values                # c: none fits
        placed = pick < c
        events.append(torch.where(placed, pick, -1))
        rows = torch.nonzero(placed).flatten()
        left[rows, pick[rows]] = False
        load = torch.where(placed.unsqueeze(1),
                           load + need.gather(1, pick.clamp(max=c - 1).unsqueeze(1)), 0.0)
    seq = torch.stack(events, 1)                                          # [B, T]
    # a row that finished early opened "routes" after its last customer: they are its
    # spare (empty) routes at the end, as the depot slots of a shorter row
    is_depot = seq < 0
    slot = torch.cumsum(is_depot.long(), 1)                               # depot0 is 0
    routes = int(slot[:, -1].max()) + 1
    order = torch.where(is_depot, slot, seq + routes)                     # customer c+1
    order = torch.cat([torch.zeros(b, 1, dtype=torch.long, device=dev), order], 1)
    return order, routes
