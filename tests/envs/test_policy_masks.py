"""Property: whatever a policy samples, the move it takes is feasible.

States reached by a (randomly initialized) policy differ from those of uniform random
walks, so the mask is checked against brute force at the states the policy visits, and
every sampled move is applied and re-checked with ``RoutingData.check()``.
"""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyg_routing.data import RoutingData
from pyg_routing.data.generators import CVRPGenerator, TSPGenerator, VRPTWGenerator
from pyg_routing.envs.two_opt import action_mask, observe, reset, step, to_routes
from pyg_routing.models import DACTPolicy


def _instances(problem: str, seed: int, capacity: float):
    if problem == "tsp":
        return TSPGenerator(8, seed=seed).sample(3)
    if problem == "vrptw":
        return VRPTWGenerator(7, seed=seed).sample(3)
    return CVRPGenerator(8, seed=seed, capacity=capacity).sample(3)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), problem=st.sampled_from(["tsp", "cvrp", "vrptw"]),
       capacity=st.sampled_from([10.0, 14.0, 30.0]),
       pe=st.sampled_from(["ipexpe", "none", "spd", "rope"]),
       init=st.sampled_from(["random", "sweep", "nearest_neighbor"]))
def test_moves_sampled_by_a_policy_are_always_feasible(seed, problem, capacity, pe, init):
    torch.manual_seed(seed)
    inst = _instances(problem, seed, capacity)
    if problem == "tsp" and init == "sweep":
        init = "random"
    if problem == "vrptw" and init == "random":        # reset refuses random VRPTW tours
        init = "nearest_neighbor"
    policy = DACTPolicy.build(problem, pe=pe, dim=16, heads=2, num_layers=1, pe_dim=8).eval()
    gen = torch.Generator().manual_seed(seed)
    state = reset(inst, init, generator=gen)
    for _ in range(6):
        mask = action_mask(state)
        stuck = ~mask.flatten(1).any(1)
        obs_mask = mask.clone()
        obs_mask[stuck, 0, 0] = True              # the no-op where nothing is allowed
        with torch.no_grad():
            action = policy(observe(state, obs_mask), generator=gen)[0]
        rows = torch.arange(len(state))
        assert bool((mask[rows, action[:, 0], action[:, 1]] | stuck).all())
        for b in range(len(state)):
            # every allowed move of this state yields a feasible solution
            allowed = torch.nonzero(mask[b])
            moved, _ = step(state[torch.full((len(allowed),), b)], allowed)
            for routes in to_routes(moved, best=False):
                RoutingData.from_routes(inst[b], routes).check()
        state, reward = step(state, action)
        assert bool((reward >= 0).all())
        for b, routes in enumerate(to_routes(state, best=False)):
            RoutingData.from_routes(inst[b], routes).check()
