"""Per-node Dirichlet mode table of route graphs, for :mod:`pyg_routing.functional.graph_pe`.

Cutting the depot out of a route leaves a path whose Dirichlet modes are sinusoids in
the position ``j``: ``sin(π p j / M)``. On a cycle of ``m`` customers ``M = m + 1``
(``p = 1..m``); on an open leg (the path ``0 - v_1 - ... - v_m``, free at ``v_m``)
``M = 2m + 1`` with odd ``p = 2q - 1`` (the symmetric modes of a cycle of ``2m``).
Each customer carries one mode of its route, so the table is ``[N]``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from pyg_routing.functional._route_graph import RouteGraph


class _Modes(NamedTuple):
    """Per-node Dirichlet data, ``[N]`` each: customer ``v`` at position ``j`` of a
    route of ``m`` customers carries the mode ``p`` of its route (``p = j`` on a
    cycle, ``p = 2j - 1`` on an open leg: its ``q = j``-th mode)."""

    pend: Tensor      # bool, customer of a single-customer route (closed or open)
    cycle: Tensor     # bool, customer of a route with m >= 2 (a cycle or an open leg)
    big_m: Tensor     # long, M = m + 1; open leg: 2m + 1; pendant: 3 (p = 1, μ = 1)
    num: Tensor       # long, mode numerator p (0 for depots, -1 unvisited)
    mu: Tensor        # float, μ = 2 - 2 cos(π p / M)
    sigma: Tensor     # float, depot-neighbour sum of the normalized mode (odd p)

    @classmethod
    def of(cls, rg: RouteGraph, wd: torch.dtype) -> _Modes:
        visited = rg.route_id >= 0
        m = rg.node_route_size()
        pend = visited & (m == 1)
        big_m = torch.where(pend, 3, m + 1).clamp(min=2)
        num = rg.route_pos
        leg = None
        if rg.open_graph is not None:   # only then: closed graphs stay bit for bit
            # An open leg is half of a cycle of 2m customers (its symmetric modes).
            leg = rg.node_open() & (m >= 2)
            big_m = torch.where(leg, 2 * m + 1, big_m)
            num = torch.where(leg, 2 * num - 1, num)
        angle = num.clamp(min=1).to(wd) * math.pi / big_m.to(wd)
        # Normalized mode sqrt(2/M) sin(π p j / M): its two depot neighbours sum to
        # 2 sqrt(2/M) sin(π p / M) for odd p (0 for even p); a pendant's mode is 1.
        sigma = torch.where(pend, 1.0, 2 * torch.sin(angle) * torch.sqrt(2 / big_m.to(wd)))
        if leg is not None:
            # Open leg: mode (2 / sqrt(M)) sin(π p j / M), only v_1 touches the depot.
            sigma = torch.where(leg, 2 * torch.sin(angle) * torch.rsqrt(big_m.to(wd)), sigma)
        return cls(pend, visited & (m >= 2), big_m, num, 2 - 2 * torch.cos(angle), sigma)
