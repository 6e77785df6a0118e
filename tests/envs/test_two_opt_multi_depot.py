"""DACT's 2-opt on several depots: start solutions, the move mask against a brute force
over every move, exact move costs, random walks that stay valid, and the search's
routes with their depots (checked by ``RoutingData``)."""

from __future__ import annotations

import pytest
import torch

from pyg_routing.data import RoutingData, load_search_instance, make_generator
from pyg_routing.envs.two_opt import TwoOptEnv
from pyg_routing.envs.two_opt.depots import MULTI_DEPOT_INITS
from pyg_routing.envs.two_opt.moves import apply_two_opt, move_deltas
from pyg_routing.search import MaxIterations, StepSearch


def _instances(d: int = 3, n: int = 7, b: int = 3, seed: int = 0):
    return make_generator("cvrp", n, seed=seed, depots=d, capacity=12).sample(b)


def _solutions(env: TwoOptEnv, state, inst, best: bool = False) -> list[RoutingData]:
    routes, depots = env.to_routes(state, best), env.route_depots(state, best)
    return [RoutingData.from_routes(inst[i], r, dep) for i, (r, dep) in
            enumerate(zip(routes, depots))]


def _valid(order: list[int], copy_depot: list[int], k: int) -> bool:
    """Every run of customers between two copies is bounded by copies of one depot."""
    copies = [t for t, v in enumerate(order) if v < k]
    m = len(order)
    for a, b in zip(copies, copies[1:] + [copies[0] + m]):
        inside = [order[t % m] for t in range(a + 1, b)]
        if inside and copy_depot[order[a]] != copy_depot[order[b % m]]:
            return False
    return True


@pytest.mark.parametrize("init", MULTI_DEPOT_INITS)
def test_start_solutions_are_feasible_and_costed_as_routing_data(init):
    inst = _instances()
    env = TwoOptEnv()
    state = env.reset(inst, init=init, generator=torch.Generator().manual_seed(0))
    assert state.copy_depot is not None and state.instance_depots == 3
    for b, sol in enumerate(_solutions(env, state, inst)):
        sol.check()
        assert float(sol.cost()) == pytest.approx(float(state.cost[b]), rel=1e-5)
        assert _valid(state.order[b].tolist(), state.copy_depot[b].tolist(), state.num_depots)
    if init == "sweep":                     # every customer at its cheapest depot
        sol = _solutions(env, state, inst)[0]
        home = sol.route_depot[sol.route_id[3:]]
        trip = inst.costs()[0, :3, 3:] + inst.costs()[0, 3:, :3].T
        assert torch.equal(home, trip.argmin(0))


def test_the_mask_allows_exactly_the_moves_that_keep_routes_home_and_within_capacity():
    inst = _instances(d=2, n=6, b=2, seed=1)
    env = TwoOptEnv()
    gen = torch.Generator().manual_seed(3)
    state = env.reset(inst, init="random", generator=gen)
    checked = away = 0
    for _ in range(6):
        mask = env.action_mask(state)
        b, m = state.order.shape
        for row in range(b):
            order, rank = state.order[row], state.rank[row]
            depots = state.copy_depot[row].tolist()
            succ = state.succ[row]
            for i in range(m):
                for j in range(m):
                    if i == j or succ[i] == j or succ[j] == i:
                        continue
                    if {i, j} == set(state.last_action[row].tolist()):
                        continue
                    lo, hi = sorted((int(rank[i]), int(rank[j])))
                    moved = apply_two_opt(order[None], torch.tensor([lo]),
                                          torch.tensor([hi]))[0].tolist()
                    home = _valid(moved, depots, state.num_depots)
                    loads, load = [], 0.0
                    for v in moved + [moved[0]]:
                        if v < state.num_depots:
                            loads.append(load)
                            load = 0.0
                        else:
                            load += float(state.demand[row, v])
                    fits = max(loads) <= float(state.capacity[row]) + 1e-6
                    assert bool(mask[row, i, j]) == (home and fits), (row, i, j, moved)
                    checked += 1
                    away += fits and not home
        state, _ = env.step(state, env.random_action(state, mask, gen))
    assert checked > 1000 and away > 100      # the depot rule itself refuses moves


def test_move_costs_are_exact_and_walks_stay_feasible():
    inst = _instances(d=3, n=8, b=2, seed=2)
    env = TwoOptEnv()
    gen = torch.Generator().manual_seed(5)
    state = env.reset(inst, init="sweep")
    for _ in range(25):
        mask = env.action_mask(state)
        delta = move_deltas(state)
        action = env.random_action(state, mask, gen)
        new, _ = env.step(state, action)
        for b in range(2):
            i, j = action[b].tolist()
            if bool(mask[b, i, j]):
                assert float(new.cost[b] - state.cost[b]) == pytest.approx(
                    float(delta[b, i, j]), abs=1e-4)
        state = new
        for b, sol in enumerate(_solutions(env, state, inst)):
            sol.check()
            assert float(sol.cost()) == pytest.approx(float(state.cost[b]), rel=1e-5)


