"""``ProblemArrays``: the instance data the NDS repair kernels read, as numpy arrays.

Every field is a dense float64 array over ``I`` instances with ``N + K`` nodes each in
the kernel order of :mod:`.depots` (depot 0, customers ``1..N``, the other depots;
``N + 1`` nodes and node 0 the depot for one depot). Fields a problem does not have are
zeros, so one compiled kernel serves CVRP, VRPTW and PCVRP and branches on
:attr:`ProblemArrays.kind` at run time.

The distance matrix is computed once per instance. The 8 dihedral augmentations of
an instance have the same distances, so several solution slots of a
:class:`~pyg_routing.envs.deconstruction.state.ToursState` share one instance row.
Memory: ``8 (N + 1)^2`` bytes per instance (32 MB at N = 2000).

Travel costs follow the rule of :mod:`pyg_routing.data.costs`: ``dist[i, a, b]`` is
the cost (and travel time) of the arc ``a -> b``, an explicit matrix's entry when the
instance has one (possibly ASYMMETRIC: every reader uses ``dist[a, b]`` for the arc
``a -> b``, never ``dist[b, a]``), else the Euclidean distance; the column of the depot
is zero on open-route instances, whose return deadline (the depot's closing time) does
not bind (:attr:`ProblemArrays.schedule_tw`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from pyg_routing.data.feasibility import CAPACITY_RTOL, describe_unservable
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.envs.base import UnsupportedProblemError
from pyg_routing.envs.deconstruction.depots import UNLIMITED, kernel_order
from pyg_routing.errors import InvalidInstanceError, where

#: Integer problem codes the kernels branch on.
CVRP = 0
VRPTW = 1
PCVRP = 2
KIND_OF_PROBLEM: dict[Problem, int] = {Problem.CVRP: CVRP, Problem.VRPTW: VRPTW,
                                       Problem.PCVRP: PCVRP}
PROBLEM_OF_KIND: dict[int, Problem] = {v: k for k, v in KIND_OF_PROBLEM.items()}
#: Largest mismatch (in distance units) tolerated between the arrays' distances from
#: the depot and coordinates they are checked against (float32 coordinates, float64
#: distances): :func:`arrays_mismatch`.
DIST_ATOL = 1e-4
# The relative slack of the capacity test ``load + d_c <= C (1 + CAPACITY_RTOL)`` is the
# data layer's (shared by the kernels, the reference and the checks, so that they agree).


def capacity_limit(capacity: np.ndarray | float) -> np.ndarray | float:
    """``C (1 + 1e-9)``: the largest load the repair accepts (same expression everywhere)."""
    return capacity * (1.0 + CAPACITY_RTOL)


def euclidean_distances(pos: np.ndarray) -> np.ndarray:
    """``[I, N+1, N+1]`` float64 Euclidean distances of ``pos [I, N+1, 2]``.

    ``sqrt(dx^2 + dy^2)`` with ``dx = x_i - x_j``: negating a float is exact, so the
    matrix is symmetric bit for bit (``d[i, j] == d[j, i]``); the repair does not rely
    on it (it reads ``d[p, c]`` and ``d[c, n]``). Built one instance at a time to keep
    the peak memory at one matrix.
    """
    out = np.empty((pos.shape[0], pos.shape[1], pos.shape[1]), dtype=np.float64)
    for i in range(pos.shape[0]):  # one matrix at a time: no [I, N, N, 2] temporary
        dx = pos[i, :, 0][:, None] - pos[i, :, 0][None, :]
        dy = pos[i, :, 1][:, None] - pos[i, :, 1][None, :]
        np.sqrt(dx * dx + dy * dy, out=out[i])
    return out


def instance_distances(instances: RoutingInstances, pos: np.ndarray) -> np.ndarray:
    """``[I, N+1, N+1]`` float64 travel costs of ``instances`` by the rule of
    :mod:`pyg_routing.data.costs` (``pos``: their float64 coordinates).

    An explicit matrix: :meth:`TravelCost.dense <pyg_routing.data.travel.TravelCost.dense>`
    (diagonal and open routes by the rule), in float64. Coordinates:
    :func:`euclidean_distances` (the arithmetic of the Euclidean path, unchanged), with
    the depots' columns zeroed on open-route instances.
    """
    travel = instances.travel
    if travel.matrix is not None:                  # the rule applied: diagonal, open routes
        return travel.dense().detach().cpu().to(dtype=torch.float64).numpy()
    dist = euclidean_distances(pos)
    opened = open_flags(instances)
    if opened.any():                               # the vehicle ends at its last customer
        dist[opened, :, :travel.num_depots] = 0.0
    return dist


def open_flags(instances: RoutingInstances) -> np.ndarray:
    """``bool [I]`` the instances with open routes."""
    return instances.travel.open_flags().detach().cpu().numpy().astype(bool)


#: The variants the NDS kernels search (:mod:`pyg_routing.data.travel`): every arc is read
#: in its driven direction (asymmetric matrices), open routes end at their last
#: customer, and each tour leaves from and returns to its own depot (:mod:`.depots`)
NDS_VARIANTS = ("euclidean", "explicit", "open", "multi_depot")


@dataclass
class ProblemArrays:
    """Instance data of ``I`` same-size instances for the NDS repair (numpy, float64).

    Attributes:
        kind: :data:`CVRP`, :data:`VRPTW` or :data:`PCVRP`.
        dist: ``[I, N+1, N+1]`` travel costs, ``dist[i, a, b]`` of the arc ``a -> b``
            (possibly asymmetric; zero into the depot with open routes).
        demand: ``[I, N+1]`` (depot 0).
        capacity: ``[I]``.
        tw: ``[I, N+1, 2]`` time windows ``(e, l)`` (VRPTW; zeros otherwise).
        service: ``[I, N+1]`` service times (VRPTW; zeros otherwise).
        prize: ``[I, N+1]`` prizes (PCVRP; zeros otherwise).
        open_routes: ``bool [I]`` open-route instances (default: none).
        num_depots: ``K`` (CVRP only when above 1); every field's nodes are in the
            kernel order of :mod:`.depots`.
        depot_vehicles: ``int64 [I, K]`` the most tours each depot may open, or
            ``None``: unlimited.

    VRPTW schedules leave the depot at ``tw[i, 0, 0] + service[i, 0]`` (``0`` for
    every NDS and generator instance, NDS's ``t = 0``), the convention of
    :meth:`RoutingData.check`.
    """

    kind: int
    dist: np.ndarray
    demand: np.ndarray
    capacity: np.ndarray
    tw: np.ndarray
    service: np.ndarray
    prize: np.ndarray
    open_routes: np.ndarray | None = None
    num_depots: int = 1
    depot_vehicles: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.open_routes is None:
            self.open_routes = np.zeros(self.dist.shape[0], dtype=bool)
        self.open_routes = np.asarray(self.open_routes, dtype=bool).reshape(-1)

    @property
    def fleet(self) -> np.ndarray:
        """``int64 [I, K]`` the tours each depot may open (:data:`.depots.UNLIMITED`
        without limits): what the kernels compare against."""
        if self.depot_vehicles is None:
            return np.full((self.num_instances, self.num_depots), UNLIMITED, np.int64)
        return np.ascontiguousarray(self.depot_vehicles, dtype=np.int64)

    @property
    def limited(self) -> bool:
        """Whether some depot's fleet is limited."""
        return self.depot_vehicles is not None

    @property
    def dist_in(self) -> np.ndarray:
        """``dist`` transposed, ``dist_in[i, c, p] = dist[i, p, c]``: the arcs INTO ``c``
        as one contiguous row, which the repair's insertion scan reads for every
        candidate (a strided column of ``dist`` made NDS's start solutions 3x slower at
        N = 2000). ``dist`` itself when every matrix is symmetric (no copy: Euclidean
        instances keep their memory traffic). Cached until ``dist`` is replaced."""
        cached = getattr(self, "_dist_in", None)
        if cached is not None and cached[0] is self.dist:
            return cached[1]
        flipped = self.dist.transpose(0, 2, 1)
        value = self.dist if np.array_equal(self.dist, flipped) \
            else np.ascontiguousarray(flipped)
        self._dist_in = (self.dist, value)
        return value

    @property
    def schedule_tw(self) -> np.ndarray:
        """The windows the VRPTW schedules are checked against (what the kernels and the
        reference read): :attr:`tw`, except that the depot's closing time, the return
        deadline, is ``+inf`` on open-route instances (the vehicle does not return, so
        the deadline does not bind). :attr:`tw` itself when no instance is open."""
        if not self.open_routes.any():
            return self.tw
        out = self.tw.copy()
        out[self.open_routes, 0, 1] = np.inf
        return out

    @property
    def num_instances(self) -> int:
        return self.dist.shape[0]

    @property
    def num_customers(self) -> int:
        """``N`` (customers are ``1..N``; the depots 0 and ``N+1..N+K-1``)."""
        return self.dist.shape[1] - self.num_depots

    @property
    def problem(self) -> Problem:
        return PROBLEM_OF_KIND[self.kind]

    @classmethod
    def from_instances(cls, instances: RoutingInstances) -> ProblemArrays:
        """Arrays of a batch of CVRP, VRPTW or PCVRP instances.

        The batch is validated first (:meth:`RoutingInstances.check`). For VRPTW,
        every customer must be servable alone (``0 -> c -> 0``): the repair opens
        such a tour without checking it, exactly as NDS does.

        Raises:
            UnsupportedProblemError: a problem other than cvrp, vrptw, pcvrp.
            InvalidInstanceError: malformed instances, or a VRPTW customer that cannot
                be served even alone (naming the instance and customer).
        """
        prob = Problem.parse(instances.problem)
        if prob not in KIND_OF_PROBLEM:
            supported = ", ".join(p.value for p in KIND_OF_PROBLEM)
            raise UnsupportedProblemError(
                f"the NDS repair supports {supported}; got problem {prob.value!r}")
        # every NDS path (the environment, the search, a removal policy) starts here
        instances.travel.refuse_variants(NDS_VARIANTS, "the NDS repair")
        instances.check()
        pos = instances.pos.detach().cpu().to(dtype=torch.float64).numpy()
        b, n1 = pos.shape[:2]
        k = instances.num_depots
        order = None if k == 1 else kernel_order(k, n1)

        def field(value, shape: tuple[int, ...]) -> np.ndarray:
            if value is None:
                return np.zeros(shape, dtype=np.float64)
            arr = value.detach().cpu().to(dtype=torch.float64).numpy()
            return np.ascontiguousarray(arr if order is None or arr.ndim < 2
                                        else arr[:, order])

        dist = instance_distances(instances, pos)
        if order is not None:                      # the kernel order of .depots
            dist = np.ascontiguousarray(dist[:, order][:, :, order])
        vehicles = instances.depot_vehicles
        arrays = cls(kind=KIND_OF_PROBLEM[prob], dist=dist,
                     demand=field(instances.demand, (b, n1)),
                     capacity=field(instances.capacity, (b,)).reshape(b),
                     tw=field(instances.time_window, (b, n1, 2)),
                     service=field(instances.service_time, (b, n1)),
                     prize=field(instances.prize, (b, n1)),
                     open_routes=open_flags(instances), num_depots=k,
                     depot_vehicles=None if vehicles is None
                     else vehicles.detach().cpu().long().numpy().reshape(b, k).copy())
        if arrays.kind == VRPTW:
            arrays.check_servable()
        return arrays

    def check_servable(self) -> None:
        """VRPTW: refuse customers that cannot be served by the tour ``0 -> c -> 0``.

        Uses the very expressions of the repair's feasibility test, exact as NDS's
        (no tolerance: the data layer's load-time check, :func:`~pyg_routing.data.
        feasibility.unservable_alone`, allows ``TIME_RTOL``; a customer late by less than
        that passes it but cannot be inserted by the repair) (leave the depot
        at ``t0``, arrive ``t0 + d(0, c) <= l_c``, depart ``max(arrive, e_c) + s_c``,
        return by ``l_0``, not checked on open-route instances), vectorized over all
        instances and customers. Direction-correct: out ``d(0, c)``, back ``d(c, 0)``.

        Raises:
            InvalidInstanceError: naming the first offending instance and customer.
        """
        out, home = self.dist[:, 0, 1:], self.dist[:, 1:, 0]        # [I, N] each
        t0 = self.tw[:, 0, 0] + self.service[:, 0]                  # [I]
        arrive = t0[:, None] + out
        late = arrive > self.tw[:, 1:, 1]
        back = (np.maximum(arrive, self.tw[:, 1:, 0]) + self.service[:, 1:]) + home
        too_late_back = back > self.schedule_tw[:, 0:1, 1]
        bad = late | too_late_back
        if not bad.any():
            return
        i, c = (int(x) for x in np.argwhere(bad)[0])
        raise InvalidInstanceError(f"{where(i, node=c + 1)}" + describe_unservable(
            bool(late[i, c]), float(arrive[i, c]), float(back[i, c]),
            float(self.tw[i, c + 1, 1]), float(self.tw[i, 0, 1])))


def depot_rows(instances: RoutingInstances) -> np.ndarray | None:
    """``float64 [I, N+1]`` travel costs from the depot of instances with an explicit
    matrix (``None`` for coordinates: :func:`arrays_mismatch` recomputes them)."""
    if instances.cost_matrix is None:
        return None
    rows = instances.cost_matrix[:, 0].detach().cpu().to(dtype=torch.float64).numpy().copy()
    rows[:, 0] = 0.0
    return rows


def arrays_mismatch(arrays: ProblemArrays, problem: Problem | str, pos: torch.Tensor,
                    rows: np.ndarray | None = None, open_routes: np.ndarray | None = None
                    ) -> str | None:
    """Why ``arrays`` are not the arrays of the ``problem`` instances at ``pos [I, M, 2]``
    (counts, problem, open routes, or the costs from the depot: ``rows`` of
    :func:`depot_rows` for explicit matrices, else recomputed from the coordinates,
    naming the first instance that differs), or ``None`` if they are.
    ``open_routes``: the instances' :func:`open_flags` (``None``: all closed)."""
    prob = Problem.parse(problem)
    k = arrays.num_depots
    shape = (arrays.num_instances, arrays.num_customers + k)
    if tuple(pos.shape[:2]) != shape or KIND_OF_PROBLEM.get(prob) != arrays.kind:
        return (f"the arrays hold {shape[0]} {arrays.problem.value} instance(s) of "
                f"{shape[1] - k} customers, the instances are {pos.shape[0]} {prob.value} of "
                f"{pos.shape[1] - k}")
    opened = np.zeros(shape[0], bool) if open_routes is None else open_routes
    if (opened != arrays.open_routes).any():
        i = int(np.argmax(opened != arrays.open_routes))
        return (f"{where(i)}the arrays have {'open' if arrays.open_routes[i] else 'closed'} "
                f"routes, the instance has {'open' if opened[i] else 'closed'} ones")
    if rows is None:
        pos = pos.detach().double().cpu()
        d0 = (pos - pos[:, :1]).norm(dim=-1).numpy()
        given = "the coordinates give"
    else:
        d0, given = rows, "the cost matrix gives"
    order = kernel_order(k, shape[1])              # node j of the arrays: order[j]
    off = ~np.isclose(d0[:, order], arrays.dist[:, 0], rtol=0, atol=DIST_ATOL)
    if off.any():
        i, j = (int(x) for x in np.argwhere(off)[0])
        return (f"{where(i, node=int(order[j]))}the arrays' distance from the depot is "
                f"{arrays.dist[i, 0, j]:.6g}, {given} {d0[i, order[j]]:.6g}")
    return None


def check_arrays_of(arrays: ProblemArrays, instances: RoutingInstances, who: str) -> None:
    """Refuse ``arrays`` that are not a :class:`ProblemArrays` (``TypeError``) or not
    those of ``instances`` (:class:`InvalidInstanceError`, saying how they differ)."""
    if not isinstance(arrays, ProblemArrays):
        raise TypeError(f"{who}: `arrays` must be the instances' ProblemArrays "
                        f"(ProblemArrays.from_instances(instances)), got "
                        f"{type(arrays).__name__}")
    why = arrays_mismatch(arrays, instances.problem, instances.pos, depot_rows(instances),
                          open_flags(instances))
    if why is not None:
        raise InvalidInstanceError(f"{who}: `arrays` belong to other instances: {why}; build "
                                   f"them with ProblemArrays.from_instances(instances)")
