"""The segment-based VRPTW 2-opt mask equals the brute force and has no size limit."""

from dataclasses import replace

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyg_routing.data import RoutingData
from pyg_routing.data.generators import VRPTWGenerator
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.envs.tours import cycle_cost
from pyg_routing.envs.two_opt import (
    TW_MAX_NODES,
    TwoOptState,
    action_mask,
    apply_two_opt,
    random_action,
    rank_from_order,
    reset,
    step,
    succ_from_order,
    time_window_feasible,
    to_routes,
)
from pyg_routing.envs.two_opt.moves import _time_window_mask_brute_force
from pyg_routing.envs.two_opt.time_windows import two_opt_time_window_mask


def _scale_widths(inst: RoutingInstances, factor: float) -> RoutingInstances:
    """Customer windows ``[e, e + factor * (l - e)]`` (depot unchanged)."""
    tw = inst.time_window.clone()
    tw[:, 1:, 1] = tw[:, 1:, 0] + factor * (tw[:, 1:, 1] - tw[:, 1:, 0])
    return replace(inst, time_window=tw)


def _random_state(inst: RoutingInstances, gen: torch.Generator) -> TwoOptState:
    """What ``init="random"`` would give for VRPTW.

    ``reset`` refuses ``init="random"`` for VRPTW (a random customer order violates
    the windows), so the random solution is built on the CVRP view of the instances
    and the windows are attached as ``reset`` does. Such states are usually
    infeasible; the comparison with the brute force is still meaningful, since both
    decide whether the WHOLE cycle after the move is feasible (mostly False here).
    """
    cvrp = RoutingInstances(Problem.CVRP, inst.pos, demand=inst.demand, capacity=inst.capacity)
    return _with_windows(reset(cvrp, "random", generator=gen), inst)


def _with_windows(state: TwoOptState, inst: RoutingInstances) -> TwoOptState:
    """``state`` with the windows and service times of ``inst`` (as ``reset`` sets them)."""
    b, k = len(inst), state.num_depots
    tw = torch.cat([inst.time_window[:, :1].expand(b, k, 2), inst.time_window[:, 1:]], 1)
    svc = torch.cat([inst.service_time[:, :1].expand(b, k), inst.service_time[:, 1:]], 1)
    return replace(state, problem=Problem.VRPTW, time_window=tw, service_time=svc)


def _shuffled(state: TwoOptState, gen: torch.Generator) -> TwoOptState:
    """The same nodes on a uniformly random cycle (depot copy 0 stays first)."""
    perm = torch.argsort(torch.rand(state.order[:, 1:].shape, generator=gen), 1) + 1
    order = torch.cat([state.order[:, :1], state.order.gather(1, perm)], 1)
    return replace(state, order=order, succ=succ_from_order(order),
                   rank=rank_from_order(order), cost=cycle_cost(state.pos, order))


def _assert_equal_to_brute_force(state: TwoOptState) -> torch.Tensor:
    mask = two_opt_time_window_mask(state)
    assert mask.shape == (len(state), state.num_nodes, state.num_nodes)
    assert torch.equal(mask, _time_window_mask_brute_force(state))
    return mask


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 12), b=st.integers(2, 3),
       init=st.sampled_from(["nearest_neighbor", "random"]), steps=st.integers(0, 4),
       width=st.sampled_from([0.5, 1.0, 3.0]))
def test_mask_equals_brute_force(seed, n, b, init, steps, width):
    inst = _scale_widths(VRPTWGenerator(n, seed=seed).sample(b), width)
    gen = torch.Generator().manual_seed(seed)
    state = reset(inst, init) if init == "nearest_neighbor" else _random_state(inst, gen)
    _assert_equal_to_brute_force(state)
    for _ in range(steps):
        # All-False rows (infeasible random states) give the no-op (0, 0).
        state, _ = step(state, random_action(state, generator=gen))
        _assert_equal_to_brute_force(state)
    _assert_equal_to_brute_force(_shuffled(state, gen))


def test_tight_windows_forbid_many_moves():
    inst = _scale_widths(VRPTWGenerator(10, seed=3).sample(3), 0.2)
    state = reset(inst, "nearest_neighbor")
    gen = torch.Generator().manual_seed(0)
    for _ in range(4):
        mask = _assert_equal_to_brute_force(state)
        assert bool(mask.all(-1).all(-1).logical_not().all())     # not trivially all-True
        assert bool(mask.any(-1).any(-1).all())                   # the current cycle is ok
        assert float(mask.float().mean()) < 0.5
        state, _ = step(state, random_action(state, generator=gen))


