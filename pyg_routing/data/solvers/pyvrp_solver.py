"""Reference solutions with PyVRP (hybrid genetic search, integer data).

PyVRP works on integers, so every instance is first converted by
:func:`integer_instance`. The conversion is *conservative* for time windows:
travel and service durations and window openings are rounded up, window
closings down, so a schedule that PyVRP finds feasible on integers is also
feasible in the float arithmetic of :meth:`RoutingData.check`. That holds for
explicit cost matrices too: they are converted entry by entry the same way.

Travel costs follow the one rule of :mod:`pyg_routing.data.costs`
(:func:`float_distance_matrix`): an explicit, possibly asymmetric matrix goes in as
it is (PyVRP takes asymmetric distance and duration matrices); open routes end at a
dummy depot (see :func:`_problem_data`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from pyg_routing.data.costs import refuse_lost_matrix
from pyg_routing.data.evaluation import ROUND_NINT, ROUND_NONE, ROUND_TRUNC1, arc_lengths
from pyg_routing.data.problems import Problem
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.errors import InfeasibleSolutionError, InvalidInstanceError, where

#: Distance scale for float coordinates (``pos`` in the unit square gives
#: distances of up to ~14 000 units, well inside int64 and precise to 1e-4).
DEFAULT_SCALE = 10_000.0
#: Scale of non-integral demands (ceil for demands, floor for the capacity).
DEMAND_SCALE = 1_000_000.0
#: Slack (in scaled units) that absorbs float noise before ceil/floor, so an
#: exact value such as ``12.000000001`` is not rounded up to 13.
_EPS = 1e-6
#: Bound on ``largest scaled arc * N`` (any route's integer length stays far from
#: int64 overflow, also after the solvers add penalties).
_INT_LIMIT = float(2**60)
#: Problems :func:`solve_pyvrp` accepts.
PYVRP_PROBLEMS = (Problem.TSP, Problem.CVRP, Problem.VRPTW, Problem.PCVRP, Problem.PDTSP,
                  Problem.PDPTW)


@dataclass
class IntegerInstance:
    """An instance in scaled integer units (``N`` nodes, node 0 the depot).

    Attributes:
        problem: the routing problem.
        scale: factor from the instance's distance/time units to integers.
        distance: ``[N, N]`` int64, nearest-integer distances (the objective).
        duration: ``[N, N]`` int64, distances rounded *up* (travel times).
        demand: ``[N]`` int64 or None; capacity: int or None (same scale as demand).
        time_window: ``[N, 2]`` int64 (opening rounded up, closing down) or None.
        service_time: ``[N]`` int64, rounded up, or None.
        prize: ``[N]`` int64 (distance scale, nearest) or None.
        pairs: ``[2, P]`` pickup/delivery node ids or None.
        coords: ``[N, 2]`` float64 coordinates (labels only; travel uses the matrices).
        open_routes: vehicles end at their last customer (the depots' columns of
            ``distance``/``duration`` are 0; the solvers relax the return deadline).
        num_depots: ``K``, the depots (nodes ``0 .. K-1``); depot_vehicles: ``[K]``
            int64 route limits, or None (unlimited).
    """

    problem: Problem
    scale: float
    distance: np.ndarray
    duration: np.ndarray
    demand: np.ndarray | None = None
    capacity: int | None = None
    time_window: np.ndarray | None = None
    service_time: np.ndarray | None = None
    prize: np.ndarray | None = None
    pairs: np.ndarray | None = None
    coords: np.ndarray | None = None
    open_routes: bool = False
    num_depots: int = 1
    depot_vehicles: np.ndarray | None = None


def instance_label(instance: RoutingData, node: int | None = None) -> str:
    """Error-message prefix such as ``"instance 'X-n101', node 3: "`` (empty for an
    unnamed instance without node; :func:`solve_instances` adds its list index)."""
    return where(getattr(instance, "name", None), node=node)


def float_distance_matrix(instance: RoutingData) -> tuple[np.ndarray, float]:
    """``[N, N]`` float64 travel costs exactly as :meth:`RoutingData.cost` measures
    them (the rule of :mod:`pyg_routing.data.costs`), and the default integer scale.

    * An explicit matrix is taken as it is (asymmetric allowed): ``raw_travel_cost``
      when the instance has one, else ``travel_cost``. Scale 1 when every entry (and
      every time-window bound and service time) is an integer, so the conversion is
      exact; :data:`DEFAULT_SCALE` otherwise.
    * Else Euclidean distances. Benchmark instances (with ``raw_pos``) use original
      units and the benchmark's rounding: ``nint`` distances are integers (scale 1),
      ``trunc1`` multiples of 0.1 (scale 10), so both convert without any error.
    * With open routes the depot's column is 0 (the return costs and takes nothing).

    Raises:
        InvalidInstanceError: the instance says it has an explicit matrix
            (``explicit_cost``) but carries none.
    """
    n = instance.num_nodes
    if "travel_cost" in instance:
        raw = "raw_travel_cost" in instance
        flat = instance.raw_travel_cost if raw else instance.travel_cost
        # float32 -> float64 is exact: the same numbers RoutingData.cost() adds up.
        dist = flat.detach().cpu().to(torch.float64).numpy().reshape(n, n).copy()
        scale = 1.0 if raw and _all_integral(instance, dist) else DEFAULT_SCALE
    else:
        refuse_lost_matrix(instance, instance_label(instance))
        src = torch.arange(n).repeat_interleave(n)
        dst = torch.arange(n).repeat(n)
        if "raw_pos" in instance:
            code = int(instance.rounding.reshape(-1)[0])
            rounding = torch.full((n * n,), code, dtype=torch.long)
            dist = arc_lengths(instance.raw_pos.cpu().to(torch.float64), src, dst, rounding)
            scale = {ROUND_NINT: 1.0, ROUND_TRUNC1: 10.0, ROUND_NONE: DEFAULT_SCALE}[code]
        else:
            # Same float arithmetic as the feasibility checker: norm in pos's dtype.
            dist = arc_lengths(instance.pos.cpu(), src, dst)
            scale = DEFAULT_SCALE
        dist = dist.to(torch.float64).numpy().reshape(n, n)
    if is_open(instance):
        dist = dist.copy()
        dist[:, :instance.depot_count] = 0.0
    return dist, scale


def is_open(instance: RoutingData) -> bool:
    """Whether the vehicles of ``instance`` end at their last customer."""
    return "open_routes" in instance and bool(instance.open_routes.reshape(-1)[0])


def _all_integral(instance: RoutingData, dist: np.ndarray) -> bool:
    """Whether scale 1 converts the raw matrix and the times of ``instance`` exactly
    (the windows are read in the same units as the matrix, see :func:`integer_instance`)."""
    parts = [dist]
    if "time_window" in instance:
        raw = "raw_time_window" in instance
        parts += [_numpy(instance.raw_time_window if raw else instance.time_window),
                  _numpy(instance.raw_service_time if raw else instance.service_time)]
    return all(bool(np.all(p == np.rint(p))) for p in parts)


def _ceil(x: np.ndarray) -> np.ndarray:
    return np.ceil(np.asarray(x, dtype=np.float64) - _EPS).astype(np.int64)


def _floor(x: np.ndarray) -> np.ndarray:
    return np.floor(np.asarray(x, dtype=np.float64) + _EPS).astype(np.int64)


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().to(torch.float64).numpy()


def integer_instance(instance: RoutingData, scale: float | None = None) -> IntegerInstance:
    """Convert ``instance`` to scaled integers (see the module docstring).

    Args:
        instance: a single instance.
        scale: distance/time scale; default exact for benchmark rounding,
            :data:`DEFAULT_SCALE` otherwise.
    """
    prob = Problem.parse(instance.problem)
    dist, auto = float_distance_matrix(instance)
    s = float(scale) if scale is not None else auto
    n = dist.shape[0]
    if float(dist.max(initial=0.0)) * s * n >= _INT_LIMIT:
        # A route's integer length must not overflow PyVRP's/OR-Tools' int64 sums.
        raise InvalidInstanceError(
            f"{instance_label(instance)}travel costs up to {float(dist.max()):g} are too "
            f"large for integer scale {s:g} on {n} nodes; pass a smaller `scale`")
    out = IntegerInstance(prob, s, np.rint(dist * s).astype(np.int64), _ceil(dist * s),
                          open_routes=is_open(instance), num_depots=instance.depot_count)
    if "depot_vehicles" in instance:
        out.depot_vehicles = instance.depot_vehicles.detach().cpu().numpy().astype(np.int64)
    np.fill_diagonal(out.duration, 0)
    out.coords = _numpy(instance.raw_pos if "raw_pos" in instance else instance.pos)
    if "demand" in instance and "capacity" in instance:
        demand = _numpy(instance.demand)
        cap = float(instance.capacity.reshape(-1)[0])
        if np.all(demand == np.rint(demand)) and cap == math.floor(cap):
            out.demand, out.capacity = np.rint(demand).astype(np.int64), int(cap)
        else:
            # Demands up, capacity down: an integer-feasible load is float-feasible.
            signed = np.sign(demand) * _ceil(np.abs(demand) * DEMAND_SCALE)
            out.demand = signed.astype(np.int64)
            out.capacity = int(_floor(np.array(cap * DEMAND_SCALE)))
    if "time_window" in instance:
        # Mirror RoutingData.check: raw windows (original units) when present.
        raw = "raw_time_window" in instance
        tw = _numpy(instance.raw_time_window if raw else instance.time_window)
        st = _numpy(instance.raw_service_time if raw else instance.service_time)
        out.time_window = np.stack([_ceil(tw[:, 0] * s), _floor(tw[:, 1] * s)], axis=1)
        out.service_time = _ceil(st * s)
        bad = out.time_window[:, 0] > out.time_window[:, 1]
        if bad.any():
            v = int(np.nonzero(bad)[0][0])
            raise InvalidInstanceError(
                f"{instance_label(instance, v)}time window too narrow for integer "
                f"scale {s:g}; pass a larger `scale`")
    if "prize" in instance:
        out.prize = np.rint(_numpy(instance.prize) * s).astype(np.int64)
    if "pickup_delivery_index" in instance:
        out.pairs = instance.pickup_delivery_index.detach().cpu().numpy().astype(np.int64)
    return out


def _problem_data(ii: IntegerInstance) -> tuple[Any, Callable[[Any], int | None]]:
    """``(pyvrp.ProblemData, activity decoder)`` for an integer instance."""
    import pyvrp  # lazy: importing pyvrp costs time and workers may not need it

    n = ii.distance.shape[0]
    prob = ii.problem
    tw = ii.time_window
    st = ii.service_time if ii.service_time is not None else np.zeros(n, dtype=np.int64)
    big = np.iinfo(np.int64).max
    early = [int(tw[v, 0]) if tw is not None else 0 for v in range(n)]
    late = [int(tw[v, 1]) if tw is not None else big for v in range(n)]
    has_load = ii.capacity is not None
    demand = ii.demand if ii.demand is not None else np.zeros(n, dtype=np.int64)

    paired = np.zeros(n, dtype=bool)
    shipments = []
    if ii.pairs is not None:
        paired[ii.pairs.reshape(-1)] = True
        for p, d in ii.pairs.T.tolist():
            shipments.append(pyvrp.Shipment(
                pickup_location=p, delivery_location=d,
                pickup_tw_early=early[p], pickup_tw_late=late[p],
                pickup_service_duration=int(st[p]),
                delivery_tw_early=early[d], delivery_tw_late=late[d],
                delivery_service_duration=int(st[d]),
                amount=[int(abs(demand[p]))] if has_load else []))
    k = ii.num_depots
    client_nodes = [v for v in range(k, n) if not paired[v]]
    optional = prob.has_prizes
    clients = [pyvrp.Client(
        location=v, delivery=[int(demand[v])] if has_load else [],
        service_duration=int(st[v]), tw_early=early[v], tw_late=late[v],
        prize=int(ii.prize[v]) if optional else 0, required=not optional)
        for v in client_nodes]
    num_vehicles = 1 if prob.single_route else max(1, n - k)
    fleet = [num_vehicles] * k if ii.depot_vehicles is None else \
        [min(int(m), num_vehicles) for m in ii.depot_vehicles]
    capacity = [int(ii.capacity)] if has_load else []
    depots = [pyvrp.Depot(d, tw_early=early[d], tw_late=late[d], service_duration=int(st[d]))
              for d in range(k)]
    # Coordinates are only labels (plots, neighbourhoods); travel uses the matrices.
    coords = ii.coords if ii.coords is not None else np.zeros((n, 2))
    locations = [pyvrp.Location(float(x), float(y)) for x, y in coords.tolist()]
    # Without windows durations are irrelevant; the distance matrix keeps them 0 on
    # the diagonal and avoids a second matrix in memory.
    distance = ii.distance
    duration = ii.duration if tw is not None else ii.distance
    if ii.open_routes:
        # PyVRP's documented open-route model (FAQ): the vehicles end at a dummy end
        # depot reached from anywhere at zero distance and duration, with no closing
        # time, so neither the return's cost nor the depot's closing binds. The
        # vehicle may still only *start* while the real depot is open.
        depots.append(pyvrp.Depot(n, name="open route end"))
        locations.append(locations[0])
        distance, duration = _with_open_end(distance), _with_open_end(duration)
        vehicles = [pyvrp.VehicleType(num_available=fleet[d], capacity=capacity,
                                      start_depot=d, end_depot=k, tw_early=early[d],
                                      start_late=late[d]) for d in range(k)]
    else:
        # one vehicle type per depot: its routes leave from and return to it
        vehicles = [pyvrp.VehicleType(num_available=fleet[d], capacity=capacity,
                                      start_depot=d, end_depot=d, tw_early=early[d],
                                      tw_late=late[d]) for d in range(k)]
    data = pyvrp.ProblemData(locations=locations, clients=clients, depots=depots,
                             vehicle_types=vehicles, distance_matrices=[distance],
                             duration_matrices=[duration], shipments=shipments)

    pairs = ii.pairs.tolist() if ii.pairs is not None else [[], []]

    def decode(activity) -> int | None:
        """Our node id of a PyVRP activity (None for depots)."""
        if activity.is_client():
            return client_nodes[activity.idx]
        if activity.is_pickup():
            return pairs[0][activity.idx]
        if activity.is_delivery():
            return pairs[1][activity.idx]
        return None

    return data, decode


def _with_open_end(matrix: np.ndarray) -> np.ndarray:
    """``[N + 1, N + 1]``: ``matrix`` plus a dummy end depot (index ``N``) that every
    location reaches at 0; leaving it (never done: routes end there) is leaving the
    depot, so the matrix stays a plausible metric for PyVRP's neighbourhoods."""
    n = matrix.shape[0]
    out = np.zeros((n + 1, n + 1), dtype=matrix.dtype)
    out[:n, :n] = matrix
    out[n, :n] = matrix[0]
    return out


