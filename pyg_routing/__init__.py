"""pyg_routing: routing-aware positional encodings and neural VRP improvement
solvers for PyTorch Geometric."""

from typing import Any

from pyg_routing import errors

__version__ = "0.1.0"
__all__ = ["Problem", "RoutingData", "errors", "__version__"]


def __getattr__(name: str) -> Any:
    # Problem and RoutingData import torch and PyG: only when asked for, so that
    # `pyg-routing --help` (which imports this package first) stays fast.
    if name in ("Problem", "RoutingData"):
        from pyg_routing import data

        return getattr(data, name)
    raise AttributeError(f"module 'pyg_routing' has no attribute {name!r}")
