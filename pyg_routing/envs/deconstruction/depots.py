"""Several depots in the NDS repair: the kernels' node order and the tours' depots.

The kernels index customers ``1..N`` and use ``0`` as the "depot" end of every linked
tour (a customer whose predecessor is 0 opens its tour). With ``K`` depots that end
stands for the TOUR's depot, read from ``ToursState.depot`` (a depot number
``0..K-1`` per tour slot). The instances' nodes are reordered once, when
:class:`~.problem.ProblemArrays` are built, into the KERNEL ORDER

    ``[depot 0, customer 1, ..., customer N, depot 1, ..., depot K-1]``

so that customers keep their ids ``1..N`` in every kernel, removal set and policy pick,
and depot ``d``'s row and column of the travel costs sit at :func:`depot_node` ``(d, N)``.
With one depot the kernel order is the instance's order (bit for bit the single-depot
code). The data layer numbers the same nodes ``[depots 0..K-1, customers K..K+N-1]``:
:func:`kernel_order` maps one to the other, :func:`to_data_routes` maps solutions back.

The rules several depots add (the repair's, the start's; the pure-Python reference
follows them too):

* a tour's arcs out of and back into "the depot" are those of ITS depot; inserting a
  customer into a tour keeps the tour's depot;
* a new tour ``[c]`` opens at the depot with the cheapest out-and-back trip
  ``d(D, c) + d(c, D)`` (the lowest depot number on ties), among the depots with a
  vehicle to spare where the instance limits them; an attempt that would need a vehicle
  no depot has left is infeasible (``Δ = +inf``): it is never accepted nor committed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: A fleet without limits: the vehicle count the kernels compare against.
UNLIMITED = np.iinfo(np.int64).max


def kernel_order(num_depots: int, num_nodes: int) -> np.ndarray:
    """``int64 [M]``: the instance's node at each kernel position (``M = N + K`` nodes):
    ``[0, K, K+1, ..., M-1, 1, ..., K-1]``; the identity for one depot."""
    k = int(num_depots)
    return np.concatenate([np.zeros(1, np.int64), np.arange(k, num_nodes),
                           np.arange(1, k)]).astype(np.int64)


def depot_node(depot: int | np.ndarray, num_customers: int) -> int | np.ndarray:
    """Kernel index of depot number ``depot``: 0 for depot 0, ``N + d`` for the others."""
    return np.where(np.asarray(depot) == 0, 0, num_customers + np.asarray(depot)) \
        if isinstance(depot, np.ndarray) else (0 if depot == 0 else num_customers + depot)


def to_data_routes(routes: Sequence[Sequence[Sequence[int]]], num_depots: int
                   ) -> list[list[list[int]]]:
    """Kernel customer ids ``1..N`` as the instance's node ids ``K..K+N-1`` (routes per
    slot; unchanged for one depot)."""
    if num_depots == 1:
        return [[list(r) for r in slot] for slot in routes]
    shift = num_depots - 1
    return [[[c + shift for c in r] for r in slot] for slot in routes]


def to_kernel_routes(routes: Sequence[Sequence[Sequence[int]]], num_depots: int
                     ) -> list[list[list[int]]]:
    """The inverse of :func:`to_data_routes` (ids below ``K`` become ``< 1``, which the
    state's checks refuse as depots inside a route)."""
    shift = num_depots - 1
    return [[[int(c) - shift for c in r] for r in slot] for slot in routes]


def depot_trips(dist: np.ndarray, num_depots: int) -> np.ndarray:
    """``float64 [I, K, N+1]``: the out-and-back trip ``d(D, c) + d(c, D)`` from each depot
    number to each node (kernel ids; index 0 is depot 0 itself), in the kernels' order of
    the sum."""
    n = dist.shape[1] - num_depots
    nodes = depot_node(np.arange(num_depots), n)
    return dist[:, nodes, : n + 1] + dist[:, : n + 1, nodes].transpose(0, 2, 1)


def cheapest_depots(dist: np.ndarray, num_depots: int) -> np.ndarray:
    """``int32 [I, N+1]``: per instance and customer (kernel ids) the depot number with
    the cheapest out-and-back trip (:func:`depot_trips`), lowest on ties (index 0: 0).
    With unlimited fleets it is where a customer's new tour opens; the singleton start
    places every customer there."""
    # the kernels compare the same sums, the first strict minimum wins
    out = np.argmin(depot_trips(dist, num_depots), axis=1).astype(np.int32)
    out[:, 0] = 0
    return out


def data_solutions(state, num_depots: int) -> tuple[list[list[list[int]]], list[list[int]] | None]:
    """A :class:`~.state.ToursState`'s solutions in the instances' node ids: the routes
    per slot (:meth:`~.state.ToursState.to_routes` order) and each route's depot number,
    ``None`` for one depot (``RoutingData.from_routes(data, routes, depots)``)."""
    routes = to_data_routes(state.to_routes(), num_depots)
    return routes, None if num_depots == 1 else state.route_depots()
