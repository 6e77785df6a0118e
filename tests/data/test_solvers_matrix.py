"""PyVRP / OR-Tools with explicit (asymmetric) cost matrices and open routes.

The optima are checked against an exhaustive search (:func:`_brute_force`) on
instances small enough to enumerate every solution in well under a second.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from pyg_routing.data.generators import make_generator
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.data.solvers import (
    integer_instance,
    nearest_neighbor,
    solve_instances,
    solve_ortools,
    solve_pyvrp,
    stack_instances,
    sweep,
    tours_to_routes,
)
from pyg_routing.data.solvers.pyvrp_solver import DEFAULT_SCALE, float_distance_matrix
from pyg_routing.errors import InfeasibleSolutionError, InvalidInstanceError

PYVRP_LIMIT = 0.2
#: OR-Tools' guided local search never stops early: it runs to the limit.
ORTOOLS_LIMIT = 0.3
SOLVERS = {"pyvrp": (solve_pyvrp, PYVRP_LIMIT), "ortools": (solve_ortools, ORTOOLS_LIMIT)}
CONSTRUCTIVE = {"nearest_neighbor": nearest_neighbor, "sweep": sweep}


# ----------------------------------------------------------------------- instances
def _penalised(pos: np.ndarray, w: float, integral: bool) -> np.ndarray:
    """Euclidean distance plus ``w * max(0, (p_i - p_0) x (p_j - p_0))``: turning
    counter-clockwise around the depot costs extra, so a route and its reversal
    differ in cost. (A penalty on eastward moves, ``max(0, x_j - x_i)``, would not
    do: on a closed tour the eastward and westward moves add up to the same.)"""
    diff = pos[None, :, :] - pos[:, None, :]                       # [i, j] = p_j - p_i
    euclid = np.sqrt((diff ** 2).sum(-1))
    if integral:
        euclid = np.ceil(euclid)
    rel = pos - pos[0]
    cross = rel[:, None, 0] * rel[None, :, 1] - rel[:, None, 1] * rel[None, :, 0]
    return euclid + w * np.maximum(0.0, cross)


#: 6 customers on a 10 x 10 grid around the depot (5, 5).
GRID = np.array([[5, 5], [1, 2], [2, 8], [9, 9], [8, 1], [4, 0], [9, 5]], dtype=np.float64)


def _cvrp(open_routes: bool = False) -> RoutingData:
    """Asymmetric CVRP with float costs: total demand 21 on capacity 8 needs 3 routes."""
    pos = GRID / 10
    return RoutingData.from_instance(
        "cvrp", pos, demand=[0, 3, 4, 2, 5, 3, 4], capacity=8,
        cost_matrix=_penalised(pos, 1.0, integral=False), open_routes=open_routes)


#: Time unit of :func:`_vrptw`: a power of two, so costs and times stay exact in
#: float32 and in PyVRP's integers (scale 10 000 = 1250 * 8).
UNIT = 8.0


def _vrptw(open_routes: bool, depot_close: float = 60.0) -> RoutingData:
    """Asymmetric VRPTW with every number a multiple of 1/32: no rounding anywhere,
    so the solvers must match the optimum exactly."""
    return RoutingData.from_instance(
        "vrptw", GRID / 10, demand=[0, 3, 4, 2, 5, 3, 4], capacity=10,
        time_window=np.array([[0, depot_close], [0, 20], [10, 30], [15, 40], [0, 15],
                              [5, 25], [20, 45]]) / UNIT,
        service_time=np.array([0, 2, 2, 3, 2, 2, 3]) / UNIT,
        cost_matrix=_penalised(GRID, 0.25, integral=True) / UNIT, open_routes=open_routes)


def _matrix(inst: RoutingData) -> list[list[float]]:
    """The instance's matrix as the test built it (float32 entries in float64; the
    raw one for benchmarks), the open-route zeros applied here, independently of
    the data core."""
    n = inst.num_nodes
    if "travel_cost" in inst:
        flat = inst.raw_travel_cost if "raw_travel_cost" in inst else inst.travel_cost
        m = flat.double().view(n, n).numpy().copy()
    else:
        p = inst.pos.double().numpy()
        m = np.sqrt(((p[None] - p[:, None]) ** 2).sum(-1))
    if bool(inst.open_routes):
        m[:, 0] = 0.0
    return m.tolist()


# ----------------------------------------------------------------------- brute force
def _route_cost(m: list[list[float]], route: tuple[int, ...], inst: RoutingData
                ) -> float | None:
    """Cost of one route, or None when it breaks a time window (the schedule of
    RoutingData.check: leave at e_0 + s_0, wait for openings)."""
    tour = (0, *route, 0)
    cost = sum(m[a][b] for a, b in zip(tour[:-1], tour[1:]))
    if "time_window" not in inst:
        return cost
    tw, st = inst.time_window.double().tolist(), inst.service_time.double().tolist()
    t = tw[0][0] + st[0]
    prev = 0
    for c in route:
        t = max(t + m[prev][c], tw[c][0])
        if t > tw[c][1]:
            return None
        t += st[c]
        prev = c
    if not bool(inst.open_routes) and t + m[prev][0] > tw[0][1]:
        return None
    return cost


def _brute_force(inst: RoutingData) -> tuple[float, list[list[int]]]:
    """The optimum over every solution: each ordered subset of customers (every
    permutation of every subset) is a candidate route; the best partition of all
    customers into such routes is found over all subset splits."""
    m = _matrix(inst)
    n = inst.num_nodes
    demand = inst.demand.tolist() if "demand" in inst else [0.0] * n
    cap = float(inst.capacity) if "capacity" in inst else float("inf")
    single = Problem.parse(inst.problem).single_route
    best_route: dict[int, tuple[float, tuple[int, ...]]] = {}
    for k in range(n - 1 if single else 1, n):
        for route in itertools.permutations(range(1, n), k):
            if sum(demand[c] for c in route) > cap:
                continue
            cost = _route_cost(m, route, inst)
            mask = sum(1 << (c - 1) for c in route)
            if cost is not None and (mask not in best_route or cost < best_route[mask][0]):
                best_route[mask] = (cost, route)
    full = (1 << (n - 1)) - 1
    best: dict[int, tuple[float, list[list[int]]]] = {0: (0.0, [])}
    for mask in range(1, full + 1):
        low = mask & -mask                # the route of the lowest customer: no double count
        sub = mask
        while sub:
            if sub & low and sub in best_route and mask ^ sub in best:
                cost = best_route[sub][0] + best[mask ^ sub][0]
                if mask not in best or cost < best[mask][0]:
                    best[mask] = (cost, [list(best_route[sub][1]), *best[mask ^ sub][1]])
            sub = (sub - 1) & mask
    cost, routes = best[full]
    sol = RoutingData.from_routes(inst, routes)
    assert bool(sol.is_feasible())
    assert float(sol.cost()) == pytest.approx(cost, abs=1e-5)   # the data core agrees
    return float(sol.cost()), routes


def _service_ends(inst: RoutingData, routes: list[list[int]]) -> list[float]:
    """When each route's last service ends (the schedule of RoutingData.check)."""
    m = _matrix(inst)
    tw, st = inst.time_window.double().tolist(), inst.service_time.double().tolist()
    ends = []
    for route in routes:
        t, prev = tw[0][0] + st[0], 0
        for c in route:
            t = max(t + m[prev][c], tw[c][0]) + st[c]
            prev = c
        ends.append(t)
    return ends


