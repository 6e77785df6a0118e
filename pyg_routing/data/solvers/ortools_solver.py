"""Reference solutions with OR-Tools' routing library (PDTSP, plus TSP/CVRP/PCVRP/VRPTW).

OR-Tools is the default reference for PDTSP: one vehicle, every pickup paired
with its delivery on the same route and visited before it. Distances use the
same integer conversion as PyVRP (:func:`~.pyvrp_solver.integer_instance`), so
the two solvers can be compared on the other problems.

Travel costs follow the one rule of :mod:`pyg_routing.data.costs`: an explicit,
possibly asymmetric matrix as given, else Euclidean distances; on open-route
instances (CVRP, VRPTW) arcs into the depot cost 0 and the route's end at the depot
is not bound by the depot's closing time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pyg_routing.data.problems import Problem
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.data.solvers.pyvrp_solver import IntegerInstance, instance_label, integer_instance
from pyg_routing.errors import InfeasibleSolutionError

#: Problems :func:`solve_ortools` accepts.
ORTOOLS_PROBLEMS = (Problem.TSP, Problem.CVRP, Problem.VRPTW, Problem.PCVRP, Problem.PDTSP)


def _num_vehicles(ii: IntegerInstance) -> int:
    """Vehicles to offer: 1 for single-route problems.

    For CVRP/PCVRP ``ceil(2 * total demand / C) + 1`` always suffices (any packing
    in which no two bins are both at most half full has fewer bins), which keeps
    the model small; time windows may need a vehicle per customer.
    """
    n = ii.distance.shape[0]
    if ii.problem.single_route:
        return 1
    if ii.problem.has_time_windows or ii.capacity is None or ii.demand is None:
        return max(1, n - 1)
    total = int(np.abs(ii.demand).sum())
    return max(1, min(n - 1, math.ceil(2 * total / max(ii.capacity, 1)) + 1))


def _build(ii: IntegerInstance, num_vehicles: int) -> tuple[Any, Any]:
    """``(manager, routing)`` with the objective and every constraint of ``ii``."""
    from ortools.constraint_solver import pywrapcp

    n = ii.distance.shape[0]
    manager = pywrapcp.RoutingIndexManager(n, num_vehicles, 0)
    routing = pywrapcp.RoutingModel(manager)
    # Matrix/vector transits are evaluated in C++ (no Python callback per arc). The
    # matrix follows the cost rule (pyvrp_solver.float_distance_matrix): explicit and
    # asymmetric costs as given, and with open routes every arc into the depot costs
    # 0, OR-Tools' documented way to let routes end anywhere (the end node is still
    # the depot, reached for free).
    dist_cb = routing.RegisterTransitMatrix(ii.distance.tolist())
    routing.SetArcCostEvaluatorOfAllVehicles(dist_cb)

    if ii.capacity is not None and ii.demand is not None:
        demand_cb = routing.RegisterUnaryTransitVector(ii.demand.tolist())
        routing.AddDimensionWithVehicleCapacity(demand_cb, 0, [int(ii.capacity)] * num_vehicles,
                                                True, "load")

    if ii.time_window is not None and ii.service_time is not None:
        # Transit of arc (i, j) = service at i + travel time (rounded up).
        transit = ii.duration + ii.service_time[:, None]
        np.fill_diagonal(transit, 0)
        time_cb = routing.RegisterTransitMatrix(transit.tolist())
        close = int(ii.time_window[0, 1])
        # Open routes: the transit into the depot is just the last service (the
        # travel is 0 by the cost rule), and the route may end after the depot
        # closes: the end's cumul is bounded only by the latest possible end of a
        # service, which is also the dimension's capacity.
        horizon = close if not ii.open_routes else max(
            close, int((ii.time_window[:, 1] + ii.service_time).max()))
        routing.AddDimension(time_cb, horizon, horizon, False, "time")
        time = routing.GetDimensionOrDie("time")
        for v in range(1, n):
            time.CumulVar(manager.NodeToIndex(v)).SetRange(int(ii.time_window[v, 0]),
                                                           int(ii.time_window[v, 1]))
        for k in range(num_vehicles):
            time.CumulVar(routing.Start(k)).SetRange(int(ii.time_window[0, 0]), close)
            time.CumulVar(routing.End(k)).SetRange(int(ii.time_window[0, 0]), horizon)

    if ii.prize is not None:
        # Skipping a customer costs its prize: distance + uncollected prizes has
        # the same optimum as distance - collected prizes.
        for v in range(1, n):
            routing.AddDisjunction([manager.NodeToIndex(v)], max(int(ii.prize[v]), 0))

    if ii.pairs is not None:
        # Strict precedence via a rank dimension (+1 per arc): a distance dimension
        # would let a delivery precede its pickup across a zero-length arc.
        rank_cb = routing.RegisterTransitMatrix(np.ones((n, n), dtype=np.int64).tolist())
        routing.AddDimension(rank_cb, 0, n + 1, True, "rank")
        rank = routing.GetDimensionOrDie("rank")
        solver = routing.solver()
        for p, d in ii.pairs.T.tolist():
            pi, di = manager.NodeToIndex(p), manager.NodeToIndex(d)
            routing.AddPickupAndDelivery(pi, di)
            solver.Add(routing.VehicleVar(pi) == routing.VehicleVar(di))
            solver.Add(rank.CumulVar(pi) < rank.CumulVar(di))
    return manager, routing


def solve_ortools(instance: RoutingData, time_limit: float = 1.0, seed: int = 0, *,
                  scale: float | None = None, return_depots: bool = False
                  ) -> list[list[int]] | tuple[list[list[int]], list[int]]:
    """Solve one instance with OR-Tools (parallel cheapest insertion, then guided
    local search until ``time_limit``).

    Args:
        instance: a single :class:`RoutingData` of problem ``pdtsp``, ``tsp``,
            ``cvrp``, ``pcvrp`` or ``vrptw``, with or without an explicit cost
            matrix or open routes.
        time_limit: wall-clock seconds for the search.
        seed: accepted for a uniform solver interface; OR-Tools' routing search
            has no random seed (it is deterministic up to the time limit).
        scale: integer scale of distances (see :func:`integer_instance`).
        return_depots: also return each route's depot (always 0: one depot).

    Returns:
        Routes as lists of node ids (depot 0 omitted); with ``return_depots``,
        ``(routes, depots)``.

    Raises:
        ValueError: unsupported problem; an instance with several depots (PyVRP
            models them: ``solver="pyvrp"``).
        InvalidInstanceError: a matrix the instance announces but lacks, or costs
            too large for the integer scale (see :func:`integer_instance`).
        InfeasibleSolutionError: no solution found within the time limit.
    """
    from ortools.constraint_solver import pywrapcp, routing_enums_pb2

    del seed  # see docstring
    prob = Problem.parse(instance.problem)
    if prob not in ORTOOLS_PROBLEMS:
        raise ValueError(f"solve_ortools does not support problem {prob.value!r}; supported: "
                         f"{', '.join(p.value for p in ORTOOLS_PROBLEMS)}")
    if instance.depot_count > 1:
        raise ValueError(f"{instance_label(instance)}solve_ortools models one depot; this "
                         f"instance has {instance.depot_count} (solver 'pyvrp' takes them)")
    ii = integer_instance(instance, scale)
    if ii.time_window is not None and not ii.open_routes:
        # A closed route cannot serve a customer whose window opens after the depot
        # closes; OR-Tools would fail while the model is built (a bare "CP Solver
        # fail"), so say so here.
        late = np.nonzero(ii.time_window[1:, 0] > ii.time_window[0, 1])[0]
        if late.size:
            raise InfeasibleSolutionError(
                f"{instance_label(instance, int(late[0]) + 1)}no feasible solution: the "
                f"customer's window opens after the depot closes and routes are closed")
    num_vehicles = _num_vehicles(ii)
    manager, routing = _build(ii, num_vehicles)

    params = pywrapcp.DefaultRoutingSearchParameters()
    params.first_solution_strategy = (
        routing_enums_pb2.FirstSolutionStrategy.PARALLEL_CHEAPEST_INSERTION)
    params.local_search_metaheuristic = (
        routing_enums_pb2.LocalSearchMetaheuristic.GUIDED_LOCAL_SEARCH)
    params.time_limit.FromMilliseconds(max(1, int(round(float(time_limit) * 1000))))
    solution = routing.SolveWithParameters(params)
    if solution is None:
        raise InfeasibleSolutionError(
            f"{instance_label(instance)}OR-Tools found no solution in {time_limit:g} s "
            f"({num_vehicles} vehicle(s))")

    routes = []
    for k in range(num_vehicles):
        index = solution.Value(routing.NextVar(routing.Start(k)))
        route = []
        while not routing.IsEnd(index):
            route.append(manager.IndexToNode(index))
            index = solution.Value(routing.NextVar(index))
        if route:
            routes.append(route)
    return (routes, [0] * len(routes)) if return_depots else routes
