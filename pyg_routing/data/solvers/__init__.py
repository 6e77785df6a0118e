"""Solvers: reference solutions (PyVRP, OR-Tools), batched constructive
heuristics and a parallel driver over many instances.

PyVRP and OR-Tools are imported lazily inside their solve functions, so
importing this package stays cheap.
"""

from pyg_routing.data.solvers.constructive import (
    nearest_neighbor,
    routes_to_tours,
    sweep,
    tours_to_routes,
)
from pyg_routing.data.solvers.insertion import cheapest_insertion
from pyg_routing.data.solvers.ortools_solver import solve_ortools
from pyg_routing.data.solvers.parallel import (
    SOLVERS,
    available_solvers,
    resolve_solver,
    solve_instances,
    stack_instances,
)
from pyg_routing.data.solvers.pyvrp_solver import integer_instance, solve_pyvrp

__all__ = [
    "SOLVERS",
    "available_solvers",
    "cheapest_insertion",
    "integer_instance",
    "nearest_neighbor",
    "resolve_solver",
    "routes_to_tours",
    "solve_instances",
    "solve_ortools",
    "solve_pyvrp",
    "stack_instances",
    "sweep",
    "tours_to_routes",
]
