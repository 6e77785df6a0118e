"""``RoutingInstances``: a dense batch of same-size instances (generator output)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import torch
from torch import Tensor

from pyg_routing.data.dense_validation import check_instances
from pyg_routing.data.problems import Problem
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.data.travel import TravelCost


@dataclass
class RoutingInstances:
    """``B`` instances of one problem with ``N`` nodes each (nodes ``0 .. K-1`` are
    the depots; ``K = 1`` but for multi-depot instances).

    Attributes:
        problem: the routing problem.
        pos: ``[B, N, 2]`` coordinates.
        demand: ``[B, N]`` (capacitated problems), depot 0.
        capacity: ``[B]``.
        time_window: ``[B, N, 2]``; service_time: ``[B, N]`` (VRPTW).
        prize: ``[B, N]`` (PCVRP).
        pickup_delivery_index: ``[2, P]`` local node ids, shared by all instances
            (PDTSP: pickup ``r`` pairs with delivery ``r + P``).
        cost_matrix: ``[B, N, N]`` explicit, possibly asymmetric travel costs
            (``None``: Euclidean distances of ``pos``); see :mod:`.costs`.
        open_routes: ``[B]`` bool, vehicles end at their last customer (CVRP,
            VRPTW; ``None``: all routes closed).
        num_depots: ``K``, the depots of every instance (CVRP: any ``1 <= K < N``;
            other problems: 1).
        depot_vehicles: ``[B, K]`` the most routes that may leave each depot
            (``None``: unlimited).

    What travelling costs is asked of :attr:`travel`, the one travel-cost object.
    """

    problem: Problem
    pos: Tensor
    demand: Tensor | None = None
    capacity: Tensor | None = None
    time_window: Tensor | None = None
    service_time: Tensor | None = None
    prize: Tensor | None = None
    pickup_delivery_index: Tensor | None = None
    cost_matrix: Tensor | None = None
    open_routes: Tensor | None = None
    num_depots: int = 1
    depot_vehicles: Tensor | None = None

    def check(self) -> None:
        """Validate the whole batch with tensor ops (no loop over instances).

        The rules of :meth:`RoutingData.from_instance`, per instance: at least one
        instance; shapes ``pos [B, N, 2]`` (floating point, ``N >= 2``),
        ``demand [B, N]``, ``capacity [B]``, ``time_window [B, N, 2]``,
        ``service_time [B, N]``, ``prize [B, N]``, ``pickup_delivery_index
        [2, P]``, all on ``pos``'s device; the fields the problem needs present;
        finite values; depot demand 0, no negative demand (except pickup and
        delivery problems), every demand at most the capacity, capacity > 0;
        windows that open no later than they close; no negative service time
        or prize; well-formed pickup-delivery pairs. With time windows, also every
        customer servable by the direct trip ``0 -> c -> 0`` (arrival by its
        window's end, back by the depot's, within the tolerance of
        :func:`~pyg_routing.data.feasibility.time_tolerance`): see
        :func:`~pyg_routing.data.feasibility.unservable_alone`. Nothing is modified.

        Raises:
            InvalidInstanceError: naming the first offending instance (lowest
                index) and, where it applies, node.
        """
        check_instances(self)

    def __len__(self) -> int:
        return self.pos.size(0)

    @property
    def num_nodes(self) -> int:
        return self.pos.size(1)

    @property
    def device(self) -> torch.device:
        return self.pos.device

    def _tensor_fields(self) -> dict[str, Tensor]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in ("problem", "pickup_delivery_index", "num_depots")
                and getattr(self, f.name) is not None}

    def to(self, device: torch.device | str) -> RoutingInstances:
        moved = {k: v.to(device) for k, v in self._tensor_fields().items()}
        if self.pickup_delivery_index is not None:
            moved["pickup_delivery_index"] = self.pickup_delivery_index.to(device)
        return replace(self, **moved)

    def __getitem__(self, index: int | slice | Tensor) -> RoutingData | RoutingInstances:
        """An ``int`` gives one validated :class:`RoutingData`; a slice, index tensor
        or bool mask gives a smaller ``RoutingInstances``."""
        if isinstance(index, int):
            if not -len(self) <= index < len(self):
                raise IndexError(f"instance {index} out of range for {len(self)} instances")
            return RoutingData.from_instance(
                self.problem, self.pos[index],
                demand=None if self.demand is None else self.demand[index],
                capacity=None if self.capacity is None else self.capacity[index],
                time_window=None if self.time_window is None else self.time_window[index],
                service_time=None if self.service_time is None else self.service_time[index],
                prize=None if self.prize is None else self.prize[index],
                pickup_delivery_index=self.pickup_delivery_index,
                cost_matrix=None if self.cost_matrix is None else self.cost_matrix[index],
                open_routes=self.open_routes is not None and bool(self.open_routes[index]),
                num_depots=self.num_depots,
                depot_vehicles=None if self.depot_vehicles is None
                else self.depot_vehicles[index])
        return replace(self, **{k: v[index] for k, v in self._tensor_fields().items()})

    @property
    def travel(self) -> TravelCost:
        """The batch's travel costs, depots and variants (:mod:`.travel`)."""
        return TravelCost(self.pos, self.cost_matrix, self.open_routes, self.num_depots)

    def costs(self) -> Tensor:
        """``[B, N, N]`` travel costs by the rule of :mod:`.costs`: ``cost_matrix``
        or Euclidean distances, zero into the depots with open routes (shorthand for
        ``travel.dense()``)."""
        return self.travel.dense()

    def to_data_list(self) -> list[RoutingData]:
        return [self[i] for i in range(len(self))]

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={list(v.shape)}" for k, v in self._tensor_fields().items())
        depots = f", num_depots={self.num_depots}" if self.num_depots != 1 else ""
        return f"RoutingInstances(problem={self.problem.value!r}, {parts}{depots})"
