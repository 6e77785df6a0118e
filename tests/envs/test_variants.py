"""Environments search only the variants they declare (``variants``): the others are
refused at ``reset``, by construction, instead of falling back to Euclidean distances
or to one depot."""

from __future__ import annotations

import pytest
import torch

from pyg_routing.data import RoutingData, RoutingInstances, make_generator
from pyg_routing.data.problems import Problem
from pyg_routing.envs.base import RoutingEnv, UnsupportedProblemError
from pyg_routing.envs.two_opt.env import TwoOptEnv
from pyg_routing.training import backbones

PROBLEM = {"dact": "cvrp", "n2s": "pdtsp", "nds": "cvrp"}


def _reset(name: str, env, instances):
    return env.reset(instances, rng=0) if name == "nds" else env.reset(instances)


class EuclideanOnly(TwoOptEnv):
    variants = ("euclidean",)


def _two_depots(seed: int = 0) -> RoutingInstances:
    base = make_generator("cvrp", 8, seed=seed).sample(2)
    demand = base.demand.clone()
    demand[:, 1] = 0                                    # node 1 becomes the second depot
    return RoutingInstances(Problem.CVRP, base.pos, demand=demand, capacity=base.capacity,
                            num_depots=2)


def test_undeclared_variants_are_refused_by_name():
    env = EuclideanOnly()
    streets = make_generator("cvrp", 8, seed=0, costs="streets", grid=4).sample(2)
    with pytest.raises(UnsupportedProblemError, match="the two_opt environment searches with "
                                                      "Euclidean costs; these instances have "
                                                      "an explicit cost matrix"):
        env.reset(streets)
    both = make_generator("cvrp", 8, seed=0, costs="streets", grid=4, open_routes=True).sample(2)
    with pytest.raises(UnsupportedProblemError, match="an explicit cost matrix and open routes"):
        env.reset(both)
    streets.cost_matrix = None
    env.reset(streets)                      # the same layout without its matrix runs


def test_several_depots_are_searched_by_dact_and_nds_and_refused_by_n2s():
    inst = _two_depots()
    inst.check()
    assert inst.travel.variants == ("euclidean", "multi_depot")
    assert backbones.get("dact").make_env().reset(inst).copy_depot is not None
    env = backbones.get("nds").make_env()
    batch = _reset("nds", env, inst)
    assert batch.arrays.num_depots == 2 and set(batch.state.depot.ravel()) <= {0, 1}
    for b, (routes, depots) in enumerate(zip(env.to_routes(batch), env.route_depots(batch))):
        data = RoutingData.from_routes(inst[b], routes, depots=depots)   # instance's ids
        data.check()
        assert float(data.cost()) == pytest.approx(batch.state.cost[b], rel=1e-6)
    assert "multi_depot" not in backbones.get("n2s").make_env().variants
    with pytest.raises(UnsupportedProblemError, match="these instances have several depots"):
        EuclideanOnly().reset(inst)


def test_an_environment_cannot_define_reset_and_skip_the_check():
    with pytest.raises(TypeError, match="defines reset\\(\\); an environment defines start"):
        class Forgetful(TwoOptEnv):              # noqa: F841 (refused when declared)
            def reset(self, instances, init="sweep", generator=None):
                return self.start(instances, init, generator)
    with pytest.raises(TypeError, match="names \\['streets'\\]"):
        class Unknown(TwoOptEnv):                # noqa: F841
            variants = ("euclidean", "streets")
    assert "reset" not in vars(TwoOptEnv) and RoutingEnv.reset is TwoOptEnv.reset


def test_reset_refuses_one_instance_before_reading_its_costs():
    inst = make_generator("cvrp", 8, seed=0).sample(1)
    with pytest.raises(TypeError, match="TwoOptEnv.reset takes a RoutingInstances batch, "
                                        "got one RoutingData"):
        TwoOptEnv().reset(inst[0])


@pytest.mark.parametrize("name", sorted(PROBLEM))
def test_each_backbone_resets_on_what_it_declares_and_refuses_the_rest(name):
    env = backbones.get(name).make_env()
    kinds = {"explicit": dict(costs="streets", grid=4)}
    if PROBLEM[name] != "pdtsp":
        kinds["open"] = dict(open_routes=True)
    for kind, kw in kinds.items():
        inst = make_generator(PROBLEM[name], 10, seed=0, **kw).sample(2)
        if kind in env.variants:
            _reset(name, env, inst)
        else:
            with pytest.raises(UnsupportedProblemError, match="these instances have"):
                _reset(name, env, inst)


def test_travel_cost_is_the_dense_rule_and_zeroes_every_depot_when_open():
    inst = _two_depots()
    inst.open_routes = torch.tensor([True, False])
    costs = inst.travel.dense()
    assert torch.equal(costs[0, :, :2], torch.zeros(9, 2))
    assert torch.equal(costs[1], inst.travel.dense()[1]) and bool((costs[1, 2:, :2] > 0).all())
    assert inst.travel.variants == ("euclidean", "open", "multi_depot")
    assert torch.equal(inst.travel.depot_mask(), torch.arange(9) < 2)
    assert inst.travel.matrix_or_none() is not None
    inst.open_routes = None
    assert inst.travel.coordinates_suffice and inst.travel.matrix_or_none() is None
