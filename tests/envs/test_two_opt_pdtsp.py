"""PDTSP in the 2-opt environment (DACT on PDTSP): the precedence mask against brute
force, feasible walks, any pickup-delivery labelling, batch == one-by-one."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyg_routing.data import RoutingData, make_generator
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.envs import TwoOptEnv
from pyg_routing.envs.two_opt import action_mask, node_features, random_action, reset, step
from pyg_routing.envs.two_opt.moves import apply_two_opt
from pyg_routing.envs.two_opt.precedence import precedence_mask, request_counts
from pyg_routing.models import DACTPolicy
from pyg_routing.search import improve


def _relabelled(n: int, b: int, seed: int) -> RoutingInstances:
    """PDTSP instances whose pairs are NOT in the standard layout: the customers of a
    generated instance are shuffled and the pairs follow them."""
    inst = make_generator("pdtsp", n, seed=seed).sample(b)
    perm = torch.cat([torch.zeros(1, dtype=torch.long),
                      1 + torch.randperm(n, generator=torch.Generator().manual_seed(seed))])
    new_id = torch.empty_like(perm).scatter_(0, perm, torch.arange(n + 1))
    return RoutingInstances(Problem.PDTSP, inst.pos[:, perm],
                            pickup_delivery_index=new_id[inst.pickup_delivery_index])


def _feasible(order: torch.Tensor, pairs: torch.Tensor) -> bool:
    """Every pickup before its delivery in ``order [M]`` (``pairs [2, P]``)."""
    rank = torch.empty_like(order).scatter_(0, order, torch.arange(order.numel()))
    return bool((rank[pairs[0]] < rank[pairs[1]]).all())


def _brute_force(state, b: int) -> torch.Tensor:
    """``[M, M]``: apply every reversal to instance ``b`` and check the precedences."""
    m = state.num_nodes
    out = torch.zeros(m, m, dtype=torch.bool)
    for i in range(m):
        for j in range(m):
            ri, rj = int(state.rank[b, i]), int(state.rank[b, j])
            if ri == rj:
                continue
            lo, hi = torch.tensor([min(ri, rj)]), torch.tensor([max(ri, rj)])
            out[i, j] = _feasible(apply_two_opt(state.order[b:b + 1], lo, hi)[0],
                                  state.pairs[b])
    return out


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), pairs=st.integers(1, 5), steps=st.integers(0, 8))
def test_precedence_mask_equals_brute_force(seed, pairs, steps):
    inst = _relabelled(2 * pairs, 2, seed)
    gen = torch.Generator().manual_seed(seed)
    state = reset(inst, "random", generator=gen)
    for _ in range(steps):
        state, _ = step(state, random_action(state, generator=gen))
    prec = precedence_mask(state)
    full = action_mask(state)
    for b in range(len(state)):
        assert torch.equal(prec[b] | torch.eye(state.num_nodes, dtype=torch.bool),
                           _brute_force(state, b) | torch.eye(state.num_nodes, dtype=torch.bool))
        assert not bool((full[b] & ~prec[b]).any())        # the env's mask only narrows it


def test_request_counts_exact_values():
    # Tour 0 1 3 2 4 with pairs (1, 3), (2, 4): ranks (1, 2) and (3, 4).
    order = torch.tensor([[0, 1, 3, 2, 4]])
    rank = torch.empty_like(order).scatter_(1, order, torch.arange(5).expand_as(order))
    pairs = torch.tensor([[[1, 2], [3, 4]]])
    c = request_counts(rank, pairs)[0]
    assert int(c[0, 4]) == 2 and int(c[1, 2]) == 1 and int(c[2, 4]) == 1
    assert int(c[2, 3]) == 0 and int(c[1, 1]) == 0 and int(c[3, 4]) == 1


@pytest.mark.parametrize("init", ["random", "nearest_neighbor", "sweep"])
def test_walk_stays_feasible_and_costs_match_routing_data(init):
    inst = _relabelled(12, 6, seed=3)
    gen = torch.Generator().manual_seed(0)
    state = reset(inst, init, generator=gen)
    assert state.num_depots == 1
    for _ in range(60):
        mask = action_mask(state)
        action = random_action(state, mask, gen)
        assert bool(mask[torch.arange(len(state)), action[:, 0], action[:, 1]].all())
        state, reward = step(state, action)
        assert bool((reward >= 0).all())
    env = TwoOptEnv()
    for best in (False, True):
        routes = env.to_routes(state, best=best)
        cost = state.best_cost if best else state.cost
        for b in range(len(state)):
            data = RoutingData.from_routes(inst[b], routes[b])
            data.check()
            assert float(data.cost()) == pytest.approx(float(cost[b]), rel=1e-5)


def test_random_tours_are_feasible_and_differ():
    inst = _relabelled(20, 64, seed=1)
    state = reset(inst, "random", generator=torch.Generator().manual_seed(0))
    assert all(_feasible(state.order[b], state.pairs[b]) for b in range(64))
    assert len({tuple(o) for o in state.order.tolist()}) == 64


def test_batched_equals_one_by_one():
    inst = _relabelled(10, 4, seed=5)
    state = reset(inst, "random", generator=torch.Generator().manual_seed(1))
    singles = [state[b] for b in range(len(state))]
    gen = torch.Generator().manual_seed(2)
    for _ in range(8):
        mask = action_mask(state)
        action = random_action(state, mask, gen)
        state, reward = step(state, action)
        for b in range(len(state)):
            assert torch.equal(action_mask(singles[b])[0], mask[b])
            singles[b], r = step(singles[b], action[b:b + 1])
            assert torch.equal(singles[b].order[0], state.order[b])
            torch.testing.assert_close(r[0], reward[b])
            torch.testing.assert_close(node_features(singles[b])[0], node_features(state)[b])


def test_pdtsp_node_features():
    pos = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [3.0, 0.0], [4.0, 0.0]]])
    inst = RoutingInstances(Problem.PDTSP, pos,
                            pickup_delivery_index=torch.tensor([[1, 2], [3, 4]]))
    tours = reset(inst, "nearest_neighbor")              # 0 1 2 3 4
    x = node_features(tours)[0]
    assert x.shape == (5, TwoOptEnv.feature_width("pdtsp"))
    torch.testing.assert_close(x[:, 2], torch.tensor([0.0, 1, 1, -1, -1]))     # role
    torch.testing.assert_close(x[:, 3], torch.tensor([0.0, 0.5, 1.0, 0.5, 0]))  # open / P
    torch.testing.assert_close(x[:, 4], torch.tensor([0.0, 3, 4, 1, 2]))       # partner x
    torch.testing.assert_close(x[:, 6], torch.tensor([1.0, 0, 0, 0, 0]))       # depot


def test_dact_policy_searches_pdtsp_with_augmentation():
    inst = _relabelled(10, 3, seed=2)
    policy = DACTPolicy.build("pdtsp", pe="ipexpe", dim=16, heads=2, num_layers=1)
    res = improve(inst, policy, steps=5, init="random", augment=4,
                  generator=torch.Generator().manual_seed(0))
    for b in range(3):
        data = RoutingData.from_routes(inst[b], res.routes[b])
        data.check()
        assert float(data.cost()) == pytest.approx(float(res.cost[b]), rel=1e-5)