# ----------------------------------------------------------------------- optimality
#: Float costs (``exact=False``): the solvers rank solutions by ``sum(rint(s * c))``,
#: each arc off by at most 0.5 / s, and a solution of 6 customers has at most 12
#: arcs, so their optimum may exceed the true one by up to 2 * 12 * 0.5 / s (plus
#: float32 noise). Exact cases (multiples of 1/32) have no rounding at all.
CASES = {
    "asymmetric-cvrp": (lambda: _cvrp(), False),
    "open-asymmetric-cvrp": (lambda: _cvrp(open_routes=True), False),
    "open-euclidean-cvrp": (lambda: RoutingData.from_instance(
        "cvrp", GRID / 10, demand=[0, 3, 4, 2, 5, 3, 4], capacity=8, open_routes=True), False),
    "asymmetric-vrptw": (lambda: _vrptw(False), True),
    "open-asymmetric-vrptw": (lambda: _vrptw(True), True),
    "open-vrptw-depot-closes-early": (lambda: _vrptw(True, depot_close=12), True),
}


@pytest.mark.parametrize("solver", sorted(SOLVERS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_solvers_match_brute_force(case: str, solver: str) -> None:
    make, exact = CASES[case]
    inst = make()
    best, _ = _brute_force(inst)
    solve, limit = SOLVERS[solver]
    sol = RoutingData.from_routes(inst, solve(inst, limit))
    sol.check()
    tol = 1e-6 if exact else 2 * 12 * 0.5 / DEFAULT_SCALE + 1e-5
    assert best - 1e-5 <= float(sol.cost()) <= best + tol


def test_closed_and_open_optima_differ() -> None:
    # The open optimum is strictly cheaper than the closed one on the same data,
    # so a solver that ignored the open flag would fail the test above.
    for make in (_cvrp, lambda open_routes: _vrptw(open_routes)):
        opened, closed = make(open_routes=True), make(open_routes=False)
        assert _brute_force(opened)[0] < _brute_force(closed)[0] - 0.1


def _ring() -> RoutingData:
    """TSP: 5 customers on a circle around the depot, counter-clockwise moves
    penalised; the clockwise tour is optimal, its reversal much dearer."""
    angle = np.arange(5) * 2 * np.pi / 5
    pos = np.concatenate([[[0.5, 0.5]], 0.5 + 0.4 * np.stack([np.cos(angle), np.sin(angle)], 1)])
    return RoutingData.from_instance("tsp", pos, cost_matrix=_penalised(pos, 2.0, False))


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_asymmetric_route_direction(solver: str) -> None:
    inst = _ring()
    solve, limit = SOLVERS[solver]
    routes = solve(inst, limit)
    (route,) = routes
    assert all((b - a) % 5 == 4 for a, b in zip(route[:-1], route[1:]))      # clockwise
    cost = float(RoutingData.from_routes(inst, routes).cost())
    reverse = float(RoutingData.from_routes(inst, [route[::-1]]).cost())
    assert cost == pytest.approx(_brute_force(inst)[0], abs=1e-5)
    assert reverse > cost + 1.0


# ----------------------------------------------------------------------- conversion
@pytest.mark.parametrize("problem", ["cvrp", "vrptw"])
def test_euclidean_matrix_is_bit_identical(problem: str) -> None:
    # A matrix built with the arithmetic of evaluation.arc_lengths is the
    # coordinate-only instance: same floats bit for bit, same integers, same search.
    plain = make_generator(problem, 12, seed=3).sample(1)[0]
    n = plain.num_nodes
    src, dst = torch.arange(n).repeat_interleave(n), torch.arange(n).repeat(n)
    matrix = (plain.pos[dst] - plain.pos[src]).norm(dim=-1).view(n, n)
    fields = {k: getattr(plain, k) for k in ("demand", "capacity", "time_window",
                                               "service_time") if k in plain}
    explicit = RoutingData.from_instance(problem, plain.pos, cost_matrix=matrix, **fields)
    (a, sa), (b, sb) = float_distance_matrix(plain), float_distance_matrix(explicit)
    assert a.dtype == b.dtype == np.float64 and a.tobytes() == b.tobytes() and sa == sb
    ia, ib = integer_instance(plain), integer_instance(explicit)
    assert np.array_equal(ia.distance, ib.distance) and np.array_equal(ia.duration, ib.duration)
    ra, rb = solve_pyvrp(plain, PYVRP_LIMIT, seed=7), solve_pyvrp(explicit, PYVRP_LIMIT, seed=7)
    assert ra == rb
    assert float(RoutingData.from_routes(plain, ra).cost()) == \
        float(RoutingData.from_routes(explicit, rb).cost())


@pytest.mark.parametrize("open_routes", [False, True])
def test_integer_matrix_is_conservative(open_routes: bool) -> None:
    pos = GRID / 10
    matrix = _penalised(pos, 1.0, integral=False)
    inst = RoutingData.from_instance(
        "vrptw", pos, demand=[0, 1, 1, 1, 1, 1, 1], capacity=3,
        time_window=[[0, 5]] + [[0.1 * v, 2 + 0.1 * v] for v in range(1, 7)],
        service_time=[0] + [0.05] * 6, cost_matrix=matrix, open_routes=open_routes)
    ii = integer_instance(inst)
    s = ii.scale
    exact = inst.travel_cost.double().view(7, 7).numpy().copy()
    if open_routes:
        exact[:, 0] = 0.0
        assert not ii.distance[:, 0].any() and not ii.duration[:, 0].any()
    assert ii.open_routes is open_routes and s == DEFAULT_SCALE
    assert (ii.duration / s >= exact - 1e-12).all()                       # travel times up
    assert np.abs(ii.distance / s - exact).max() <= 0.5 / s + 1e-12       # costs nearest
    assert (ii.distance != ii.distance.T).any()                           # as given
    sol = RoutingData.from_routes(inst, solve_pyvrp(inst, PYVRP_LIMIT))
    sol.check()


def test_raw_matrix_is_used_exactly() -> None:
    # Benchmark-style: the raw (original-unit) matrix is what cost() measures; an
    # integral one converts at scale 1 with no error, a fractional one at the default.
    raw = np.ceil(_penalised(GRID, 0.5, integral=True))
    inst = RoutingData.from_instance(
        "cvrp", GRID / 10, demand=[0, 3, 4, 2, 5, 3, 4], capacity=8, raw_pos=GRID, scale=10.0,
        rounding="nint", cost_matrix=raw / 10, raw_cost_matrix=raw, name="raw")
    dist, scale = float_distance_matrix(inst)
    assert scale == 1.0 and np.array_equal(dist, raw)
    routes = solve_pyvrp(inst, PYVRP_LIMIT)
    int_cost = sum(raw[a, b] for r in routes for a, b in zip([0, *r], [*r, 0]))
    assert float(RoutingData.from_routes(inst, routes).cost()) == int_cost == _brute_force(inst)[0]
    frac = RoutingData.from_instance("cvrp", GRID / 10, demand=[0, 3, 4, 2, 5, 3, 4],
                                     capacity=8, raw_pos=GRID, cost_matrix=raw / 10,
                                     raw_cost_matrix=raw + 0.25)
    assert float_distance_matrix(frac)[1] == DEFAULT_SCALE


# ----------------------------------------------------------------------- open routes
def test_open_route_cost_excludes_returns() -> None:
    inst = _cvrp(open_routes=True)
    routes = solve_pyvrp(inst, PYVRP_LIMIT)
    m = inst.travel_cost.double().view(7, 7)
    outbound = sum(float(m[a, b]) for r in routes for a, b in zip([0, *r[:-1]], r))
    returns = sum(float(m[r[-1], 0]) for r in routes)
    cost = float(RoutingData.from_routes(inst, routes).cost())
    assert cost == pytest.approx(outbound, abs=1e-5)
    closed = float(RoutingData.from_routes(_cvrp(open_routes=False), routes).cost())
    assert returns > 0.5 and closed == pytest.approx(cost + returns, abs=1e-5)


@pytest.mark.filterwarnings("ignore::pyvrp.exceptions.PenaltyBoundWarning")
@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_open_vrptw_ignores_depot_closing(solver: str) -> None:
    # The depot closes at 1.5, before any customer's service can end: only open
    # routes can serve them.
    opened, closed = _vrptw(True, depot_close=12), _vrptw(False, depot_close=12)
    solve, limit = SOLVERS[solver]
    routes = solve(opened, limit)
    RoutingData.from_routes(opened, routes).check()
    assert max(_service_ends(opened, routes)) > float(opened.time_window[0, 1])
    assert not bool(RoutingData.from_routes(closed, routes).is_feasible())
    with pytest.raises(InfeasibleSolutionError):
        solve(closed, limit)


# ----------------------------------------------------------------------- batches
def _dense() -> RoutingInstances:
    gen = torch.Generator().manual_seed(5)
    pos = torch.rand(3, 7, 2, generator=gen)
    base = torch.stack([torch.from_numpy(_penalised(p.double().numpy(), 1.0, False))
                        for p in pos]).float()
    demand = torch.randint(1, 5, (3, 7), generator=gen).float()
    demand[:, 0] = 0
    return RoutingInstances(Problem.CVRP, pos, demand=demand, capacity=torch.full((3,), 8.0),
                            cost_matrix=base, open_routes=torch.tensor([False, True, True]))


def test_solve_instances_carries_matrix_and_open_flag() -> None:
    dense = _dense()
    part = dense[1:3]
    data = part.to_data_list()
    assert all("travel_cost" in d for d in data) and [bool(d.open_routes) for d in data] == \
        [True, True]
    solved = solve_instances(data, "pyvrp", time_limit=PYVRP_LIMIT, num_workers=1,
                             progress=False)
    for i, sol in enumerate(solved):
        one = dense[1 + i]
        routes = solve_pyvrp(one, PYVRP_LIMIT)
        assert sol.routes() == routes
        assert float(sol.cost()) == float(RoutingData.from_routes(one, routes).cost())
    back = stack_instances(data)
    assert torch.equal(back.cost_matrix, part.cost_matrix)
    assert torch.equal(back.open_routes, part.open_routes)
    assert torch.equal(back.costs(), part.costs())
    assert stack_instances(dense[0:1].to_data_list()).open_routes is None


@pytest.mark.parametrize("heuristic", ["nearest_neighbor", "sweep"])
def test_constructive_batches_keep_matrices_apart(heuristic: str) -> None:
    # A list mixing Euclidean and explicit-matrix instances is solved in separate
    # dense batches, each with its matrices and open flags: the same routes as the
    # heuristic on the original RoutingInstances.
    dense = _dense()
    plain = RoutingData.from_instance("cvrp", dense.pos[0], demand=dense.demand[0], capacity=8)
    solved = solve_instances([plain, dense[1], dense[2]], heuristic, progress=False)
    direct = tours_to_routes(CONSTRUCTIVE[heuristic](dense[1:3]))
    assert [s.routes() for s in solved[1:]] == direct
    alone = tours_to_routes(CONSTRUCTIVE[heuristic](stack_instances([plain])))
    assert solved[0].routes() == alone[0]


def test_refusals() -> None:
    dense = _dense()
    # A matrix announced but lost is never replaced by Euclidean distances.
    lost = dense[0]
    del lost.travel_cost
    for solve in (solve_pyvrp, solve_ortools):
        with pytest.raises(InvalidInstanceError, match="explicit_cost"):
            solve(lost, 0.1)
    with pytest.raises(InvalidInstanceError, match="^instance 0: `explicit_cost`"):
        stack_instances([lost])
    with pytest.raises(InvalidInstanceError, match="^instance 1: `explicit_cost`"):
        solve_instances([dense[1], lost], "nearest_neighbor", progress=False)
    plain = RoutingData.from_instance("cvrp", dense.pos[0], demand=dense.demand[0], capacity=8)
    with pytest.raises(ValueError, match="instance 1 has no explicit cost matrix"):
        stack_instances([dense[0], plain])
    huge = RoutingData.from_instance("cvrp", dense.pos[0], demand=dense.demand[0], capacity=8,
                                     cost_matrix=torch.full((7, 7), 1e15))
    with pytest.raises(InvalidInstanceError, match="too large for integer scale"):
        solve_pyvrp(huge, 0.1)
