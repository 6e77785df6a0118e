"""N2S's pair removal-reinsertion environment: reset rules and errors, moves against
routes, batch equals one-by-one, the removal history, search with augmentation."""

import pytest
import torch

from pyg_routing.data import PDTSPGenerator, RoutingData
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.envs import PairReinsertionEnv
from pyg_routing.envs.base import UnsupportedProblemError
from pyg_routing.errors import InfeasibleSolutionError, InvalidInstanceError, InvalidSolutionError
from pyg_routing.functional.pickup_delivery import reinsertion_mask
from pyg_routing.search import improve


def _instances(n=10, b=6, seed=0):
    return PDTSPGenerator(n, seed=seed).sample(b)


def _cost_of_routes(inst, routes):
    out = []
    for i, r in enumerate(routes):
        data = RoutingData.from_routes(inst[i], r)
        data.check()
        out.append(float(data.cost()))
    return torch.tensor(out, dtype=torch.float64)


def _walk(env, state, steps, gen):
    rewards = []
    for _ in range(steps):
        action = env.random_action(state, generator=gen)
        mask = env.action_mask(state)
        assert mask.gather(1, action[:, :1]).all() or state.num_pairs == 1
        place = env.reinsertion_mask(state, action[:, 0])
        m = state.num_nodes
        flat = (action[:, 1] * m + action[:, 2])[:, None]
        assert place.view(len(state), -1).gather(1, flat).all()
        state, r = env.step(state, action)
        rewards.append(r)
    return state, rewards


def test_random_moves_keep_tours_feasible_and_costs_exact():
    inst = _instances()
    env = PairReinsertionEnv()
    gen = torch.Generator().manual_seed(0)
    state = env.reset(inst, "random", gen)
    best = state.best_cost.clone()
    for _ in range(40):
        state, (r,) = _walk(env, state, 1, gen)
        assert torch.allclose(r, (best - state.cost).clamp(min=0))
        best = torch.minimum(best, state.cost)
        assert torch.allclose(state.best_cost, best)
        assert torch.allclose(_cost_of_routes(inst, env.to_routes(state, best=False)),
                              state.cost.double(), atol=1e-5)
    assert torch.allclose(_cost_of_routes(inst, env.to_routes(state)), state.best_cost.double(),
                          atol=1e-5)


def test_batch_equals_one_by_one():
    inst = _instances(b=5)
    env = PairReinsertionEnv()
    state = env.reset(inst, "random", torch.Generator().manual_seed(1))
    gen = torch.Generator().manual_seed(2)
    for _ in range(10):
        action = env.random_action(state, generator=gen)
        new, reward = env.step(state, action)
        for i in range(len(inst)):
            one, r = env.step(state[i], action[i:i + 1])
            assert torch.equal(one.order, new.order[i:i + 1])
            assert torch.equal(one.counts, new.counts[i:i + 1])
            assert torch.allclose(r, reward[i:i + 1])
        state = new


def test_removal_history_is_the_window_of_last_removals():
    inst = _instances(n=8, b=3)
    env = PairReinsertionEnv(window=5)
    gen = torch.Generator().manual_seed(5)
    state = env.reset(inst, "random", gen)
    removed = []
    for _ in range(12):
        action = env.random_action(state, generator=gen)
        removed.append(action[:, 0])
        state, _ = env.step(state, action)
        seq = torch.stack(removed, 1)                                   # [B, t]
        window = seq[:, -5:]
        counts = torch.zeros(3, 4).scatter_add_(1, window, torch.ones(window.shape))
        assert torch.equal(state.counts, counts)
        recent = seq.flip(1)[:, :3]
        hist = state.history()
        assert hist.shape == (3, 4, 4)
        for k in range(recent.size(1)):
            assert torch.equal(hist[:, :, k].argmax(1), recent[:, k])
            assert torch.equal(hist[:, :, k].sum(1), torch.ones(3))
        assert torch.allclose(hist[:, :, 3], counts / 5)
        # tabu: the last pair may not be removed again at once
        mask = env.action_mask(state)
        assert not mask.gather(1, removed[-1][:, None]).any()
        assert int(mask.sum()) == 3 * 3


def test_default_window_is_the_customer_count():
    state = PairReinsertionEnv().reset(_instances(n=10, b=2), "random")
    assert state.window == 10 and state.history().shape == (2, 5, 4)


