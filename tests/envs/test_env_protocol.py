"""One environment protocol: the step and the destroy-and-repair environments both fit."""

import pytest
import torch

from pyg_routing.data.generators import make_generator
from pyg_routing.envs import (
    DeconstructionEnv,
    ImprovementEnv,
    PairReinsertionEnv,
    RoutingEnv,
    TwoOptEnv,
    UnsupportedProblemError,
)
from pyg_routing.envs.deconstruction import NDSFeatures, observe

ENVS = [TwoOptEnv(), PairReinsertionEnv(), DeconstructionEnv()]


@pytest.mark.parametrize("env", ENVS, ids=lambda e: e.name)
def test_every_environment_is_a_routing_env_and_refuses_problems_alike(env):
    assert isinstance(env, RoutingEnv)
    assert isinstance(env, ImprovementEnv) == (env.name != "deconstruction")
    unsupported = next(p for p in ("tsp", "pdtsp", "pcvrp") if
                       all(q.value != p for q in env.problems))
    with pytest.raises(UnsupportedProblemError,
                       match=f"the {env.name} environment supports .*, not '{unsupported}'"):
        env.check_problem(unsupported)


@pytest.mark.parametrize("problem", ["cvrp", "pcvrp"])
def test_the_destroy_and_repair_env_observes_and_returns_routes(problem):
    inst = make_generator(problem, 10, seed=4).sample(2)
    env = DeconstructionEnv()
    batch = env.reset(inst, augment=2, rng=0)
    obs = env.observe(batch)
    ref = observe(batch.state, NDSFeatures.from_instances(inst))
    for name in ("x", "pred", "succ", "tour", "route_pos", "route_id", "cum_dist"):
        assert torch.equal(getattr(obs, name), getattr(ref, name)), name
    assert env.observe(batch) is not obs and batch.features is not None  # features kept
    routes = env.to_routes(batch)
    assert len(routes) == 4                                  # 2 instances x 2 slots
    for slot in routes:
        visited = sorted(v for r in slot for v in r)
        assert len(visited) == len(set(visited)) and all(1 <= v <= 10 for v in visited)
        if problem == "cvrp":
            assert visited == list(range(1, 11))
