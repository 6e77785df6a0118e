"""DACT-style 2-opt environment: solutions stay valid, masks are exact, batched == looped."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyg_routing.data import RoutingData, make_generator
from pyg_routing.data.generators import CVRPGenerator, TSPGenerator, VRPTWGenerator
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.data.route_quantities import edge_index_from_successors
from pyg_routing.data.route_quantities import route_quantities as flat_route_quantities
from pyg_routing.envs.two_opt import (
    TwoOptState,
    action_mask,
    node_features,
    positional_encoding,
    random_action,
    reset,
    route_loads,
    route_quantities,
    step,
    to_routes,
)
from pyg_routing.envs.two_opt.moves import _time_window_mask_brute_force

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _instances(problem: str, n: int, b: int, seed: int, capacity: float | None = None):
    if problem == "tsp":
        return TSPGenerator(n, seed=seed).sample(b)
    return CVRPGenerator(n, seed=seed, capacity=capacity).sample(b)


def _check_state(state: TwoOptState, inst: RoutingInstances, best: bool = False) -> None:
    """Single giant cycle from depot copy 0, consistent succ/rank, cost == RoutingData."""
    order = state.best_order if best else state.order
    m = state.num_nodes
    assert torch.equal(order.sort(1).values, torch.arange(m).expand_as(order))
    assert bool((order[:, 0] == 0).all())
    if not best:
        assert torch.equal(state.succ.gather(1, order), order.roll(-1, 1))
        assert torch.equal(state.rank.gather(1, order), torch.arange(m).expand_as(order))
    routes = to_routes(state, best=best)
    cost = state.best_cost if best else state.cost
    for b in range(len(state)):
        data = RoutingData.from_routes(inst[b], routes[b])
        data.check()                       # capacity never exceeded
        assert float(data.cost()) == pytest.approx(float(cost[b]), rel=1e-5, abs=1e-5)


@pytest.mark.parametrize("problem", ["tsp", "cvrp"])
@pytest.mark.parametrize("init", ["sweep", "nearest_neighbor", "random"])
def test_reset_matches_routing_data(problem, init):
    inst = _instances(problem, 20, 6, seed=1)
    state = reset(inst, init, generator=torch.Generator().manual_seed(0))
    assert state.num_nodes == state.num_depots + inst.num_nodes - 1
    assert state.num_depots == 1 if problem == "tsp" else state.num_depots >= 2
    _check_state(state, inst)
    torch.testing.assert_close(state.best_cost, state.cost)


@pytest.mark.parametrize("problem", ["tsp", "cvrp"])
@pytest.mark.parametrize("seed", range(4))
def test_random_walk_keeps_valid_solutions(problem, seed):
    # Tight capacity (CVRP) so that many inter-route moves are masked.
    inst = _instances(problem, 20, 8, seed=seed, capacity=30.0 if problem == "cvrp" else None)
    init = "random" if seed % 2 else "sweep"
    state = reset(inst, init, generator=torch.Generator().manual_seed(seed))
    gen = torch.Generator().manual_seed(100 + seed)
    for t in range(50):
        mask = action_mask(state)
        action = random_action(state, mask, gen)
        assert bool(mask[torch.arange(len(state)), action[:, 0], action[:, 1]].all())
        old_best = state.best_cost
        state, reward = step(state, action)
        assert bool((reward >= 0).all())
        assert bool((state.best_cost <= old_best).all())
        torch.testing.assert_close(reward, old_best - state.best_cost)
        # The immediate undo is masked, in both orders.
        a, s = state.last_action.unbind(1)
        rows = torch.arange(len(state))
        nxt = action_mask(state)
        assert not bool(nxt[rows, a, s].any() | nxt[rows, s, a].any())
        if t % 10 == 9:
            _check_state(state, inst)
    _check_state(state, inst)
    _check_state(state, inst, best=True)
    assert state.steps == 50


def _brute_force_mask(state: TwoOptState, inst: RoutingInstances, b: int) -> torch.Tensor:
    """Apply every move to instance ``b`` and ask RoutingData whether it is feasible."""
    m = state.num_nodes
    ii, jj = torch.meshgrid(torch.arange(m), torch.arange(m), indexing="ij")
    actions = torch.stack([ii.reshape(-1), jj.reshape(-1)], 1)
    many = state[torch.full((m * m,), b)]
    moved, _ = step(many, actions)
    feasible = torch.tensor([bool(RoutingData.from_routes(inst[b], r).is_feasible())
                             for r in to_routes(moved, best=False)]).view(m, m)
    succ = state.succ[b]
    ar = torch.arange(m)
    degenerate = (ii == jj) | (succ[ii] == jj) | (succ[jj] == ii)
    a, s = state.last_action[b].tolist()
    undo = torch.zeros(m, m, dtype=torch.bool)
    if a >= 0:
        undo[a, s] = undo[s, a] = True
    # Degenerate moves really are no-ops (as undirected solutions).
    same = [sorted(map(sorted, x)) for x in to_routes(moved, best=False)]
    here = sorted(map(sorted, to_routes(state[b], best=False)[0]))
    for i, j in zip(*torch.nonzero(degenerate & (ii != jj), as_tuple=True)):
        assert same[int(i) * m + int(j)] == here
    del ar
    return feasible & ~degenerate & ~undo


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), capacity=st.sampled_from([12.0, 15.0, 20.0, 40.0]),
       steps=st.integers(0, 6))
def test_mask_equals_brute_force_feasibility(seed, capacity, steps):
    inst = CVRPGenerator(7, seed=seed, capacity=capacity).sample(2)
    state = reset(inst, "random", generator=torch.Generator().manual_seed(seed))
    gen = torch.Generator().manual_seed(seed + 1)
    for _ in range(steps):
        state, _ = step(state, random_action(state, generator=gen))
    mask = action_mask(state)
    for b in range(len(state)):
        assert torch.equal(mask[b], _brute_force_mask(state, inst, b))


def test_tsp_mask_allows_every_non_degenerate_move():
    inst = TSPGenerator(9, seed=0).sample(2)
    state = reset(inst, "random", generator=torch.Generator().manual_seed(0))
    mask = action_mask(state)
    m = state.num_nodes
    assert int(mask[0].sum()) == m * m - 3 * m     # i == j, j == succ[i], i == succ[j]
    assert torch.equal(mask[1], _brute_force_mask(state, inst, 1))


def test_undo_restores_the_solution():
    inst = CVRPGenerator(15, seed=3).sample(4)
    state = reset(inst, "sweep")
    moved, _ = step(state, random_action(state, generator=torch.Generator().manual_seed(0)))
    back, _ = step(moved, moved.last_action)
    torch.testing.assert_close(back.cost, state.cost)
    for r0, r1 in zip(to_routes(state, best=False), to_routes(back, best=False)):
        assert sorted(map(sorted, r0)) == sorted(map(sorted, r1))


@pytest.mark.parametrize("problem", ["tsp", "cvrp"])
def test_batched_equals_one_by_one(problem):
    inst = _instances(problem, 20, 5, seed=7)
    state = reset(inst, "nearest_neighbor")
    singles = [state[b] for b in range(len(state))]
    gen = torch.Generator().manual_seed(0)
    for _ in range(10):
        mask = action_mask(state)
        for b in range(len(state)):
            assert torch.equal(action_mask(singles[b])[0], mask[b])
        action = random_action(state, mask, gen)
        state, reward = step(state, action)
        for b in range(len(state)):
            singles[b], r = step(singles[b], action[b:b + 1])
            assert torch.equal(singles[b].order[0], state.order[b])
            torch.testing.assert_close(r[0], reward[b])
            torch.testing.assert_close(node_features(singles[b])[0], node_features(state)[b])
            torch.testing.assert_close(positional_encoding(singles[b])[0],
                                       positional_encoding(state)[b])


def test_route_quantities_match_successor_arrays_and_routing_data():
    inst = CVRPGenerator(20, seed=2).sample(3)
    state = reset(inst, "sweep")
    gen = torch.Generator().manual_seed(1)
    for _ in range(20):
        state, _ = step(state, random_action(state, generator=gen))
    b, m = state.order.shape
    rq = route_quantities(state)
    ref = flat_route_quantities(state.pos.reshape(-1, 2), edge_index_from_successors(state.succ),
                                state.depot_mask.reshape(-1),
                                torch.arange(b).repeat_interleave(m), b)
    for name in ("cum_dist", "route_length", "depot_angle"):
        torch.testing.assert_close(getattr(rq, name), getattr(ref, name))
    torch.testing.assert_close(rq.route_pos, ref.route_pos)
    torch.testing.assert_close(rq.num_routes, ref.num_routes)
    k = state.num_depots
    for i, routes in enumerate(to_routes(state, best=False)):
        data = RoutingData.from_routes(inst[i], routes)
        torch.testing.assert_close(rq.cum_dist.view(b, m)[i, k:], data.cum_dist[1:])
        torch.testing.assert_close(rq.route_length.view(b, m)[i, k:], data.route_length[1:])


def test_node_features_and_loads():
    inst = CVRPGenerator(20, seed=4).sample(3)
    state = reset(inst, "random", generator=torch.Generator().manual_seed(0))
    feat = node_features(state)
    k = state.num_depots
    assert feat.shape == (3, state.num_nodes, 7)
    torch.testing.assert_close(feat[..., :2], state.pos)
    ridx, upto, after = route_loads(state)
    for b, routes in enumerate(to_routes(state, best=False)):
        for route in routes:
            nodes = [v + k - 1 for v in route]
            total = float(inst.demand[b, route].sum())
            assert len(set(ridx[b, nodes].tolist())) == 1
            torch.testing.assert_close(upto[b, nodes] + after[b, nodes],
                                       torch.full((len(route),), total, dtype=torch.float64))
            assert float(upto[b, nodes[0]]) == float(inst.demand[b, route[0]])
    assert float(upto[:, :k].abs().sum()) == 0.0
    tsp = reset(TSPGenerator(10, seed=0).sample(2))
    assert node_features(tsp).shape == (2, 10, 2)


@pytest.mark.parametrize("device", DEVICES)
def test_device(device):
    inst = CVRPGenerator(20, seed=5).sample(4)
    cpu = reset(inst, "sweep")
    dev = reset(inst.to(device), "sweep")
    assert dev.order.device.type == device
    action = random_action(cpu, generator=torch.Generator().manual_seed(0))
    cpu, r_cpu = step(cpu, action)
    dev, r_dev = step(dev, action.to(device))
    assert torch.equal(dev.order.cpu(), cpu.order)
    torch.testing.assert_close(r_dev.cpu(), r_cpu)
    assert torch.equal(action_mask(dev).cpu(), action_mask(cpu))
    assert positional_encoding(dev).device.type == device
    assert cpu.to(device).order.device.type == device


def test_unsupported_problem_and_bad_arguments():
    with pytest.raises(NotImplementedError, match="pcvrp"):
        reset(make_generator("pcvrp", 10, seed=0).sample(2))
    with pytest.raises(ValueError, match="random"):
        reset(VRPTWGenerator(10, seed=0).sample(2), "random")
    big = reset(VRPTWGenerator(60, seed=0).sample(1), "nearest_neighbor")
    with pytest.raises(NotImplementedError, match="brute-force"):
        _time_window_mask_brute_force(big)   # the reference only; action_mask has no limit
    inst = CVRPGenerator(10, seed=0).sample(2)
    with pytest.raises(ValueError, match="init"):
        reset(inst, "bogus")
    with pytest.raises(ValueError, match="num_depots"):
        reset(inst, "sweep", num_depots=1)
    assert reset(inst, "sweep", num_depots=12).num_depots == 12
    assert Problem.CVRP is reset(inst).problem


@pytest.mark.parametrize("seed", range(2))
def test_vrptw_mask_is_exact_and_walk_stays_feasible(seed):
    inst = VRPTWGenerator(8, seed=seed).sample(2)
    state = reset(inst, "nearest_neighbor")
    _check_state(state, inst)
    gen = torch.Generator().manual_seed(seed)
    for t in range(12):
        if t % 6 == 0:
            mask = action_mask(state)
            for b in range(len(state)):
                assert torch.equal(mask[b], _brute_force_mask(state, inst, b))
        state, reward = step(state, random_action(state, generator=gen))
        assert bool((reward >= 0).all())
        _check_state(state, inst)
    assert node_features(state).shape == (2, state.num_nodes, 10)


@pytest.mark.parametrize("n,rate,copies", [(20, 0.5, 10), (50, 0.4, 20), (100, 0.2, 20)])
def test_depot_rate_gives_dacts_depot_copies(n, rate, copies):
    """DACT's ``--dummy_rate``: ceil(N (1 + rate)) - N copies; the search is otherwise the
    default one (same routes, the extra copies as empty routes)."""
    from pyg_routing.envs import TwoOptEnv
    from pyg_routing.envs.two_opt import to_routes

    inst = CVRPGenerator(n, seed=1).sample(2)
    dact = TwoOptEnv(depot_rate=rate).reset(inst, init="sweep")
    ours = TwoOptEnv().reset(inst, init="sweep")
    assert dact.num_depots == copies and dact.order.shape[1] == n + copies
    assert ours.num_depots < copies                     # ours allows fewer routes
    assert to_routes(dact, best=False) == to_routes(ours, best=False)
    torch.testing.assert_close(dact.cost, ours.cost)
    tsp = TwoOptEnv(depot_rate=rate).reset(TSPGenerator(8, seed=0).sample(1), init="random")
    assert tsp.num_depots == 1                          # one route: no rate
    assert "depot_rate=0.5" in repr(TwoOptEnv(depot_rate=0.5))


def test_depot_rate_is_checked():
    from pyg_routing.envs import TwoOptEnv

    with pytest.raises(ValueError, match="num_depots or depot_rate, not both"):
        TwoOptEnv(num_depots=5, depot_rate=0.2)
    with pytest.raises(ValueError, match="depot_rate must be > 0, got -0.1"):
        TwoOptEnv(depot_rate=-0.1)
    inst = CVRPGenerator(20, seed=0).sample(1)
    with pytest.raises(ValueError, match=r"num_depots=1 is below the \d+ route slots"):
        TwoOptEnv(depot_rate=0.01).reset(inst, init="sweep")