def test_more_than_64_nodes_and_walk_stays_feasible():
    inst = VRPTWGenerator(60, seed=0).sample(2)
    state = reset(inst, "nearest_neighbor")
    m = state.num_nodes
    assert m > TW_MAX_NODES
    gen = torch.Generator().manual_seed(0)
    rows = torch.arange(len(state))
    for _ in range(10):
        mask = action_mask(state)
        assert mask.shape == (2, m, m) and bool(mask.flatten(1).any(1).all())
        tw_mask = two_opt_time_window_mask(state)
        # Spot-check the mask on 64 random moves per instance (the brute force refuses M > 64).
        pairs = torch.randint(0, m, (len(state), 64, 2), generator=gen)
        r = state.rank.gather(1, pairs.flatten(1)).view(len(state), 64, 2)
        lo, hi = r.min(-1).values.flatten(), r.max(-1).values.flatten()
        moved = apply_two_opt(state.order.repeat_interleave(64, 0), lo, hi)
        ok = time_window_feasible(state.pos, state.time_window, state.service_time,
                                  moved.view(len(state), 64, m), state.num_depots)
        assert torch.equal(ok, tw_mask[rows.unsqueeze(1), pairs[..., 0], pairs[..., 1]])
        action = random_action(state, mask, gen)
        assert bool(mask[rows, action[:, 0], action[:, 1]].all())
        state, _ = step(state, action)
        for b, routes in enumerate(to_routes(state, best=False)):
            RoutingData.from_routes(inst[b], routes).check()
    assert state.steps == 10


def test_float64_ties_match_brute_force():
    """Customers on an integer line with integer service times: every arrival is an
    exact integer. The windows are fitted to a random solution so that it is
    feasible with many exact ties (arrival == window end, arrival == window start,
    return == depot closing, windows of neighbours touching); some ends sit half a
    tolerance below the arrival (still feasible). The moves then hit these ties."""
    gen = torch.Generator().manual_seed(0)
    b, n = 3, 10
    x = torch.randint(1, 5, (b, n), generator=gen).double()
    x *= torch.randint(0, 2, (b, n), generator=gen).double() * 2 - 1      # +-1 .. +-4
    x[:, 0] = 0.0
    pos = torch.stack([x, torch.zeros_like(x)], -1)
    svc = torch.randint(0, 2, (b, n), generator=gen).double()
    svc[:, 0] = 0.0
    wide = torch.tensor([0.0, 1000.0]).repeat(b, n, 1)
    demand = torch.ones(b, n).double()
    demand[:, 0] = 0.0
    inst = RoutingInstances(Problem.VRPTW, pos, demand=demand,
                            capacity=torch.full((b,), 3.0, dtype=torch.float64),
                            time_window=wide, service_time=svc)
    state = _random_state(inst, gen)
    k = state.num_depots
    tw = wide.clone()
    for row in range(b):            # the arrival times of the random solution
        clock, prev, back = 0.0, 0, 0.0
        for v in state.order[row].tolist() + [0]:
            node = 0 if v < k else v - k + 1
            clock += abs(float(x[row, prev] - x[row, node])) + float(svc[row, prev])
            if node == 0:
                back, clock = max(back, clock), 0.0
            else:
                slack = [0.0, 0.0, 1.0, 2.0][int(torch.randint(0, 4, (1,), generator=gen))]
                tw[row, node] = torch.tensor([clock - 1.0 + (slack > 0), clock + slack])
            prev = node
        tw[row, 0, 1] = back
    tol = 1e-6 * float(tw.abs().amax(dim=(1, 2)).clamp(min=1.0).min())
    tw[:, 1::3, 1] -= 0.5 * tol     # still feasible (within the tolerance)
    inst = replace(inst, time_window=tw)
    state = _with_windows(state, inst)
    assert state.pos.dtype == torch.float64
    for row, routes in enumerate(to_routes(state, best=False)):
        RoutingData.from_routes(inst[row], routes).check()     # feasible, with ties
    seen = torch.zeros(2, dtype=torch.bool)
    for _ in range(10):
        mask = _assert_equal_to_brute_force(state)
        seen |= torch.stack([mask.any(), (~mask).any()])
        state, _ = step(state, random_action(state, generator=gen))
    assert bool(seen.all())
