"""The 2-opt environment's node features against plain walks over the routes: the arc
lengths are the costs of each node's two arcs on the current solution, the loads are
VRP-DACT's (``nets/actor_network.py``, ``problems/problem_vrp.py``), restated here."""

import math

import pytest
import torch

from pyg_routing.data.generators import make_generator
from pyg_routing.envs.augment import augment_positions
from pyg_routing.envs.two_opt import TwoOptEnv, node_features, random_action, reset, step
from pyg_routing.envs.two_opt.features import arc_lengths, predecessors


def _walked(problem: str, n: int = 12, b: int = 3, steps: int = 15, seed: int = 0, **kw):
    env = TwoOptEnv()
    inst = make_generator(problem, n, seed=seed, **kw).sample(b)
    init = "nearest_neighbor" if problem == "vrptw" else "random"
    state = env.reset(inst, init=init, generator=torch.Generator().manual_seed(seed))
    gen = torch.Generator().manual_seed(seed + 1)
    for _ in range(steps):
        state, _ = step(state, random_action(state, generator=gen))
    return inst, state


def _cycle(state, b):
    """The cycle of instance ``b`` as a Python list of state node ids from copy 0."""
    return state.order[b].tolist()


def _cost(state, b, u, v):
    if state.costs is not None:
        return float(state.costs[b, u, v])
    (x1, y1), (x2, y2) = state.pos[b, u].tolist(), state.pos[b, v].tolist()
    return math.hypot(x2 - x1, y2 - y1)


@pytest.mark.parametrize("problem, kw", [("cvrp", {}), ("vrptw", {}), ("pdtsp", {}),
                                         ("cvrp", dict(costs="streets", grid=5)),
                                         ("cvrp", dict(open_routes=True)),
                                         ("vrptw", dict(costs="streets", grid=5))])
def test_arc_lengths_are_the_costs_of_each_nodes_two_arcs(problem, kw):
    _, state = _walked(problem, **kw)
    arcs = arc_lengths(state)
    for b in range(len(state)):
        cyc = _cycle(state, b)
        m = len(cyc)
        for t, v in enumerate(cyc):
            prev, nxt = cyc[t - 1], cyc[(t + 1) % m]
            assert float(arcs[b, v, 0]) == pytest.approx(_cost(state, b, prev, v), abs=1e-6)
            assert float(arcs[b, v, 1]) == pytest.approx(_cost(state, b, v, nxt), abs=1e-6)
    # the two columns sum to twice the solution's cost (every arc counted at both ends)
    torch.testing.assert_close(arcs.double().sum((1, 2)), 2 * state.cost.double(),
                               rtol=1e-5, atol=1e-5)


def test_cvrp_features_are_vrp_dacts_seven():
    """x, y, d_pred, d_succ, load before, demand, load from the node on (capacity units);
    depot copies: the load of the route arriving at them and of the route they open."""
    inst, state = _walked("cvrp", n=14, b=2)
    feat = node_features(state)
    assert feat.shape == (2, state.num_nodes, 7) == (2, state.num_nodes,
                                                     TwoOptEnv.feature_width("cvrp"))
    k = state.num_depots
    for b in range(2):
        cap = float(inst.capacity.reshape(-1)[b])
        cyc = _cycle(state, b)
        dem = state.demand[b].tolist()
        # split the cycle (from copy 0) into routes, each opened by a depot copy
        routes, opened = [], []
        for v in cyc:
            if v < k:
                routes.append([])
                opened.append(v)
            else:
                routes[-1].append(v)
        for r, (copy, route) in enumerate(zip(opened, routes)):
            total = sum(dem[v] for v in route)
            arriving = routes[r - 1]                     # the route ending at this copy
            expect = [sum(dem[v] for v in arriving) / cap, 0.0, total / cap]
            torch.testing.assert_close(feat[b, copy, 4:].double(),
                                       torch.tensor(expect, dtype=torch.float64))
            done = 0.0
            for v in route:
                expect = [done / cap, dem[v] / cap, (total - done) / cap]
                torch.testing.assert_close(feat[b, v, 4:].double(),
                                           torch.tensor(expect, dtype=torch.float64))
                done += dem[v]
    torch.testing.assert_close(feat[..., :2], state.pos)


def test_widths_of_every_problem_and_tsp_reads_coordinates_only():
    for problem in ("tsp", "cvrp", "vrptw", "pdtsp"):
        _, state = _walked(problem, n=10, b=2, steps=3)
        feat = node_features(state)
        assert feat.shape[-1] == TwoOptEnv.feature_width(problem), problem
        assert bool(torch.isfinite(feat).all())
    _, tsp = _walked("tsp", n=10, b=2, steps=3)
    assert torch.equal(node_features(tsp), tsp.pos)             # VRP-DACT's node_dim = 2
    _, pdtsp = _walked("pdtsp", n=10, b=2, steps=3)
    torch.testing.assert_close(node_features(pdtsp)[..., 7:], arc_lengths(pdtsp))


def test_arc_lengths_follow_the_augmented_coordinates():
    inst = make_generator("cvrp", 10, seed=4).sample(2)
    state = reset(inst, "random", generator=torch.Generator().manual_seed(0))
    copies = TwoOptEnv().augment(state, 8)
    assert torch.equal(copies.pos, augment_positions(state.pos, 8))
    torch.testing.assert_close(arc_lengths(copies), arc_lengths(state).repeat(8, 1, 1))


def test_predecessors_invert_successors():
    _, state = _walked("cvrp", n=9, b=4)
    pred = predecessors(state.succ)
    assert torch.equal(state.succ.gather(1, pred), torch.arange(state.num_nodes).expand(4, -1))
