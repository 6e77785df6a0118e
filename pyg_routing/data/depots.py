"""Depots as a node set: nodes ``0 .. K-1`` of an instance are its ``K`` depots, and
each route leaves from and returns to its own (``route_depot``).

One depot (node 0) is the case ``K = 1`` of the same code: every rule here gives the
single-depot answer there. The checks run when data is built; :func:`route_homes` runs
when a solution's quantities are computed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from pyg_routing.data.problems import MULTI_DEPOT_PROBLEMS, Problem
from pyg_routing.data.validation import _node_ids
from pyg_routing.errors import InvalidInstanceError, InvalidSolutionError, where


def depot_count(value: Any, num_nodes: int, problem: Problem,
                instance: str | int | None = None) -> int:
    """``num_depots`` as a Python int ``K``: the depots are nodes ``0 .. K-1``, so
    ``1 <= K < num_nodes`` (at least one customer); ``K > 1`` only for the problems of
    :data:`~pyg_routing.data.problems.MULTI_DEPOT_PROBLEMS`.

    Raises:
        InvalidInstanceError: a bool, a float or another type, zero or negative
            depots, no customer left, several depots on another problem.
    """
    if isinstance(value, Tensor) and value.numel() == 1 and not value.is_floating_point() \
            and value.dtype != torch.bool:
        value = int(value.reshape(-1)[0])
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InvalidInstanceError(f"{where(instance)}`num_depots` must be an integer, got "
                                   f"{value!r} ({type(value).__name__})")
    k = int(value)
    if k < 1:
        raise InvalidInstanceError(f"{where(instance)}an instance needs at least one depot, "
                                   f"got num_depots={k}")
    if k >= num_nodes >= 2:            # (fewer nodes: validate_instance names the size)
        raise InvalidInstanceError(f"{where(instance)}num_depots={k} leaves no customer "
                                   f"among the {num_nodes} nodes (depots are nodes 0..K-1)")
    if k > 1 and problem not in MULTI_DEPOT_PROBLEMS:
        raise InvalidInstanceError(
            f"{where(instance)}several depots are a variant of "
            f"{', '.join(p.value for p in MULTI_DEPOT_PROBLEMS)}, not {problem.value!r}")
    return k


def check_depot_vehicles(vehicles: Tensor, num_depots: int,
                         instance: str | int | None = None) -> Tensor:
    """``depot_vehicles`` ``[..., K]``: integer route limits, at least 1 per depot.

    Raises:
        InvalidInstanceError: a shape other than ``K`` limits per instance, a
            non-integer or a limit below 1 (naming the depot).
    """
    if vehicles.size(-1) != num_depots:
        raise InvalidInstanceError(f"{where(instance)}`depot_vehicles` needs one limit per "
                                   f"depot ({num_depots}), got shape {tuple(vehicles.shape)}")
    if vehicles.is_floating_point() or vehicles.dtype == torch.bool:
        raise InvalidInstanceError(f"{where(instance)}`depot_vehicles` must hold integer "
                                   f"route counts, got {vehicles.dtype}")
    if bool((vehicles < 1).any()):
        d = int(torch.nonzero((vehicles < 1).reshape(-1, num_depots).any(0))[0])
        raise InvalidInstanceError(f"{where(instance, node=d)}depot {d} allows "
                                   f"{int(vehicles.reshape(-1, num_depots)[:, d].min())} "
                                   f"routes; every depot allows at least 1")
    return vehicles.long()


def normalize_route_depots(depots: Iterable[int] | None, num_routes: int, num_depots: int,
                           instance: str | int | None = None) -> list[int]:
    """Each route's depot (``0 .. K-1``), checked: one integer per route. ``None``
    is depot 0 for every route, which only a single-depot instance may leave implicit.

    Raises:
        InvalidSolutionError: no depots given with several depots, a count other
            than one per route, a non-integer or a node that is not a depot.
    """
    if depots is None:
        if num_depots > 1:
            raise InvalidSolutionError(f"{where(instance)}the instance has {num_depots} "
                                       f"depots: give each route's depot (depots=[...], "
                                       f"one of 0..{num_depots - 1} per route)")
        return [0] * num_routes
    clean = _node_ids(depots, f"{where(instance)}`depots`")
    if len(clean) != num_routes:
        raise InvalidSolutionError(f"{where(instance)}{len(clean)} depots for {num_routes} "
                                   f"routes: give one depot per route")
    for r, d in enumerate(clean):
        if not 0 <= d < num_depots:
            raise InvalidSolutionError(f"{where(instance, route=r, node=d)}not a depot: the "
                                       f"depots are nodes 0..{num_depots - 1}")
    return clean


def depot_mask(num_nodes: int, num_depots: Tensor | None, graph: Tensor | None,
               first_node: Tensor | None, device: torch.device) -> Tensor:
    """``[N]`` bool, True at the depots of each graph of a flat batch: local node ids
    below the graph's ``num_depots`` (``[G]``; ``None``: data saved before depots were a
    node set, whose depot is node 0). ``graph``/``first_node``: ``[N]`` each node's graph
    and that graph's first node (``None``: one graph)."""
    local = torch.arange(num_nodes, device=device)
    if first_node is not None:
        local = local - first_node
    if num_depots is None:
        return local == 0
    k = num_depots.reshape(-1)
    return local < (k.index_select(0, graph) if graph is not None else k)


def route_homes(src: Tensor, dst: Tensor, route_id: Tensor, depot: Tensor,
                num_routes: int) -> tuple[Tensor, int | None]:
    """``[R]`` the depot node each route leaves from (its opening arc), and the first
    closing arc that returns to another depot (``None`` when every route comes home).

    ``src``/``dst``: the route arcs; ``route_id`` ``[N]`` of each node; ``depot`` ``[N]``
    the depot mask."""
    home = torch.full((num_routes,), -1, dtype=torch.long, device=src.device)
    opening = depot[src] & ~depot[dst]
    home[route_id[dst[opening]]] = src[opening]
    closing = ~depot[src] & depot[dst]
    wrong = closing & (dst != home[route_id[src].clamp(min=0)])
    return home, int(torch.nonzero(wrong)[0]) if bool(wrong.any()) else None


def route_depots(data: Any, route_id: Tensor, num_routes: Tensor) -> Tensor:
    """``[R]`` the local depot (``0 .. K-1``) of each route of a ``RoutingData`` (or a
    PyG batch of them) whose ``route_id`` ``[N]`` and ``num_routes`` ``[G]`` were just
    computed from its arcs.

    Raises:
        InvalidSolutionError: a route that returns to another depot than it left,
            naming the instance, the route, its last customer and both depots.
    """
    src, dst = data.edge_index
    first = data._first_node()
    if first is None:
        first = torch.zeros_like(route_id)
    home, wrong = route_homes(src, dst, route_id, data.depot_mask, int(num_routes.sum()))
    if wrong is not None:
        node, back = int(src[wrong]), int(dst[wrong])
        r, g = int(route_id[node]), int(data._graph_of_node()[node])
        raise InvalidSolutionError(
            f"{data._label(g)}route {r - int(num_routes.reshape(-1)[:g].sum())}, node "
            f"{node - int(first[node])}: the route returns to depot {back - int(first[back])}, "
            f"not to its own depot {int(home[r] - first[home[r]])}")
    return home - first[home.clamp(min=0)]
