"""N2S's pair removal-reinsertion environment on explicit asymmetric matrices: costs
against recosting, batch against one by one, the coordinate search reproduced by a
symmetric matrix, and the augmented search returning checked routes."""

import pytest
import torch

from pyg_routing.data import RoutingData, make_generator
from pyg_routing.data.costs import euclidean_matrix
from pyg_routing.envs import PairReinsertionEnv
from pyg_routing.search import improve


def _streets(b=4, seed=0):
    return make_generator("pdtsp", 10, seed=seed, costs="streets", grid=5).sample(b)


def _recost(inst, routes):
    out = []
    for i, r in enumerate(routes):
        data = RoutingData.from_routes(inst[i], r)
        data.check()
        out.append(float(data.cost()))
    return torch.tensor(out, dtype=torch.float64)


@pytest.mark.parametrize("init", ["random", "nearest_neighbor"])
def test_moves_on_a_matrix_keep_costs_exact(init):
    inst = _streets()
    env = PairReinsertionEnv()
    gen = torch.Generator().manual_seed(0)
    state = env.reset(inst, init, gen)
    for _ in range(30):
        state, _ = env.step(state, env.random_action(state, generator=gen))
        assert torch.allclose(_recost(inst, env.to_routes(state, best=False)),
                              state.cost.double(), atol=1e-5)
    # the tours are driven one way: reversing them costs something else
    reversed_cost = []
    for i, (route,) in enumerate(env.to_routes(state, best=False)):
        m = inst.cost_matrix[i].double()
        tour = [0, *route[::-1], 0]
        reversed_cost.append(sum(float(m[a, b]) for a, b in zip(tour[:-1], tour[1:])))
    assert (torch.tensor(reversed_cost) - state.cost.double()).abs().max() > 1e-3


def test_batch_equals_one_by_one_on_a_matrix():
    inst = _streets(b=3, seed=1)
    env = PairReinsertionEnv()
    state = env.reset(inst, "random", torch.Generator().manual_seed(1))
    gen = torch.Generator().manual_seed(2)
    for _ in range(8):
        action = env.random_action(state, generator=gen)
        new, reward = env.step(state, action)
        for i in range(len(inst)):
            one, r = env.step(state[i], action[i:i + 1])
            assert torch.equal(one.cost, new.cost[i:i + 1]) and torch.equal(r, reward[i:i + 1])
        state = new


def test_symmetric_matrix_reproduces_the_coordinate_search():
    plain = make_generator("pdtsp", 10, seed=3).sample(3)
    explicit = make_generator("pdtsp", 10, seed=3).sample(3)
    explicit.cost_matrix = euclidean_matrix(explicit.pos)          # the env's own hypot
    env = PairReinsertionEnv()
    a = env.reset(plain, "random", torch.Generator().manual_seed(4))
    b = env.reset(explicit, "random", torch.Generator().manual_seed(4))
    ga, gb = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    for _ in range(15):
        a, ra = env.step(a, env.random_action(a, generator=ga))
        b, rb = env.step(b, env.random_action(b, generator=gb))
        assert torch.equal(a.cost, b.cost) and torch.equal(ra, rb)


def test_augmented_search_on_a_matrix_returns_checked_routes():
    inst = _streets(b=3, seed=2)
    res = improve(inst, None, steps=30, init="random", augment=4, env=PairReinsertionEnv(),
                  generator=torch.Generator().manual_seed(0))
    # augmentation moves the coordinates; the matrix costs do not move with them
    assert torch.allclose(_recost(inst, res.routes), res.cost.double(), atol=1e-5)
    assert (res.cost <= res.initial_cost + 1e-6).all()
