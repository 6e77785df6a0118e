"""Environments search only with the travel costs they declare (``cost_kinds``): the
others are refused at ``reset`` instead of falling back to Euclidean distances."""

from __future__ import annotations

import pytest

from pyg_routing.data import make_generator
from pyg_routing.envs.base import UnsupportedProblemError
from pyg_routing.envs.two_opt.env import TwoOptEnv
from pyg_routing.training import backbones

PROBLEM = {"dact": "cvrp", "n2s": "pdtsp", "nds": "cvrp"}


def _reset(name: str, env, instances):
    return env.reset(instances, rng=0) if name == "nds" else env.reset(instances)


class EuclideanOnly(TwoOptEnv):
    cost_kinds = ("euclidean",)


def test_undeclared_cost_kinds_are_refused_by_name():
    env = EuclideanOnly()
    streets = make_generator("cvrp", 8, seed=0, costs="streets", grid=4).sample(2)
    with pytest.raises(UnsupportedProblemError, match="the two_opt environment searches with "
                                                      "euclidean costs; these instances have "
                                                      "an explicit cost matrix"):
        env.reset(streets)
    both = make_generator("cvrp", 8, seed=0, costs="streets", grid=4, open_routes=True).sample(2)
    with pytest.raises(UnsupportedProblemError, match="an explicit cost matrix and open routes"):
        env.reset(both)
    streets.cost_matrix = None
    env.reset(streets)                      # the same layout without its matrix runs


@pytest.mark.parametrize("name", sorted(PROBLEM))
def test_each_backbone_resets_on_what_it_declares_and_refuses_the_rest(name):
    env = backbones.get(name).make_env()
    kinds = {"explicit": dict(costs="streets", grid=4)}
    if PROBLEM[name] != "pdtsp":
        kinds["open"] = dict(open_routes=True)
    for kind, kw in kinds.items():
        inst = make_generator(PROBLEM[name], 10, seed=0, **kw).sample(2)
        if kind in env.cost_kinds:
            _reset(name, env, inst)
        else:
            with pytest.raises(UnsupportedProblemError, match="these instances have"):
                _reset(name, env, inst)