def test_given_tours_initial_solutions_and_their_errors():
    inst = _instances(n=4, b=2)
    env = PairReinsertionEnv()
    tours = torch.tensor([[0, 1, 2, 3, 4], [0, 2, 4, 1, 3, 0]][0:1] * 2)
    state = env.reset(inst, tours)
    assert torch.equal(state.order, tours)
    closed = torch.tensor([[0, 1, 2, 3, 4, 0], [0, 2, 1, 4, 3, 0]])
    assert torch.equal(env.reset(inst, closed).order, closed[:, :-1])
    with pytest.raises(InfeasibleSolutionError,
                       match="instance 1: delivery 3 comes before its pickup 1"):
        env.reset(inst, torch.tensor([[0, 1, 2, 3, 4], [0, 3, 2, 1, 4]]))
    with pytest.raises(InvalidSolutionError, match="node 2 visited more than once"):
        env.reset(inst, torch.tensor([[0, 1, 2, 3, 2], [0, 1, 2, 3, 4]]))
    with pytest.raises(InvalidSolutionError, match="expected integer tours"):
        env.reset(inst, torch.zeros(2, 5))
    with pytest.raises(InvalidSolutionError, match="out of range"):
        env.reset(inst, torch.tensor([[0, 1, 2, 3, 7], [0, 1, 2, 3, 4]]))
    with pytest.raises(ValueError, match="unknown init 'sweep'"):
        env.reset(inst, "sweep")
    tours_before = closed.clone()
    env.reset(inst, closed)
    assert torch.equal(closed, tours_before)


def test_odd_customer_count_and_other_problems_are_refused():
    with pytest.raises(InvalidInstanceError, match="even number of customers"):
        PDTSPGenerator(7)
    inst = _instances(n=6, b=2)
    odd = RoutingInstances(Problem.PDTSP, torch.rand(2, 8, 2),
                           pickup_delivery_index=inst.pickup_delivery_index)
    with pytest.raises(InvalidInstanceError, match="7 customers but 3 pairs"):
        PairReinsertionEnv().reset(odd, "random")
    from pyg_routing.data import CVRPGenerator

    with pytest.raises(UnsupportedProblemError, match="supports pdtsp, not 'cvrp'"):
        improve(CVRPGenerator(6, seed=0).sample(2), None, steps=1, env=PairReinsertionEnv())


def test_other_pair_layouts_are_relabelled_and_mapped_back():
    inst = _instances(n=6, b=3, seed=4)
    perm = torch.tensor([0, 4, 1, 6, 2, 5, 3])          # new id -> old id
    inverse = torch.empty_like(perm).scatter_(0, perm, torch.arange(7))
    other = RoutingInstances(Problem.PDTSP, inst.pos[:, perm],
                             pickup_delivery_index=inverse[inst.pickup_delivery_index])
    other.check()
    res = improve(other, None, steps=30, init="random", env=PairReinsertionEnv(),
                  generator=torch.Generator().manual_seed(0))
    assert torch.allclose(_cost_of_routes(other, res.routes), res.cost.double(), atol=1e-5)
    nn = improve(other, None, steps=0, init="nearest_neighbor", env=PairReinsertionEnv())
    assert torch.allclose(_cost_of_routes(other, nn.routes), nn.cost.double(), atol=1e-5)


@pytest.mark.parametrize("independent", [False, True])
def test_search_with_augmentation_returns_checked_routes(independent):
    inst = _instances(n=10, b=4)
    res = improve(inst, None, steps=40, init="random", augment=8, env=PairReinsertionEnv(),
                  generator=torch.Generator().manual_seed(0), independent_starts=independent)
    assert torch.allclose(_cost_of_routes(inst, res.routes), res.cost.double(), atol=1e-5)
    assert (res.cost <= res.initial_cost + 1e-6).all()


def test_independent_starts_draw_a_start_per_copy():
    inst = _instances(n=10, b=2)
    env = PairReinsertionEnv()
    gen = torch.Generator().manual_seed(0)
    starts = env.reset(inst[torch.arange(2).repeat(8)], "random", gen)
    copies = env.augment(starts, 8, copies=True)
    assert not torch.equal(copies.order[:2], copies.order[2:4])
    # the costs follow the transformed coordinates (lengths are invariant)
    assert torch.allclose(copies.cost, starts.cost, atol=1e-5)


def test_batch_of_one_and_a_single_pair():
    inst = _instances(n=2, b=1)
    env = PairReinsertionEnv()
    res = improve(inst, None, steps=5, init="random", env=env)
    assert res.routes[0][0] == [1, 2]
    state = env.reset(inst, "random")
    mask = reinsertion_mask(state.rank, torch.tensor([1]), torch.tensor([2]))
    assert int(mask.sum()) == 1
