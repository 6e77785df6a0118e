"""The contract of the node encodings, shared by the transforms and the search loops.

Every node encoding is a :class:`NodeEncoding`: it answers its output ``width``
and computes its ``[N, width]`` code from :class:`EncodingInputs`, the batched route
quantities of any number of solutions. A transform builds those inputs from a
``RoutingData``/``Batch`` (:meth:`EncodingInputs.from_data`); a search environment
builds them from its dense state every step. Both call the same :meth:`NodeEncoding.code`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor
from torch_geometric.data import Batch, Data
from torch_geometric.transforms import BaseTransform
from torch_geometric.transforms.add_positional_encoding import add_node_attr

from pyg_routing.data.costs import asymmetric_graphs, direction_sensitive
from pyg_routing.data.problems import Problem
from pyg_routing.errors import NoSolutionError
from pyg_routing.functional._route_graph import RouteGraph, route_graph_from_data
from pyg_routing.functional.depot_reference import node_depots
from pyg_routing.functional.index_pe import route_sizes


def _needs_solution(by: str, what: str) -> NoSolutionError:
    return NoSolutionError(f"{by} needs a solution ({what}); build one with "
                           f"RoutingData.from_routes(instance, routes)")


@dataclass
class EncodingInputs:
    """What node encodings read, for ``N`` nodes of ``G`` graphs (flat).

    Solution-dependent fields are ``None`` when there is no solution; an encoding
    that needs one raises :class:`NoSolutionError` (:meth:`need`).

    Attributes:
        depot_angle: ``[N]`` depot-relative angle θ (an instance property).
        depot_mask: ``[N]`` bool, True at depots (and depot copies).
        direction_sensitive: ``[G]`` bool, whether each graph's problem tells a
            route from its reversal (resolves IPE's ``direction="auto"``).
        batch: ``[N]`` graph of each node (``None``: one graph).
        route_pos, route_id, cum_dist, route_length: ``[N]`` route quantities
            (see :class:`~pyg_routing.data.route_quantities.RouteQuantities`).
        route_graph: builds the :class:`RouteGraph` the graph encodings read.
        graph_node: ``[N]`` node of that route graph each node takes its code from
            (``None``: the same node; a search state maps depot copies to the depot).
        demand: ``[N]`` node demands (``None``: the problem has none); read by the
            demand-weighted per-route XPE.
        dtype: floating dtype of the codes (``None``: the functions' default).
        open_routes: ``[G]`` bool, graphs whose routes are open (IPE's half-period
            phase); ``None``: all closed.
        cycle_pos: ``[N]`` position of each node along the ONE cycle of a search
            state that keeps its solution so (all routes in a row, joined by depot
            copies, from depot copy 0 at 0: the 2-opt and pair-reinsertion states);
            ``None`` elsewhere. Every graph then has the same number of nodes.
        pos: ``[N, 2]`` coordinates and home: ``[N]`` the depot node of each node (its
            route's; :func:`~pyg_routing.functional.depot_reference.node_depots`):
            what XPE's other reference points read; ``None``: every angle is about
            node 0 (``depot_angle``).
        depot_centre: ``[G, 2]`` and depot_count: ``[G]``, the centroid and number of
            each graph's depots, where depot nodes repeat a depot (a search state's
            copies); ``None``: read from the ``depot_mask`` nodes.
    """

    depot_angle: Tensor
    depot_mask: Tensor
    direction_sensitive: Tensor
    batch: Tensor | None = None
    route_pos: Tensor | None = None
    route_id: Tensor | None = None
    cum_dist: Tensor | None = None
    route_length: Tensor | None = None
    route_graph: Callable[[], RouteGraph] | None = None
    graph_node: Tensor | None = None
    demand: Tensor | None = None
    dtype: torch.dtype | None = None
    open_routes: Tensor | None = None
    cycle_pos: Tensor | None = None
    pos: Tensor | None = None
    home: Tensor | None = None
    depot_centre: Tensor | None = None
    depot_count: Tensor | None = None

    @classmethod
    def from_data(cls, data: Data) -> EncodingInputs:
        """The inputs of a ``RoutingData`` or a ``Batch`` of them (with or without a
        solution)."""
        probs = data.problem if isinstance(data.problem, list) else [data.problem]
        aware = torch.tensor([Problem.parse(p).direction_sensitive for p in probs],
                             device=data.pos.device)
        asym = None if "travel_cost" not in data else asymmetric_graphs(
            data.travel_cost, data.batch if isinstance(data, Batch) else None,
            data.num_nodes, len(probs))
        aware = direction_sensitive(aware, asym, getattr(data, "open_routes", None))
        solved = "route_pos" in data
        batched = isinstance(data, Batch)
        first = data.ptr[:-1].index_select(0, data.batch) if batched else torch.zeros(
            data.num_nodes, dtype=torch.long, device=data.pos.device)
        home = node_depots(first, data.route_id if solved else None,
                           data.route_depot if "route_depot" in data else None)
        return cls(
            depot_angle=data.depot_angle, depot_mask=data.depot_mask,
            direction_sensitive=aware, batch=data.batch if isinstance(data, Batch) else None,
            route_pos=data.route_pos if solved else None,
            route_id=data.route_id if solved else None,
            cum_dist=data.cum_dist if "cum_dist" in data else None,
            route_length=data.route_length if "route_length" in data else None,
            route_graph=lambda name="this encoding": route_graph_from_data(data, name),
            demand=data.demand if "demand" in data else None,
            dtype=data.pos.dtype if data.pos.is_floating_point() else None,
            open_routes=getattr(data, "open_routes", None), pos=data.pos, home=home)

    def node_open_routes(self) -> Tensor | None:
        """``[N]`` bool, True for the nodes of open-route graphs (IPE's half-period
        phase); ``None`` when no graph has open routes."""
        opened = self.open_routes
        if opened is None or not bool(opened.any()):
            return None
        opened = opened.reshape(-1).to(torch.bool)
        if self.batch is None:
            return opened[:1].expand(self.depot_mask.numel())
        return opened[self.batch]

    def need(self, by: str, *fields: str) -> None:
        """Raise :class:`NoSolutionError` (naming ``by``) unless ``fields`` are set."""
        missing = [f for f in fields if getattr(self, f) is None]
        if missing:
            raise _needs_solution(by, ", ".join(missing))

    def cycle_size(self, by: str) -> int:
        """Nodes on the one cycle of each graph (:attr:`cycle_pos`); raises
        :class:`NoSolutionError` naming ``by`` where the solution is not kept as one
        cycle (a ``RoutingData``)."""
        if self.cycle_pos is None:
            raise NoSolutionError(f"{by} reads the position along the one cycle of a search "
                                  f"state (the 2-opt or pair-reinsertion environment), not "
                                  f"a RoutingData's routes")
        return self.cycle_pos.numel() // max(self.direction_sensitive.numel(), 1)

    def route_size(self, by: str) -> Tensor:
        """``[N]`` customers on each node's route (the depot: its graph's largest)."""
        self.need(by, "route_pos", "route_id")
        return route_sizes(self.route_pos, self.route_id, self.batch)

    def graph(self, by: str) -> RouteGraph:
        """The route graph (raises :class:`NoSolutionError` without route arcs).

        On instances with open routes it is their open route graph (each route a
        path hanging from the depot, :attr:`RouteGraph.open_graph`).
        """
        if self.route_graph is None:
            raise _needs_solution(by, "route arcs")
        return self.route_graph(by).with_open(self.open_routes)

    def per_node(self, code: Tensor) -> Tensor:
        """A code of the route graph's nodes, read for every node (``graph_node``)."""
        return code if self.graph_node is None else code[self.graph_node]


class NodeEncoding(BaseTransform):
    """Base of the node-encoding transforms: ``width``, ``code(inputs)``, and the
    PyG transform around them (``encode(data)``, ``forward(data)``)."""

    attr_name: str | None

    @property
    def width(self) -> int:
        """Channels of the code."""
        raise NotImplementedError

    def code(self, inputs: EncodingInputs) -> Tensor:
        """The ``[N, width]`` code of the nodes of ``inputs``."""
        raise NotImplementedError

    def encode(self, data: Data) -> Tensor:
        """The ``[num_nodes, width]`` encoding of ``data``, without storing it."""
        return self.code(EncodingInputs.from_data(data))

    def forward(self, data: Data) -> Data:
        return add_node_attr(data, self.encode(data), attr_name=self.attr_name)


def require_solution(data: Data, name: str) -> None:
    """Raise :class:`NoSolutionError` unless ``data`` holds route quantities."""
    if "route_pos" not in data or "cum_dist" not in data:
        raise _needs_solution(name, "route quantities")
