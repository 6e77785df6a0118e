"""pyg_routing: routing-aware positional encodings and neural VRP improvement
solvers for PyTorch Geometric."""

from pyg_routing import errors
from pyg_routing.data import Problem, RoutingData

__version__ = "0.1.0"
__all__ = ["Problem", "RoutingData", "errors", "__version__"]
