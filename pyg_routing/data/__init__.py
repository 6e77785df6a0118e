"""Routing instances and solutions as PyG data, generators, datasets and solvers."""

from pyg_routing.data.problems import Problem, capacity_for
from pyg_routing.data.route_quantities import (
    RouteQuantities,
    dense_route_quantities,
    edge_index_from_successors,
    edge_index_from_tours,
    route_quantities,
)
from pyg_routing.data.routing_data import RoutingData

__all__ = [
    "Problem",
    "RouteQuantities",
    "RoutingData",
    "capacity_for",
    "dense_route_quantities",
    "edge_index_from_successors",
    "edge_index_from_tours",
    "route_quantities",
]
