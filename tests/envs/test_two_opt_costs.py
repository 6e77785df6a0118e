"""The 2-opt environment (DACT) on explicit asymmetric matrices and open routes:
costs against full recosting, masks against brute force, the coordinate path
reproduced by a symmetric matrix, batch against one by one."""

from __future__ import annotations

import pytest
import torch

from pyg_routing.data import RoutingData, make_generator
from pyg_routing.data.costs import euclidean_matrix
from pyg_routing.envs.two_opt import moves
from pyg_routing.envs.two_opt.env import TwoOptEnv
from pyg_routing.envs.two_opt.time_windows import two_opt_time_window_mask

CASES = [("tsp", dict(costs="streets", grid=5)), ("cvrp", dict(costs="streets", grid=5)),
         ("cvrp", dict(open_routes=True)), ("vrptw", dict(costs="streets", grid=5)),
         ("vrptw", dict(costs="streets", grid=5, open_routes=True)),
         ("pdtsp", dict(costs="streets", grid=5))]


def _walk(env, state, steps, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        state, _ = env.step(state, env.random_action(state, env.action_mask(state), g))
        yield state


@pytest.mark.parametrize("problem, kw", CASES)
def test_search_costs_equal_recosting_and_solutions_stay_feasible(problem, kw):
    env = TwoOptEnv()
    inst = make_generator(problem, 10, seed=1, **kw).sample(4)
    for state in _walk(env, env.reset(inst, init="nearest_neighbor"), 25):
        routes = env.to_routes(state, best=False)
        for b in range(4):
            data = RoutingData.from_routes(inst[b], routes[b])
            data.check()
            assert float(state.cost[b]) == pytest.approx(float(data.cost()), rel=1e-5)


@pytest.mark.parametrize("kw", [dict(costs="streets", grid=5),
                                dict(costs="streets", grid=5, open_routes=True),
                                dict(open_routes=True)])
def test_time_window_mask_equals_brute_force_and_the_checker(kw):
    env = TwoOptEnv()
    inst = make_generator("vrptw", 7, seed=2, **kw).sample(3)
    start = env.reset(inst, init="nearest_neighbor")
    for state in _walk(env, start, 12, seed=3):
        fast = two_opt_time_window_mask(state)
        assert torch.equal(fast, moves._time_window_mask_brute_force(state))
    # the brute force against RoutingData.check on every move of the last state
    b, m = state.order.shape
    for i in range(m):
        for j in range(m):
            moved, _ = env.step(state, torch.tensor([[i, j]] * b))
            routes = env.to_routes(moved, best=False)
            for k in range(b):
                sol = RoutingData.from_routes(inst[k], routes[k])
                assert bool(fast[k, i, j]) == _window_ok(sol), (k, i, j)


def _window_ok(sol: RoutingData) -> bool:
    """Time windows alone (the mask does not judge capacity)."""
    from pyg_routing.data.feasibility import find_violations

    return not [e for e in find_violations(sol) if "time window" in str(e)
                or "returns to the depot" in str(e)]


def test_move_deltas_equal_full_recosting():
    env = TwoOptEnv()
    for kw in (dict(costs="streets", grid=5), {}, dict(open_routes=True)):
        inst = make_generator("cvrp", 8, seed=0, **kw).sample(3)
        state = env.reset(inst, init="nearest_neighbor")
        delta = moves.move_deltas(state)
        m = state.num_nodes
        for i in range(m):
            for j in range(m):
                moved, _ = env.step(state, torch.tensor([[i, j]] * 3))
                change = moved.cost.double() - state.cost.double()
                assert torch.allclose(change, delta[:, i, j], atol=2e-6), (kw, i, j)


def test_asymmetric_reversal_changes_the_cost():
    """On the streets family some move reverses a path whose cost changes beyond the
    two swapped arcs: the symmetric formula would be wrong there."""
    inst = make_generator("tsp", 12, seed=0, costs="streets", grid=5).sample(2)
    state = TwoOptEnv().reset(inst, init="nearest_neighbor")
    sym = moves.move_deltas(TwoOptEnv().reset(
        make_generator("tsp", 12, seed=0).sample(2), init="nearest_neighbor"))
    delta = moves.move_deltas(state)
    order, m = state.order, state.num_nodes
    costs = state.costs.double()
    # the part of the delta from the swapped arcs only (what a symmetric 2-opt uses)
    rank = state.rank
    nxt = order.gather(1, (rank + 1) % m)                           # successor of each node
    b = torch.arange(2).view(2, 1, 1)
    i, j = torch.arange(m).view(1, m, 1), torch.arange(m).view(1, 1, m)
    swap = (costs[b, i, j] + costs[b, nxt[:, :, None], nxt[:, None, :]]
            - costs[b, i, nxt[:, :, None]] - costs[b, j, nxt[:, None, :]])
    assert (delta - swap).abs().max() > 0.05
    assert sym.abs().max() > 0


def test_symmetric_matrix_reproduces_the_coordinate_search():
    """A matrix with the environment's own Euclidean arithmetic (``hypot``): the same
    costs, rewards and masks bit for bit; route quantities agree to float rounding
    (the coordinate path measures them with ``norm``)."""
    env = TwoOptEnv()
    plain = make_generator("vrptw", 10, seed=4).sample(3)
    explicit = make_generator("vrptw", 10, seed=4).sample(3)
    explicit.cost_matrix = euclidean_matrix(explicit.pos)
    a, b = env.reset(plain, init="nearest_neighbor"), env.reset(explicit, init="nearest_neighbor")
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    for _ in range(20):
        ma, mb = env.action_mask(a), env.action_mask(b)
        assert torch.equal(ma, mb)
        a, ra = env.step(a, env.random_action(a, ma, g1))
        b, rb = env.step(b, env.random_action(b, mb, g2))
        assert torch.equal(a.cost, b.cost) and torch.equal(ra, rb)
    qa, qb = moves.route_quantities(a), moves.route_quantities(b)
    assert torch.equal(qa.route_pos, qb.route_pos)
    assert torch.allclose(qa.cum_dist, qb.cum_dist, rtol=1e-6, atol=1e-6)


def test_batch_equals_one_by_one():
    env = TwoOptEnv(num_depots=6)
    inst = make_generator("cvrp", 10, seed=6, costs="streets", grid=5).sample(4)
    batch = env.reset(inst, init="nearest_neighbor")
    action = env.random_action(batch, generator=torch.Generator().manual_seed(1))
    stepped, reward = env.step(batch, action)
    for k in range(4):
        one = env.reset(inst[k:k + 1], init="nearest_neighbor")
        one, r = env.step(one, action[k:k + 1])
        assert torch.equal(one.cost, stepped.cost[k:k + 1]) and torch.equal(r, reward[k:k + 1])
        assert torch.equal(moves.move_deltas(one), moves.move_deltas(stepped)[k:k + 1])


@pytest.mark.parametrize("problem, kw", [("cvrp", dict(costs="streets", grid=5)),
                                         ("vrptw", dict(open_routes=True))])
def test_augmented_search_on_a_matrix_returns_checked_routes(problem, kw):
    from pyg_routing.search import improve

    inst = make_generator(problem, 10, seed=2, **kw).sample(3)
    res = improve(inst, None, steps=30, init="nearest_neighbor", augment=4, env=TwoOptEnv(),
                  generator=torch.Generator().manual_seed(0))
    for b in range(3):
        data = RoutingData.from_routes(inst[b], res.routes[b])
        data.check()
        assert float(res.cost[b]) == pytest.approx(float(data.cost()), rel=1e-5)
