"""Routing instances and solutions as PyG data, generators, datasets and solvers.

Every name below is imported from its submodule on first use
(:mod:`pyg_routing._lazy`).
"""

from pyg_routing._lazy import lazy_exports

#: public name -> the submodule that defines it
_EXPORTS = {
    "benchmark_search_instances": "search_inputs",
    "BenchmarkDataset": "benchmarks",
    "capacity_for": "problems",
    "CVRPGenerator": "generators",
    "dense_route_quantities": "route_quantities",
    "edge_index_from_successors": "route_quantities",
    "edge_index_from_tours": "route_quantities",
    "load_instance": "benchmarks",
    "load_nds_file": "nds_generators",
    "load_search_instance": "search_inputs",
    "make_generator": "generators",
    "nds_test_set": "nds_generators",
    "NDSCVRPGenerator": "nds_generators",
    "NDSPCVRPGenerator": "nds_generators",
    "NDSVRPTWGenerator": "nds_generators",
    "PCVRPGenerator": "generators",
    "PDTSPGenerator": "generators",
    "PRESETS": "presets",
    "Problem": "problems",
    "read_bks": "benchmarks",
    "route_quantities": "route_quantities",
    "RouteQuantities": "route_quantities",
    "RoutingData": "routing_data",
    "RoutingDataset": "dataset",
    "RoutingInstances": "instances",
    "read_cordeau": "cordeau_io",
    "read_instance_file": "instance_files",
    "search_instances": "search_inputs",
    "SearchInstance": "search_inputs",
    "stack_instances": "solvers.parallel",
    "TravelCost": "travel",
    "TSPGenerator": "generators",
    "VRPTWGenerator": "generators",
    "XCVRPGenerator": "nds_generators",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
