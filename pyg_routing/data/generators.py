"""``make_generator``: the instance generator of a problem, size and data preset.

The generators live one level down: paper App. F's in
:mod:`~pyg_routing.data.paper_generators` (preset ``paper``), NDS's in
:mod:`~pyg_routing.data.nds_generators`, and :mod:`~pyg_routing.data.presets` names
the families. This module dispatches on the preset, so it sits above all three
(imports point one way); it re-exports the App. F generators, which are imported
from here (``from pyg_routing.data.generators import CVRPGenerator``).
"""

from __future__ import annotations

from pyg_routing.data.generator_options import make_with_options
from pyg_routing.data.paper_generators import (
    DISTRIBUTIONS,
    GENERATORS,
    PROBLEMS,
    CVRPGenerator,
    PCVRPGenerator,
    PDTSPGenerator,
    TSPGenerator,
    VRPTWGenerator,
    _Generator,
    calibrate_kappa,
)
from pyg_routing.data.presets import get_preset
from pyg_routing.data.problems import Problem
from pyg_routing.errors import InvalidInstanceError


def make_generator(problem: str | Problem, num_customers: int, seed: int | None = None,
                   preset: str = "paper", **kwargs) -> _Generator:
    """The generator of ``problem`` (``tsp``, ``cvrp``, ``vrptw``, ``pcvrp``, ``pdtsp``).

    Args:
        problem: the routing problem.
        num_customers: customers per instance (TSP: cities).
        seed: generator seed (``None``: fresh entropy).
        preset: the data family (:data:`~pyg_routing.data.presets.PRESETS`):
            ``paper`` (App. F, the default), ``nds`` (NDS's data),
            ``nds_low_capacity``/``nds_clustered`` (Tab. 6 shifts, CVRP-500), ...
        **kwargs: options of the preset's generator (``capacity``, ``distribution``...).

    Raises:
        InvalidInstanceError: unknown preset, or a problem or size it lacks (the
            message lists the choices), or a bad generator option.
    """
    if preset != "paper":
        return get_preset(preset).make(problem, num_customers, seed=seed, **kwargs)
    prob = Problem.parse(problem)
    if prob not in GENERATORS:
        raise InvalidInstanceError(f"no generator for {prob.value!r}; generators exist for "
                                   f"{', '.join(p.value for p in GENERATORS)}")
    return make_with_options(GENERATORS[prob], num_customers, seed, kwargs,
                             f"problem {prob.value!r}")


__all__ = ["DISTRIBUTIONS", "GENERATORS", "PROBLEMS", "CVRPGenerator", "PCVRPGenerator",
           "PDTSPGenerator", "TSPGenerator", "VRPTWGenerator", "calibrate_kappa",
           "make_generator"]
