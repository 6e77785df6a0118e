"""``ToursState``: ``S`` many-route solutions as dense numpy arrays (NDS's search state).

Each solution slot ``s`` belongs to instance ``inst[s]`` of a
:class:`~pyg_routing.envs.deconstruction.problem.ProblemArrays` (e.g. 8 augmentation
slots per instance share one distance matrix); all slots have the same ``N``
customers (ids ``1..N``; the depots in the kernel order of :mod:`.depots`). A solution
is a set of tours, each a linked list of customers stored in a TOUR SLOT ``t`` in
``0..N-1`` (at most ``N`` non-empty tours exist). Slot labels are arbitrary: no repair
decision depends on them.

The arrays are numpy so the numba kernels update them in place; torch views come
from ``torch.from_numpy`` (:meth:`ToursState.neighbours`, :meth:`ToursState.tour_labels`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
import torch

from pyg_routing.envs.deconstruction._kernels import recompute_kernel
from pyg_routing.envs.deconstruction._state_checks import (
    check_layout,
    check_route_depots,
    check_routes,
    check_state,
)
from pyg_routing.envs.deconstruction.compile_notice import announce_compilation
from pyg_routing.envs.deconstruction.problem import ProblemArrays
from pyg_routing.errors import InvalidSolutionError


@dataclass
class ToursState:
    """``S`` solutions with ``N`` customers each.

    Attributes:
        inst: ``int32 [S]`` instance row of each slot.
        succ: ``int32 [S, N+1]`` successor of customer ``c`` in its tour, 0 if ``c`` ends
            its tour (or is unvisited); index 0 unused (0).
        pred: ``int32 [S, N+1]`` predecessor, 0 if ``c`` starts its tour (or is unvisited).
        tour: ``int32 [S, N+1]`` tour slot of ``c``, -1 if unvisited (PCVRP); index 0 = -1.
        first: ``int32 [S, N]`` first customer of each tour slot, 0 = free slot.
        last: ``int32 [S, N]`` last customer (0 if free).
        size: ``int32 [S, N]`` number of customers.
        load: ``float64 [S, N]`` total demand.
        length: ``float64 [S, N]`` depot -> ... -> depot distance, summed from the depot.
        prize: ``float64 [S, N]`` collected prize (PCVRP; 0 otherwise).
        depot: ``int32 [S, N]`` the depot number ``0..K-1`` of each tour slot (0 if free):
            the tour leaves from and returns to it (:mod:`.depots`).
        cost: ``float64 [S]`` Σ_t (length - prize), summed over the tours ordered by
            their first customer. This is the library's PCVRP objective (distance minus
            collected prizes, equal to :meth:`RoutingData.cost`); NDS reports distance
            plus UNcollected prizes, which is this cost plus the sum of all prizes.
    """

    inst: np.ndarray
    succ: np.ndarray
    pred: np.ndarray
    tour: np.ndarray
    first: np.ndarray
    last: np.ndarray
    size: np.ndarray
    load: np.ndarray
    length: np.ndarray
    prize: np.ndarray
    depot: np.ndarray
    cost: np.ndarray

    # ------------------------------------------------------------------ shape
    def __len__(self) -> int:
        return self.succ.shape[0]

    @property
    def num_customers(self) -> int:
        return self.succ.shape[1] - 1

    def arrays(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def empty(cls, num_slots: int, num_customers: int, inst: np.ndarray) -> ToursState:
        """All customers unvisited, all tour slots free (fill it with a kernel)."""
        s, n = num_slots, num_customers
        tour = np.full((s, n + 1), -1, np.int32)
        return cls(inst=np.ascontiguousarray(inst, dtype=np.int32),
                   succ=np.zeros((s, n + 1), np.int32), pred=np.zeros((s, n + 1), np.int32),
                   tour=tour, first=np.zeros((s, n), np.int32), last=np.zeros((s, n), np.int32),
                   size=np.zeros((s, n), np.int32), load=np.zeros((s, n)),
                   length=np.zeros((s, n)), prize=np.zeros((s, n)),
                   depot=np.zeros((s, n), np.int32), cost=np.zeros(s))

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_routes(cls, arrays: ProblemArrays, routes_per_slot: Sequence[Sequence[Sequence[int]]],
                    inst: Sequence[int] | np.ndarray,
                    depots: Sequence[Sequence[int]] | None = None) -> ToursState:
        """A state holding the given solutions (route ``j`` of a slot goes to tour slot ``j``).

        Args:
            arrays: the instances.
            routes_per_slot: ``S`` solutions, each a list of routes of customer ids
                (depot omitted), e.g. ``[[[3, 1], [2, 4]], ...]``. PCVRP may leave
                customers out; the other problems must visit every customer once.
            inst: ``[S]`` instance row of each slot.
            depots: per slot, each route's depot number ``0..K-1`` (``None``: depot 0,
                which only single-depot arrays may leave implicit).

        Raises:
            InvalidSolutionError: a malformed solution (non-integer or out-of-range id,
                the depot inside a route, an empty route, a customer visited twice or
                not at all), naming the slot, route and customer.
            InfeasibleSolutionError: a capacity or time-window violation, naming the
                slot, route and customer.
        """
        n = arrays.num_customers
        inst_arr = np.asarray(inst)
        if inst_arr.ndim != 1 or len(inst_arr) != len(routes_per_slot):
            raise InvalidSolutionError(
                f"`inst` must have one entry per slot ({len(routes_per_slot)}), got shape "
                f"{inst_arr.shape}")
        state = cls.empty(len(routes_per_slot), n, inst_arr)
        check_routes(arrays, routes_per_slot, state.inst)
        homes = check_route_depots(arrays, routes_per_slot, depots)
        for s, routes in enumerate(routes_per_slot):
            # Construction only (not per search iteration): one numpy fill per slot.
            seqs = [np.asarray(r, dtype=np.int64).reshape(-1) for r in routes]
            if not seqs:
                continue
            nodes = np.concatenate(seqs)
            lens = np.array([len(q) for q in seqs])
            rid = np.repeat(np.arange(len(seqs)), lens)
            starts = np.cumsum(lens) - lens
            is_first = np.zeros(len(nodes), bool)
            is_first[starts] = True
            is_last = np.roll(is_first, -1)
            state.succ[s, nodes] = np.where(is_last, 0, np.roll(nodes, -1))
            state.pred[s, nodes] = np.where(is_first, 0, np.roll(nodes, 1))
            state.tour[s, nodes] = rid
            state.first[s, : len(seqs)] = nodes[starts]
            state.last[s, : len(seqs)] = nodes[starts + lens - 1]
            state.size[s, : len(seqs)] = lens
            state.depot[s, : len(seqs)] = homes[s]
        state.recompute_costs(arrays)
        state.check(arrays)
        return state

    def recompute_costs(self, arrays: ProblemArrays) -> None:
        """Recompute every tour's load, length and prize and every slot's cost exactly
        from the tours (in place)."""
        announce_compilation(recompute_kernel)
        recompute_kernel(arrays.dist, arrays.demand, arrays.prize, self.inst, self.succ,
                         self.pred, self.tour, self.first, self.size, self.load, self.length,
                         self.prize, self.depot, self.cost)

    # ------------------------------------------------------------------ copies
    def clone(self) -> ToursState:
        return ToursState(**{k: v.copy() for k, v in self.arrays().items()})

    def take(self, idx: np.ndarray | Sequence[int]) -> ToursState:
        """A new state made of copies of slots ``idx`` (repeats allowed)."""
        idx = np.asarray(idx, dtype=np.int64)
        return ToursState(**{k: np.ascontiguousarray(v[idx]) for k, v in self.arrays().items()})

    def copy_slots(self, dst_idx: np.ndarray | Sequence[int], src_idx: np.ndarray | Sequence[int],
                   src: ToursState | None = None) -> None:
        """``self[dst_idx] = src[src_idx]`` for every array (vectorized fancy indexing;
        ``src`` defaults to ``self``, e.g. the sync step of augmented SA)."""
        src = self if src is None else src
        dst = np.asarray(dst_idx, dtype=np.int64)
        idx = np.asarray(src_idx, dtype=np.int64)
        for name, arr in self.arrays().items():
            arr[dst] = getattr(src, name)[idx]      # the right side is a copy: overlap is safe

    # ------------------------------------------------------------------ views
    def to_routes(self) -> list[list[list[int]]]:
        """Per slot, the tours as lists of customer ids from the depot, ordered by their
        first customer (a canonical order: slot labels are arbitrary)."""
        out = []
        for s in range(len(self)):
            succ = self.succ[s].tolist()
            heads = np.nonzero((self.tour[s] >= 0) & (self.pred[s] == 0))[0]
            heads = heads[heads > 0].tolist()
            routes = []
            for v in heads:
                route = []
                while v != 0 and len(route) <= self.num_customers:
                    route.append(v)
                    v = succ[v]
                routes.append(route)
            out.append(routes)
        return out

    def route_depots(self) -> list[list[int]]:
        """Per slot, each route's depot number, in the order of :meth:`to_routes`."""
        out = []
        for s in range(len(self)):
            heads = np.nonzero((self.tour[s] >= 0) & (self.pred[s] == 0))[0]
            heads = heads[heads > 0]
            out.append(self.depot[s, self.tour[s, heads]].tolist())
        return out

    def neighbours(self) -> torch.Tensor:
        """``[S, N, 2]`` long: (predecessor, successor) of customers 1..N, the depot as 0
        (a singleton tour or an unvisited customer gives (0, 0), as in NDS)."""
        pred = torch.from_numpy(self.pred)[:, 1:]
        succ = torch.from_numpy(self.succ)[:, 1:]
        return torch.stack((pred, succ), dim=-1).long()

    def tour_labels(self) -> torch.Tensor:
        """``[S, N]`` long tour slot of customers 1..N (-1 unvisited)."""
        return torch.from_numpy(self.tour)[:, 1:].long()

    # ------------------------------------------------------------------ checks
    def check(self, arrays: ProblemArrays) -> None:
        """Validate structure, stored values and feasibility of every slot (vectorized).

        Raises:
            InvalidSolutionError: bad shapes or dtypes, inconsistent links or slots, a
                customer missing (CVRP/VRPTW) or on a broken tour, stored load, length,
                prize or cost that disagree with the tours; names slot, tour, customer.
            InfeasibleSolutionError: capacity or time windows violated.
        """
        check_state(self, arrays)


def state_shapes_match(state: ToursState, arrays: ProblemArrays) -> None:
    """Raise InvalidSolutionError unless ``state`` fits ``arrays`` (dtypes, shapes,
    contiguity, instance rows): what the kernels need, checked in O(S)."""
    check_layout(state, arrays)
