"""Routing instances and solutions as PyG data, generators, datasets and solvers."""

from pyg_routing.data.benchmarks import BenchmarkDataset, load_instance, read_bks
from pyg_routing.data.dataset import RoutingDataset
from pyg_routing.data.generators import (
    CVRPGenerator,
    PCVRPGenerator,
    PDTSPGenerator,
    TSPGenerator,
    VRPTWGenerator,
    make_generator,
)
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.nds_generators import (
    NDSCVRPGenerator,
    NDSPCVRPGenerator,
    NDSVRPTWGenerator,
    XCVRPGenerator,
    load_nds_file,
    nds_test_set,
)
from pyg_routing.data.presets import PRESETS
from pyg_routing.data.problems import Problem, capacity_for
from pyg_routing.data.route_quantities import (
    RouteQuantities,
    dense_route_quantities,
    edge_index_from_successors,
    edge_index_from_tours,
    route_quantities,
)
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.data.search_inputs import (
    SearchInstance,
    benchmark_search_instances,
    load_search_instance,
    search_instances,
)
from pyg_routing.data.solvers.parallel import stack_instances

__all__ = [
    "BenchmarkDataset",
    "CVRPGenerator",
    "NDSCVRPGenerator",
    "NDSPCVRPGenerator",
    "NDSVRPTWGenerator",
    "PRESETS",
    "PCVRPGenerator",
    "PDTSPGenerator",
    "Problem",
    "RouteQuantities",
    "RoutingData",
    "RoutingDataset",
    "RoutingInstances",
    "SearchInstance",
    "TSPGenerator",
    "VRPTWGenerator",
    "XCVRPGenerator",
    "benchmark_search_instances",
    "capacity_for",
    "dense_route_quantities",
    "edge_index_from_successors",
    "edge_index_from_tours",
    "load_instance",
    "load_search_instance",
    "load_nds_file",
    "make_generator",
    "nds_test_set",
    "read_bks",
    "route_quantities",
    "search_instances",
    "stack_instances",
]