def solve_pyvrp(instance: RoutingData, time_limit: float = 1.0, seed: int = 0, *,
                scale: float | None = None, return_depots: bool = False
                ) -> list[list[int]] | tuple[list[list[int]], list[int]]:
    """Solve one instance with PyVRP.

    Supports ``tsp``, ``cvrp``, ``vrptw``, ``pcvrp`` and the pickup-and-delivery
    problems ``pdtsp``/``pdptw`` (as PyVRP shipments), each with an explicit
    (asymmetric) cost matrix, and open routes where the instance has them.

    Args:
        instance: a single :class:`RoutingData` (any solution it holds is ignored).
        time_limit: wall-clock seconds for the search.
        seed: random seed of the search.
        scale: integer scale of distances and times (see :func:`integer_instance`).
        return_depots: also return each route's depot (needed for an instance with
            several depots, each a vehicle type of PyVRP's whose routes start and end
            there, with the instance's ``depot_vehicles`` as their fleet).

    Returns:
        Routes as lists of node ids (depots omitted), e.g. ``[[3, 1], [2]]``; with
        ``return_depots``, ``(routes, depots)``: the depot (``0 .. K-1``) of each.

    Raises:
        ValueError: unsupported problem; several depots without ``return_depots``.
        InvalidInstanceError: a matrix the instance announces but lacks, a window
            too narrow for the integer scale, costs too large for it.
        InfeasibleSolutionError: PyVRP's best solution is infeasible (no feasible
            solution was found within the time limit).
    """
    import pyvrp

    prob = Problem.parse(instance.problem)
    if prob not in PYVRP_PROBLEMS:
        raise ValueError(f"solve_pyvrp does not support problem {prob.value!r}; supported: "
                         f"{', '.join(p.value for p in PYVRP_PROBLEMS)}")
    if instance.depot_count > 1 and not return_depots:
        raise ValueError(f"{instance_label(instance)}the instance has "
                         f"{instance.depot_count} depots: routes alone would lose them; "
                         f"pass return_depots=True")
    data, decode = _problem_data(integer_instance(instance, scale))
    result = pyvrp.solve(data, pyvrp.stop.MaxRuntime(float(time_limit)), seed=int(seed),
                         collect_stats=False, display=False)
    best = result.best
    if not (best.is_feasible() and best.is_complete()):
        raise InfeasibleSolutionError(
            f"{instance_label(instance)}PyVRP found no feasible solution in {time_limit:g} s "
            f"(time warp {best.time_warp()}, excess load {best.excess_load()}, "
            f"{best.num_missing_clients()} required client(s) missing)")
    routes, depots = [], []
    for route in best.routes():
        nodes = [v for v in (decode(a) for a in route) if v is not None]
        if nodes:
            routes.append(nodes)
            depots.append(int(route.start_depot()))
    return (routes, depots) if return_depots else routes
