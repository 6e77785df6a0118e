"""``RoutingData``: a routing instance and (optionally) a solution as PyG data."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Batch, Data

from pyg_routing.data.costs import checked_cost_matrix, route_arc_costs
from pyg_routing.data.depots import (
    check_depot_vehicles,
    depot_count,
    depot_mask,
    normalize_route_depots,
    route_depots,
)
from pyg_routing.data.evaluation import ROUNDING_CODES, solution_cost
from pyg_routing.data.problems import OPEN_ROUTE_PROBLEMS, Problem
from pyg_routing.data.raw_units import raw_unit_fields
from pyg_routing.data.route_quantities import depot_angle, route_quantities
from pyg_routing.data.travel import TravelCost
from pyg_routing.data.type_checks import check_one_instance, refuse_lost_fields
from pyg_routing.data.validation import (
    as_tensor,
    normalize_routes,
    open_routes_flag,
    validate_instance,
)
from pyg_routing.errors import InvalidInstanceError, NoSolutionError, where

#: Fields that describe a solution (recomputed whenever the routes change).
SOLUTION_KEYS = ("edge_index", "route_index", "num_routes", "route_pos", "cum_dist",
                 "route_length", "route_depot")


class RoutingData(Data):
    r"""A routing instance, optionally with a solution, as a PyG ``Data``.

    Instance fields (``N`` nodes; node 0 is the depot, or nodes ``0 .. K-1`` the
    ``K`` depots of a multi-depot instance):

    * ``pos`` ``[N, 2]`` float coordinates (benchmarks: normalized by one scale).
    * ``demand`` ``[N]``, ``capacity`` ``[1]`` (capacitated problems; pickup and
      delivery problems use signed demands).
    * ``time_window`` ``[N, 2]``, ``service_time`` ``[N]`` (time-window problems,
      same time unit as distances: speed 1).
    * ``prize`` ``[N]`` (PCVRP), ``pickup_delivery_index`` ``[2, P]`` (pickup and
      delivery problems: row 0 pickups, row 1 their deliveries).
    * ``depot_angle`` ``[N]``: θ = atan2(y - y0, x - x0) about node 0, 0 at the depots.
    * ``num_depots`` ``[1]`` long: ``K`` (1 but for multi-depot CVRP), on every
      instance; ``depot_vehicles`` ``[K]`` long (optional): the most routes that may
      leave each depot, announced by ``limited_fleet`` ``[1]`` bool (on every instance).
    * ``problem`` (str), ``name`` (str, optional).
    * ``travel_cost`` ``[N * N]`` (optional): an explicit, possibly asymmetric cost
      matrix, row-major and flattened so batches of any sizes concatenate; read it
      as :attr:`cost_matrix` ``[N, N]``. Costs, route quantities, feasibility and
      the solvers use it in place of Euclidean distances (:mod:`.costs`).
    * ``explicit_cost`` ``[1]`` bool (whether ``travel_cost`` is set) and
      ``open_routes`` ``[1]`` bool (vehicles do not return: arcs into the depot cost
      nothing and the depot's closing time does not bind the return). Both are on
      every instance, so a batch that loses a matrix is caught (see below).
    * Benchmarks also keep ``raw_pos`` (float64, original units), ``scale`` and
      ``rounding`` so :meth:`cost` reports the benchmark's own numbers (and
      ``raw_travel_cost`` when they carry an explicit matrix).

    Solution fields (set by :meth:`from_routes`):

    * ``edge_index`` ``[2, E]``: the route graph, arcs depot→first, consecutive
      customers, last→depot, routes in order.
    * ``route_depot`` ``[R]`` long: each route's depot (``0 .. K-1``, local ids).
    * ``route_index`` ``[2, V]``: (customer, route id) pairs of visited customers;
      :attr:`route_id` gives the per-node view (-1 for depot and unvisited).
    * ``route_pos`` ``[N]`` (1-based; depot 0, unvisited -1), ``cum_dist`` ``[N]``
      (d_i), ``route_length`` ``[N]`` (d_L; 0 for depot and unvisited),
      ``num_routes`` ``[1]``.

    Batching with :class:`torch_geometric.data.Batch` shifts node indices and route
    ids, so route ids stay unique over a batch. Batch one problem at a time, or
    problems with the same fields (e.g. CVRP with CVRP): PyG keeps only the fields
    of the *first* instance (and raises ``KeyError`` when a later instance lacks
    one of them), so a TSP followed by a CVRP would lose ``demand`` and
    ``capacity``. :meth:`cost`, :meth:`check`, :meth:`is_feasible` and
    :meth:`arc_lengths` refuse such a batch with :class:`InvalidInstanceError`
    instead of silently ignoring the lost constraints.
    """

    def __inc__(self, key: str, value: Any, *args: Any, **kwargs: Any) -> Any:
        if key == "route_index":
            return torch.tensor([[self.num_nodes], [int(self.num_routes.sum())]])
        return super().__inc__(key, value, *args, **kwargs)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_instance(cls, problem: str | Problem, pos: Any, *, demand: Any = None,
                      capacity: Any = None, time_window: Any = None,
                      service_time: Any = None, prize: Any = None,
                      pickup_delivery_index: Any = None, name: str | None = None,
                      raw_pos: Any = None, raw_time_window: Any = None,
                      raw_service_time: Any = None, scale: float = 1.0,
                      rounding: str = "none", cost_matrix: Any = None,
                      raw_cost_matrix: Any = None, open_routes: bool = False,
                      num_depots: int = 1, depot_vehicles: Any = None) -> RoutingData:
        """Validate and copy an instance (nothing the caller passed is kept or mutated).

        ``cost_matrix`` ``[N, N]`` gives explicit travel costs in ``pos``'s units
        (``raw_cost_matrix``: in the original units, with ``raw_pos``; its diagonal
        is ignored). ``open_routes=True`` (CVRP, VRPTW): vehicles end at their last
        customer.

        The rule of every input (the batch's :meth:`RoutingInstances.check` applies
        the same): numbers are real, integers are converted (to ``pos``'s dtype for
        the matrix), bools and complex numbers are refused, never cast; node ids
        (``pickup_delivery_index``) are integers; a tensor lies on ``pos``'s device
        (lists and arrays are created there); ``open_routes`` is a bool (or a bool
        tensor of one flag), never a string or a number read by its truth value.

        Raises:
            InvalidInstanceError: NaN/inf values, wrong shapes, a bool or complex
                field, a tensor on another device than ``pos`` (naming both), an
                ``open_routes`` that is not a bool, negative demand, capacity or
                service time, a demand above capacity, a window that opens after it
                closes, malformed pickup/delivery pairs, a negative or non-finite
                cost, open routes on a problem without them; a ``num_depots`` that is
                not an integer in 1..N-1 (or above 1 on a problem without several
                depots), a depot with a demand, ``depot_vehicles`` not one integer >= 1
                per depot.
        """
        prob = Problem.parse(problem)
        label = name
        pos_t = as_tensor(pos, "pos", torch.get_default_dtype(), label)
        dev = pos_t.device

        def field(value: Any, key: str, dtype: torch.dtype = torch.float) -> Tensor | None:
            return None if value is None else as_tensor(value, key, dtype, label, dev)

        fields: dict[str, Tensor | None] = {
            "pos": pos_t, "demand": field(demand, "demand"),
            "capacity": None if capacity is None else field(capacity, "capacity").reshape(-1),
            "time_window": field(time_window, "time_window"),
            "service_time": field(service_time, "service_time"), "prize": field(prize, "prize"),
            "pickup_delivery_index": field(pickup_delivery_index, "pickup_delivery_index",
                                           torch.long),
        }
        # (a malformed pos is named by validate_instance, which needs the depots)
        k = depot_count(num_depots, pos_t.size(0) if pos_t.dim() == 2 else 2, prob, label)
        validate_instance(prob, fields["pos"], fields["demand"], fields["capacity"],
                          fields["time_window"], fields["service_time"], fields["prize"],
                          fields["pickup_delivery_index"], label, num_depots=k)
        n = pos_t.size(0)
        open_routes = open_routes_flag(open_routes, dev, label)
        if open_routes and prob not in OPEN_ROUTE_PROBLEMS:
            raise InvalidInstanceError(
                f"{where(label)}open routes are an option of "
                f"{', '.join(p.value for p in OPEN_ROUTE_PROBLEMS)}, not {prob.value!r}")
        if cost_matrix is not None:
            matrix = field(cost_matrix, "cost_matrix", pos_t.dtype)
            fields["travel_cost"] = checked_cost_matrix(matrix, n, label).reshape(-1)
        depot = torch.arange(n, device=dev) < k
        data = cls(**{key: v for key, v in fields.items() if v is not None})
        data.depot_angle = depot_angle(data.pos, torch.zeros(n, dtype=torch.long, device=dev),
                                       depot)
        data.problem = prob.value
        data.explicit_cost = torch.tensor([cost_matrix is not None], device=dev)
        data.open_routes = torch.tensor([open_routes], device=dev)
        data.num_depots = torch.tensor([k], device=dev)
        # on every instance, so a batch that loses the limits is caught (as explicit_cost)
        data.limited_fleet = torch.tensor([depot_vehicles is not None], device=dev)
        if depot_vehicles is not None:
            data.depot_vehicles = check_depot_vehicles(
                field(depot_vehicles, "depot_vehicles", torch.long).reshape(-1), k, label)
        if name is not None:
            data.name = str(name)
        for key, value in raw_unit_fields(prob, n, field, label, raw_pos, raw_time_window,
                                          raw_service_time, cost_matrix is not None,
                                          raw_cost_matrix).items():
            setattr(data, key, value)
        data.scale = torch.tensor([float(scale)], dtype=torch.float64, device=dev)
        data.rounding = torch.tensor([ROUNDING_CODES[rounding]], device=dev)
        return data

    @classmethod
    def from_routes(cls, instance: RoutingData, routes: Iterable[Iterable[int]],
                    depots: Iterable[int] | None = None) -> RoutingData:
        """A new ``RoutingData`` holding ``instance`` and the solution ``routes``.

        Args:
            instance: an instance (any solution it already holds is replaced).
            routes: one list of customer ids per route, depot omitted, e.g.
                ``[[3, 5, 1], [2, 4]]``. Node ids must be integers (ints, NumPy
                integers, integer tensors or arrays); floats, even integral ones
                such as ``2.0``, and bools are refused.
            depots: each route's depot (``0 .. K-1``): needed when the instance has
                several depots; ``None`` is depot 0 for every route.

        Raises:
            InvalidSolutionError: a node id that is not an integer, node out of
                range, depot inside a route, empty route, a customer missing or
                visited twice, several routes for a single-vehicle problem, no
                depots or a non-depot for a route of a multi-depot instance.
            TypeError: ``instance`` is a batch (``RoutingInstances``, a PyG ``Batch``)
                or not a ``RoutingData``.
        """
        check_one_instance(instance)
        prob = Problem.parse(instance.problem)
        n = instance.num_nodes
        label = getattr(instance, "name", None)
        k = instance.depot_count
        clean = normalize_routes(routes, n, prob, label, num_depots=k)
        homes = normalize_route_depots(depots, len(clean), k, label)
        src, dst = [], []
        for route, home in zip(clean, homes):
            tour = [home, *route, home]
            src.extend(tour[:-1])
            dst.extend(tour[1:])
        data = cls(**{k: (v.clone() if isinstance(v, Tensor) else v)
                      for k, v in instance.to_dict().items() if k not in SOLUTION_KEYS})
        data.edge_index = torch.tensor([src, dst], dtype=torch.long, device=instance.pos.device)
        data._set_route_quantities()
        return data

    def _set_route_quantities(self) -> None:
        """(Re)compute the solution fields from ``edge_index``."""
        rq = route_quantities(self.pos, self.edge_index, self.depot_mask,
                              getattr(self, "batch", None), self.num_graphs,
                              arc_cost=route_arc_costs(self, raw=False))
        visited = rq.route_id >= 0
        nodes = torch.nonzero(visited).flatten()
        self.route_index = torch.stack([nodes, rq.route_id[nodes]])
        self.route_depot = route_depots(self, rq.route_id, rq.num_routes)
        self.num_routes = rq.num_routes
        self.route_pos = rq.route_pos
        self.cum_dist = rq.cum_dist
        self.route_length = rq.route_length

    def _first_node(self) -> Tensor | None:
        """``[N]`` the first node of each node's graph (``None``: one graph)."""
        ptr = getattr(self, "ptr", None)
        return None if ptr is None else ptr[:-1].index_select(0, self._graph_of_node())

    # ------------------------------------------------------------------ views
    @property
    def depot_count(self) -> int:
        """``K``, the depots of one instance (nodes ``0 .. K-1``; 1 for data saved
        before depots were a node set)."""
        if isinstance(self, Batch):
            raise TypeError("depot_count is per instance: index the batch first")
        return int(self.num_depots.reshape(-1)[0]) if "num_depots" in self else 1

    @property
    def depot_mask(self) -> Tensor:
        """``[N]`` bool, True at the depots of each graph (nodes ``0 .. K-1``)."""
        batched = getattr(self, "ptr", None) is not None
        return depot_mask(self.num_nodes, self.num_depots if "num_depots" in self else None,
                          self._graph_of_node() if batched else None, self._first_node(),
                          self.pos.device)

    @property
    def cost_matrix(self) -> Tensor:
        """``[N, N]`` travel costs of one instance (:mod:`.costs`): the explicit
        matrix when it has one, else the Euclidean distances; zero into the depot
        with open routes. In ``pos``'s units."""
        if isinstance(self, Batch):
            raise TypeError("cost_matrix is per instance: index the batch first "
                            "(batch[i].cost_matrix)")
        return self.travel.dense()[0]

    @property
    def travel(self) -> TravelCost:
        """The instance's travel costs, depots and variants as a batch of one
        (:mod:`.travel`), in ``pos``'s units."""
        if isinstance(self, Batch):
            raise TypeError("travel is per instance: index the batch first (batch[i].travel)")
        flat = self.travel_cost if "travel_cost" in self else None
        n = self.num_nodes
        return TravelCost(self.pos[None], None if flat is None else flat.view(1, n, n),
                          self.open_routes.reshape(1) if "open_routes" in self else None,
                          self.depot_count)

    @property
    def has_solution(self) -> bool:
        return "edge_index" in self

    def _require_solution(self) -> None:
        if not self.has_solution:
            raise NoSolutionError(
                f"{self._label(0)}this instance has no solution; build one with "
                f"RoutingData.from_routes(instance, routes)")

    @property
    def route_id(self) -> Tensor:
        """``[N]`` route id of each node (unique over a batch); -1 for depot/unvisited."""
        self._require_solution()
        rid = torch.full((self.num_nodes,), -1, dtype=torch.long, device=self.pos.device)
        rid[self.route_index[0]] = self.route_index[1]
        return rid

    @property
    def visited(self) -> Tensor:
        """``[N]`` bool, True for customers on a route."""
        return self.route_id >= 0

    def _label(self, graph: int) -> str:
        names = getattr(self, "name", None)
        if isinstance(names, list):
            return f"instance {names[graph]!r}: "
        if isinstance(names, str):
            return f"instance {names!r}: "
        return f"instance {graph}: " if isinstance(self, Batch) else ""

    def _check_batch_fields(self) -> None:
        """Refuse a ``Batch`` that lost fields some of its problems need
        (:func:`~.type_checks.refuse_lost_fields`)."""
        refuse_lost_fields(self)

    def _graph_of_node(self) -> Tensor:
        batch = getattr(self, "batch", None)
        return batch if batch is not None else torch.zeros(
            self.num_nodes, dtype=torch.long, device=self.pos.device)

    def routes(self) -> list[list[int]] | list[list[list[int]]]:
        """The solution as lists of customer ids (depot omitted), in route order.

        For a ``Batch``: one such list per instance, with local node ids.
        """
        self._require_solution()
        depot = self.depot_mask.tolist()
        graph = self._graph_of_node().tolist()
        ptr = self.ptr.tolist() if isinstance(self, Batch) else [0, self.num_nodes]
        out: list[list[list[int]]] = [[] for _ in range(len(ptr) - 1)]
        for s, d in zip(*self.edge_index.tolist()):
            if not depot[d]:
                if depot[s]:
                    out[graph[d]].append([])
                out[graph[d]][-1].append(d - ptr[graph[d]])
        return out if isinstance(self, Batch) else out[0]

    @property
    def num_graphs(self) -> int:
        """1 for a single instance (``Batch`` overrides this)."""
        return 1

    # ------------------------------------------------------------------ evaluation
    def arc_lengths(self) -> Tensor:
        """``[E]`` length of each route arc in the instance's own units (benchmarks:
        original units with the benchmark's rounding)."""
        self._require_solution()
        self._check_batch_fields()
        return route_arc_costs(self, raw=True)

    def cost(self) -> Tensor:
        """Objective value: a scalar tensor, or ``[num_graphs]`` for a ``Batch``.

        Total route length (TSP, CVRP, VRPTW, PDTSP, PDPTW); PCVRP subtracts the
        prizes of visited customers. Benchmark instances report original units
        with their rounding convention, so gaps to BKS are right.

        Raises:
            NoSolutionError: no solution.
            InvalidInstanceError: a ``Batch`` mixing problems with different fields.
        """
        length = self.arc_lengths()
        graph = self._graph_of_node()
        prize = self.prize if "prize" in self else None
        cost = solution_cost(length, graph[self.edge_index[0]], self.num_graphs, prize,
                             self.visited if prize is not None else None, graph)
        return cost if isinstance(self, Batch) else cost[0]

    def check(self, allow_zero_length: bool = False) -> None:
        """Raise a typed error for the first broken constraint, else return None.

        Raises:
            InvalidInstanceError: a ``Batch`` mixing problems with different fields.
            InvalidSolutionError: structural problems (missing or repeated customers).
            ZeroLengthRouteError: a route of length 0, unless ``allow_zero_length``.
            InfeasibleSolutionError: capacity, time window or precedence violated.
        """
        from pyg_routing.data.feasibility import find_violations

        self._require_solution()
        self._check_batch_fields()
        violations = find_violations(self, allow_zero_length=allow_zero_length, limit=1)
        if violations:
            raise violations[0]

    def is_feasible(self, allow_zero_length: bool = False) -> Tensor:
        """``[num_graphs]`` bool (scalar for a single instance), without raising for
        violated constraints (a ``Batch`` mixing problems with different fields is
        refused as in :meth:`check`)."""
        from pyg_routing.data.feasibility import feasible_mask

        self._require_solution()
        self._check_batch_fields()
        mask = feasible_mask(self, allow_zero_length=allow_zero_length)
        return mask if isinstance(self, Batch) else mask[0]


# Cached datasets are loaded with ``torch.load(weights_only=True)`` first; allow our
# data class there so loading neither warns nor falls back to unpickling everything.
torch.serialization.add_safe_globals([RoutingData])
