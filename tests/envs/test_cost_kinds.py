"""Every environment refuses the travel costs it cannot search with (explicit
matrices, open routes) instead of falling back to Euclidean distances silently."""

from __future__ import annotations

import pytest

from pyg_routing.data import make_generator
from pyg_routing.envs.base import UnsupportedProblemError
from pyg_routing.training import backbones

CASES = {"dact": "cvrp", "n2s": "pdtsp", "nds": "cvrp"}


def _reset(name: str, instances):
    env = backbones.get(name).make_env()
    if name == "nds":
        return env.reset(instances, rng=0)
    return env.reset(instances)


@pytest.mark.parametrize("name", sorted(CASES))
def test_explicit_matrices_are_refused_where_unsupported(name):
    env = backbones.get(name).make_env()
    if "explicit" in env.cost_kinds:
        pytest.skip(f"{name} searches with explicit matrices")
    inst = make_generator(CASES[name], 10, seed=0, costs="streets", grid=4).sample(2)
    with pytest.raises(UnsupportedProblemError, match="these instances have an explicit "
                                                      "cost matrix"):
        _reset(name, inst)
    inst.cost_matrix = None
    _reset(name, inst)                       # the same layout without its matrix runs


@pytest.mark.parametrize("name", ["dact", "nds"])
def test_open_routes_are_refused_where_unsupported(name):
    env = backbones.get(name).make_env()
    if "open" in env.cost_kinds:
        pytest.skip(f"{name} searches with open routes")
    inst = make_generator("cvrp", 10, seed=0, open_routes=True).sample(2)
    with pytest.raises(UnsupportedProblemError, match=f"the {env.name} environment searches "
                                                      f"with euclidean costs; these "
                                                      f"instances have open routes"):
        _reset(name, inst)