def test_a_batch_starts_as_its_instances_one_by_one():
    inst = _instances(d=2, n=9, b=3, seed=4)
    env = TwoOptEnv()
    batch = env.reset(inst)
    alone = [env.reset(inst[i:i + 1]) for i in range(3)]
    assert env.to_routes(batch) == [r for s in alone for r in env.to_routes(s)]
    assert env.route_depots(batch) == [r for s in alone for r in env.route_depots(s)]
    assert torch.allclose(batch.cost, torch.cat([s.cost for s in alone]))


def test_the_step_search_returns_each_routes_depot():
    inst = _instances(d=2, n=10, b=2, seed=6)
    result = StepSearch(augment=2).run(inst, None, MaxIterations(30), seed=0)
    assert result.depots is not None
    for b in range(2):
        sol = RoutingData.from_routes(inst[b], result.routes[b], result.depots[b])
        sol.check()
        assert float(sol.cost()) == pytest.approx(float(result.cost[b]), rel=1e-5)
    assert float(result.cost.mean()) <= float(result.initial_cost.mean()) + 1e-6


def test_an_unknown_init_and_too_few_copies_are_refused():
    inst = _instances()
    with pytest.raises(ValueError, match="unknown init 'insertion'"):
        TwoOptEnv().reset(inst, init="insertion")
    with pytest.raises(ValueError, match="num_depots=2 is below the"):
        TwoOptEnv(num_depots=2).reset(inst)
    assert TwoOptEnv(num_depots=30).reset(inst).num_depots == 30


@pytest.mark.parametrize("reference", ["first", "route", "route_code"])
def test_the_states_xpe_equals_the_solutions_xpe_under_every_reference(reference):
    from pyg_routing.envs.observation import tour_encoding_inputs
    from pyg_routing.transforms import XPE
    from pyg_routing.transforms._base import EncodingInputs

    inst = _instances(d=3, n=9, b=2, seed=7)
    env = TwoOptEnv()
    state = env.reset(inst, init="random", generator=torch.Generator().manual_seed(1))
    for _ in range(10):
        state, _ = env.step(state, env.random_action(state))
    t = XPE(num_bands=3, reference=reference)
    code = t.code(tour_encoding_inputs(state)).view(2, state.num_nodes, -1)
    k, d = state.num_depots, state.instance_depots
    for b, sol in enumerate(_solutions(env, state, inst)):
        want = t.code(EncodingInputs.from_data(sol))
        assert torch.allclose(code[b, k:], want[d:], atol=1e-5), reference


def test_graph_encodings_refuse_the_states_of_several_depots():
    from pyg_routing.envs.observation import tour_encoding_inputs
    from pyg_routing.errors import UnsupportedProblemError

    state = TwoOptEnv().reset(_instances())
    with pytest.raises(UnsupportedProblemError, match="several depots"):
        tour_encoding_inputs(state).route_graph()


def test_a_depot_never_has_more_copies_than_vehicles_so_walks_respect_the_fleet():
    from pyg_routing.data import RoutingInstances

    base = _instances(d=2, n=8, b=2, seed=8)
    env = TwoOptEnv()
    used = torch.tensor([[r.count(0), r.count(1)] for r in env.route_depots(env.reset(base))])
    limit = used + 1                           # one spare each, not extra_depots = 2
    limited = RoutingInstances(base.problem, base.pos, demand=base.demand,
                               capacity=base.capacity, num_depots=2, depot_vehicles=limit)
    state = env.reset(limited)
    for b in range(2):
        copies = torch.bincount(state.copy_depot[b], minlength=2)
        assert bool((copies <= limit[b]).all())
    gen = torch.Generator().manual_seed(2)
    for _ in range(30):
        state, _ = env.step(state, env.random_action(state, generator=gen))
        for sol in _solutions(env, state, limited):
            sol.check()                          # includes the vehicles of each depot
    tight = RoutingInstances(base.problem, base.pos, demand=base.demand,
                             capacity=base.capacity, num_depots=2,
                             depot_vehicles=torch.ones(2, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="routes at depot .*, which has 1 vehicles"):
        env.reset(tight)
    with pytest.raises(ValueError, match="exceed the vehicles"):
        TwoOptEnv(num_depots=40).reset(limited)


def test_a_rate_of_copies_stops_at_the_fleet():
    p01 = load_search_instance("p01").instances
    state = TwoOptEnv(depot_rate=0.5).reset(p01)           # 25 copies by DACT's formula
    assert state.num_depots == 16                          # 4 depots x 4 vehicles
    with pytest.raises(ValueError, match="exceed the vehicles"):
        TwoOptEnv(num_depots=25).reset(p01)                # asked for exactly: refused
