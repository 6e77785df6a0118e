import numpy as np
import pytest

from pyg_routing.data.generators import make_generator
from pyg_routing.envs.deconstruction import ProblemArrays, apply_sets_sa, start_solutions


@pytest.fixture(scope="session", autouse=True)
def _compiled_kernels() -> None:
    """Compile (or load from numba's on-disk cache) the kernels once per session, so
    that no single test pays for the compilation."""
    arrays = ProblemArrays.from_instances(make_generator("cvrp", 8, seed=0).sample(1))
    state = start_solutions(arrays, np.zeros(1, np.int32), rng=0)
    apply_sets_sa(state, state.clone(), arrays, np.array([[[1, 2]]]), rng=0)
