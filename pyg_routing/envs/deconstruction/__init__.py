"""The CPU core of Neural Deconstruction Search (NDS, Hottung et al. 2025).

* :class:`ProblemArrays` (:mod:`.problem`): CVRP / VRPTW / PCVRP instance arrays.
* :class:`ToursState` (:mod:`.state`): ``S`` many-route solutions as numpy arrays.
* :mod:`.repair`: NDS's greedy repair in numba: :func:`apply_sets_sa` (sequential
  simulated annealing over removal sets), :func:`evaluate_sets` and
  :func:`commit_sets` (training), with :func:`uniforms_per_set` fixing where every
  random number comes from.
* :mod:`.start`: NDS's start solutions, :func:`start_solutions`.
* :mod:`.repair_reference`: a slow pure-Python reference of the same rules, for tests.
"""

from pyg_routing.envs.deconstruction._validate import InvalidRemovalSetError
from pyg_routing.envs.deconstruction.problem import (
    CVRP,
    PCVRP,
    VRPTW,
    ProblemArrays,
    euclidean_distances,
)
from pyg_routing.envs.deconstruction.repair import (
    apply_sets_sa,
    commit_sets,
    draw_uniforms,
    evaluate_sets,
    uniforms_per_set,
)
from pyg_routing.envs.deconstruction.start import (
    draw_start_randomness,
    start_parameters,
    start_solutions,
)
from pyg_routing.envs.deconstruction.state import ToursState

__all__ = ["CVRP", "PCVRP", "VRPTW", "InvalidRemovalSetError", "ProblemArrays", "ToursState",
           "apply_sets_sa", "commit_sets", "draw_start_randomness", "draw_uniforms",
           "euclidean_distances", "evaluate_sets", "start_parameters", "start_solutions",
           "uniforms_per_set"]
from pyg_routing.envs.deconstruction.destroy import (  # noqa: E402
    DestroyProvider,
    PerArraysCache,
    RandomDestroy,
    SISRDestroy,
    neighbour_table,
)

__all__ += ["DestroyProvider", "PerArraysCache", "RandomDestroy", "SISRDestroy",
            "neighbour_table"]
