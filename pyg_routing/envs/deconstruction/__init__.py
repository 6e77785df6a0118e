"""The CPU core of Neural Deconstruction Search (NDS, Hottung et al. 2025).

* :class:`ProblemArrays` (:mod:`.problem`): CVRP / VRPTW / PCVRP instance arrays.
* :class:`ToursState` (:mod:`.state`): ``S`` many-route solutions as numpy arrays.
* :mod:`.repair`: NDS's greedy repair in numba: :func:`apply_sets_sa` (sequential
  simulated annealing over removal sets), :func:`evaluate_sets` and
  :func:`commit_sets` (training), with :func:`uniforms_per_set` fixing where every
  random number comes from.
* :mod:`.start`: NDS's start solutions, :func:`start_solutions`.
* :mod:`.destroy`: removal-set providers behind one protocol,
  :class:`DestroyProvider`: :class:`RandomDestroy` and :class:`SISRDestroy` (NDS's
  non-learned baseline).
* :mod:`.env`: :class:`DeconstructionEnv`, NDS's training environment (start
  solutions, warm-up, ``singleImp`` rounds).
* NDS's augmented simulated annealing is the destroy-and-repair search of
  :mod:`pyg_routing.search` (:class:`~pyg_routing.search.DestroyRepairSearch`).
* :mod:`.repair_reference`, :mod:`.destroy_reference`: slow pure-Python references of
  the same rules, for tests.
"""

from pyg_routing.envs.deconstruction._validate import InvalidRemovalSetError
from pyg_routing.envs.deconstruction.destroy import (
    DestroyProvider,
    PerArraysCache,
    RandomDestroy,
    SISRDestroy,
    neighbour_table,
)
from pyg_routing.envs.deconstruction.env import (
    DeconstructionBatch,
    DeconstructionEnv,
    ImproveResult,
)
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

__all__ = ["CVRP", "PCVRP", "VRPTW", "DeconstructionBatch", "DeconstructionEnv",
           "DestroyProvider", "ImproveResult", "InvalidRemovalSetError", "PerArraysCache",
           "ProblemArrays", "RandomDestroy", "SISRDestroy", "ToursState", "apply_sets_sa",
           "commit_sets", "draw_start_randomness", "draw_uniforms", "euclidean_distances",
           "evaluate_sets", "neighbour_table", "start_parameters", "start_solutions",
           "uniforms_per_set"]

from pyg_routing.envs.deconstruction.observation import (  # noqa: E402
    NDSFeatures,
    NDSObservation,
    augmentation_index,
    observe,
    route_arcs,
    unit_square_symmetries,
)
from pyg_routing.envs.deconstruction.policy_destroy import PolicyDestroy  # noqa: E402

__all__ += ["NDSFeatures", "NDSObservation", "PolicyDestroy", "augmentation_index", "observe",
            "route_arcs", "unit_square_symmetries"]
