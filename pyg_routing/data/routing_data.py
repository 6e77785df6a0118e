"""``RoutingData``: a routing instance and (optionally) a solution as PyG data."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Batch, Data

from pyg_routing.data.costs import checked_cost_matrix, dense_costs, route_arc_costs
from pyg_routing.data.evaluation import ROUNDING_CODES, solution_cost
from pyg_routing.data.problems import OPEN_ROUTE_PROBLEMS, Problem
from pyg_routing.data.route_quantities import depot_angle, route_quantities
from pyg_routing.data.type_checks import check_one_instance
from pyg_routing.data.validation import (
    as_tensor,
    normalize_routes,
    open_routes_flag,
    validate_instance,
)
from pyg_routing.errors import InvalidInstanceError, NoSolutionError, where

#: Fields that describe a solution (recomputed whenever the routes change).
SOLUTION_KEYS = ("edge_index", "route_index", "num_routes", "route_pos", "cum_dist",
                 "route_length")


class RoutingData(Data):
    r"""A routing instance, optionally with a solution, as a PyG ``Data``.

    Instance fields (node 0 is the depot, ``N`` nodes):

    * ``pos`` ``[N, 2]`` float coordinates (benchmarks: normalized by one scale).
    * ``demand`` ``[N]``, ``capacity`` ``[1]`` (capacitated problems; pickup and
      delivery problems use signed demands).
    * ``time_window`` ``[N, 2]``, ``service_time`` ``[N]`` (time-window problems,
      same time unit as distances: speed 1).
    * ``prize`` ``[N]`` (PCVRP), ``pickup_delivery_index`` ``[2, P]`` (pickup and
      delivery problems: row 0 pickups, row 1 their deliveries).
    * ``depot_angle`` ``[N]``: θ = atan2(y - y0, x - x0), 0 at the depot.
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
                      raw_cost_matrix: Any = None, open_routes: bool = False
                      ) -> RoutingData:
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
                cost, open routes on a problem without them.
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
        validate_instance(prob, fields["pos"], fields["demand"], fields["capacity"],
                          fields["time_window"], fields["service_time"], fields["prize"],
                          fields["pickup_delivery_index"], label)
        n = pos_t.size(0)
        open_routes = open_routes_flag(open_routes, dev, label)
        if open_routes and prob not in OPEN_ROUTE_PROBLEMS:
            raise InvalidInstanceError(
                f"{where(label)}open routes are an option of "
                f"{', '.join(p.value for p in OPEN_ROUTE_PROBLEMS)}, not {prob.value!r}")
        if cost_matrix is not None:
            matrix = field(cost_matrix, "cost_matrix", pos_t.dtype)
            fields["travel_cost"] = checked_cost_matrix(matrix, n, label).reshape(-1)
        depot = torch.zeros(n, dtype=torch.bool, device=dev)
        depot[0] = True
        data = cls(**{k: v for k, v in fields.items() if v is not None})
        data.depot_angle = depot_angle(data.pos, torch.zeros(n, dtype=torch.long, device=dev),
                                       depot)
        data.problem = prob.value
        data.explicit_cost = torch.tensor([cost_matrix is not None], device=dev)
        data.open_routes = torch.tensor([open_routes], device=dev)
        if name is not None:
            data.name = str(name)
        if raw_pos is not None:
            data.raw_pos = field(raw_pos, "raw_pos", torch.float64)
            if prob.has_time_windows and (raw_time_window is None or raw_service_time is None):
                # Feasibility uses raw distances, so times must be in the same raw units.
                raise InvalidInstanceError(
                    f"{where(label)}`raw_pos` of a time-window problem needs "
                    f"`raw_time_window` and `raw_service_time` in the same units")
            if raw_time_window is not None:
                data.raw_time_window = field(raw_time_window, "raw_time_window", torch.float64)
                data.raw_service_time = field(raw_service_time, "raw_service_time",
                                              torch.float64)
        if raw_pos is not None and cost_matrix is not None and raw_cost_matrix is None:
            # cost() and check() read original units when raw_pos is given.
            raise InvalidInstanceError(f"{where(label)}`raw_pos` with `cost_matrix` needs "
                                       f"`raw_cost_matrix`: the costs in original units")
        if raw_cost_matrix is not None:
            if cost_matrix is None:
                raise InvalidInstanceError(f"{where(label)}`raw_cost_matrix` needs "
                                           f"`cost_matrix` (the same costs in pos's units)")
            raw = field(raw_cost_matrix, "raw_cost_matrix", torch.float64)
            data.raw_travel_cost = checked_cost_matrix(raw, n, label).reshape(-1)
        data.scale = torch.tensor([float(scale)], dtype=torch.float64, device=dev)
        data.rounding = torch.tensor([ROUNDING_CODES[rounding]], device=dev)
        return data

    @classmethod
    def from_routes(cls, instance: RoutingData, routes: Iterable[Iterable[int]]) -> RoutingData:
        """A new ``RoutingData`` holding ``instance`` and the solution ``routes``.

        Args:
            instance: an instance (any solution it already holds is replaced).
            routes: one list of customer ids per route, depot omitted, e.g.
                ``[[3, 5, 1], [2, 4]]``. Node ids must be integers (ints, NumPy
                integers, integer tensors or arrays); floats, even integral ones
                such as ``2.0``, and bools are refused.

        Raises:
            InvalidSolutionError: a node id that is not an integer, node out of
                range, depot inside a route, empty route, a customer missing or
                visited twice, several routes for a single-vehicle problem.
            TypeError: ``instance`` is a batch (``RoutingInstances``, a PyG ``Batch``)
                or not a ``RoutingData``.
        """
        check_one_instance(instance)
        prob = Problem.parse(instance.problem)
        n = instance.num_nodes
        clean = normalize_routes(routes, n, prob, getattr(instance, "name", None))
        src, dst = [], []
        for route in clean:
            tour = [0, *route, 0]
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
        self.num_routes = rq.num_routes
        self.route_pos = rq.route_pos
        self.cum_dist = rq.cum_dist
        self.route_length = rq.route_length

    # ------------------------------------------------------------------ views
    @property
    def depot_mask(self) -> Tensor:
        """``[N]`` bool, True at each graph's node 0."""
        mask = torch.zeros(self.num_nodes, dtype=torch.bool, device=self.pos.device)
        ptr = getattr(self, "ptr", None)
        mask[ptr[:-1] if ptr is not None else 0] = True
        return mask

    @property
    def cost_matrix(self) -> Tensor:
        """``[N, N]`` travel costs of one instance (:mod:`.costs`): the explicit
        matrix when it has one, else the Euclidean distances; zero into the depot
        with open routes. In ``pos``'s units."""
        if isinstance(self, Batch):
            raise TypeError("cost_matrix is per instance: index the batch first "
                            "(batch[i].cost_matrix)")
        flat = self.travel_cost if "travel_cost" in self else None
        n = self.num_nodes
        return dense_costs(self.pos[None], None if flat is None else flat.view(1, n, n),
                           self.open_routes.reshape(1) if "open_routes" in self else None)[0]

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
        """Refuse a ``Batch`` that lost fields some of its problems need.

        PyG collates only the keys of the batch's first instance, so the fields a
        problem needs are all in a batch exactly when no field was dropped that
        one of its instances required (``from_instance`` guarantees them).
        """
        problems = self.problem
        if not isinstance(problems, list):
            return
        if "explicit_cost" in self and bool(self.explicit_cost.any()) \
                and "travel_cost" not in self:
            first = int(torch.nonzero(self.explicit_cost)[0])
            raise InvalidInstanceError(
                f"{self._label(first)}its cost matrix was lost in batching (PyG keeps only "
                f"the fields of the first instance, which has none): batch instances with "
                f"explicit costs apart from those without")
        kinds = [Problem.parse(p) for p in dict.fromkeys(problems)]
        lost = [key for key in dict.fromkeys(f for p in kinds for f in p.instance_fields)
                if key not in self]
        if lost:
            names = [repr(p.value) for p in kinds]
            listed = ", ".join(names[:-1]) + f" and {names[-1]}"
            raise InvalidInstanceError(
                f"batch mixes problems {listed}; their fields ({', '.join(lost)}) cannot "
                f"be batched (PyG keeps only the fields of the first instance, problem "
                f"{problems[0]!r}): batch one problem at a time")

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
