"""Shared pieces of the node-encoding transforms."""

from __future__ import annotations

from torch import Tensor
from torch_geometric.data import Batch, Data
from torch_geometric.transforms.add_positional_encoding import add_node_attr

from pyg_routing.data.problems import Problem
from pyg_routing.errors import NoSolutionError


def require_solution(data: Data, name: str) -> None:
    """Raise :class:`NoSolutionError` unless ``data`` holds route quantities."""
    if "route_pos" not in data or "cum_dist" not in data:
        raise NoSolutionError(
            f"{name} needs a solution (route quantities); build one with "
            f"RoutingData.from_routes(instance, routes)")


def problems_of(data: Data) -> list[Problem]:
    """The problem of every graph in ``data`` (one entry for a single instance)."""
    probs = data.problem if isinstance(data.problem, list) else [data.problem]
    return [Problem.parse(p) for p in probs]


def node_graph(data: Data) -> Tensor | None:
    """``batch`` vector of a ``Batch`` (None for a single instance)."""
    return data.batch if isinstance(data, Batch) else None


def set_node_attr(data: Data, value: Tensor, attr_name: str | None) -> Data:
    """Store ``value`` as ``data[attr_name]``, or concatenate it onto ``data.x``."""
    return add_node_attr(data, value, attr_name=attr_name)
