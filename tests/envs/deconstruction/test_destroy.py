"""Destroy providers: random (seed + nearest) and SISR string removal (numba kernel
against the pure-Python reference, hand-computed sets, the string structure of every
set, bounds), their sets applied by the repair, and their argument errors."""

import gc
import pickle

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyg_routing.envs.deconstruction import (
    CVRP,
    PCVRP,
    DestroyProvider,
    InvalidRemovalSetError,
    ProblemArrays,
    RandomDestroy,
    SISRDestroy,
    ToursState,
    apply_sets_sa,
    start_solutions,
)
from pyg_routing.envs.deconstruction import destroy_reference as ref
from pyg_routing.errors import InvalidSolutionError
from tests.envs.deconstruction.common import PROBLEMS, make_instances

SETTINGS = dict(max_examples=12, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
INST = np.array([0, 0, 1, 1], np.int32)


def _solutions(problem: str, n: int, seed: int, mode: str):
    """Slots with varied tour structure: NDS start solutions after a few rounds
    (``"start"``), or random capacity-feasible routes (``"random"``, CVRP/PCVRP; PCVRP
    also leaves about a third of the customers unvisited)."""
    _, arrays = make_instances(problem, n, seed)
    rng = np.random.default_rng(seed)
    if mode == "start" or problem == "vrptw":
        return arrays, start_solutions(arrays, INST, rounds=int(rng.integers(0, 12)),
                                       num_removed=max(1, n // 4), rng=seed)
    slots = []
    for i in INST:
        keep = rng.permutation(n) + 1
        if problem == "pcvrp":
            keep = keep[rng.random(n) > 0.35]
        routes, route, load = [], [], 0.0
        for c in keep.tolist():
            d = arrays.demand[i, c]
            if route and (load + d > arrays.capacity[i] or rng.random() < 0.1):
                routes.append(route)
                route, load = [], 0.0
            route.append(c)
            load += d
        if route:
            routes.append(route)
        slots.append(routes)
    return arrays, ToursState.from_routes(arrays, slots, INST)


def _line_arrays(n: int, kind: int = CVRP) -> ProblemArrays:
    """Customers 1..n at x = c on a line, depot at x = 0, no demand."""
    x = np.arange(n + 1, dtype=np.float64)
    dist = np.abs(x[:, None] - x[None, :])[None]
    z = np.zeros((1, n + 1))
    return ProblemArrays(kind=kind, dist=dist, demand=z.copy(), capacity=np.ones(1),
                         tw=np.zeros((1, n + 1, 2)), service=z.copy(), prize=z.copy())


def _members(sets: np.ndarray) -> list[int]:
    return [int(c) for c in sets if c > 0]


def _check_format(sets: np.ndarray, n: int, width: int) -> None:
    assert sets.dtype == np.int32 and sets.shape[-1] == width
    pad = sets < 0
    assert not (pad[..., :-1] & ~pad[..., 1:]).any(), "padding only at the end"
    assert ((sets == -1) | ((sets >= 1) & (sets <= n))).all()
    for row in sets.reshape(-1, width):
        ids = _members(row)
        assert ids and len(set(ids)) == len(ids)


# ---------------------------------------------------------------------- random destroy
@settings(**SETTINGS)
@given(problem=st.sampled_from(PROBLEMS), n=st.integers(3, 40), seed=st.integers(0, 10**6),
       k=st.integers(1, 40), num_sets=st.integers(1, 9))
def test_random_destroy_is_seed_plus_nearest(problem, n, seed, k, num_sets):
    k = min(k, n)
    arrays, state = _solutions(problem, n, seed, "start")
    sets = RandomDestroy(k).propose(state, arrays, num_sets, np.random.default_rng(seed))
    assert sets.shape == (len(INST), num_sets, k)
    _check_format(sets, n, k)
    for s, i in enumerate(INST):
        for row in sets[s].tolist():
            d = arrays.dist[i, row[0]]
            nearest = sorted((c for c in range(1, n + 1) if c != row[0]),
                             key=lambda c: (d[c], c))
            assert row[1:] == nearest[:k - 1]


def test_random_destroy_k_above_n_is_refused():
    arrays, state = _solutions("cvrp", 10, 0, "start")
    with pytest.raises(InvalidRemovalSetError, match=r"`k` = 11 exceeds .* N = 10"):
        RandomDestroy(11).propose(state, arrays, 3, 0)
    assert RandomDestroy(10).propose(state, arrays, 3, 0).shape == (4, 3, 10)


# ---------------------------------------------------------------------- SISR = reference
SISR_PARAMS = dict(
    c_bar=st.sampled_from([0.5, 2.0, 7.3, 15.0, 15.0, 40.0]),
    l_max=st.integers(1, 12), alpha=st.sampled_from([0.0, 0.01, 0.01, 0.3, 1.0]),
    strict=st.booleans())


@settings(**SETTINGS)
@given(problem=st.sampled_from(PROBLEMS), n=st.integers(2, 45), seed=st.integers(0, 10**6),
       mode=st.sampled_from(["start", "random"]), **SISR_PARAMS)
def test_sisr_kernel_matches_reference(problem, n, seed, mode, c_bar, l_max, alpha, strict):
    arrays, state = _solutions(problem, n, seed, mode)
    destroy = SISRDestroy(c_bar, l_max, alpha, strict_strings=strict)
    u = destroy.draw_uniforms(len(INST), 15, seed)
    sets = destroy.sets_from_uniforms(state, arrays, u)
    _check_format(sets, n, destroy.max_set_size(arrays.kind, n))
    for s, (i, routes) in enumerate(zip(INST, state.to_routes())):
        want = ref.sisr_sets(arrays.kind, arrays.dist[i], routes, u[s], c_bar, l_max, alpha,
                             strict)
        assert [_members(row) for row in sets[s]] == want


@settings(**SETTINGS)
@given(problem=st.sampled_from(PROBLEMS), n=st.integers(2, 45), seed=st.integers(0, 10**6),
       mode=st.sampled_from(["start", "random"]), **SISR_PARAMS)
def test_sisr_sets_are_unions_of_strings(problem, n, seed, mode, c_bar, l_max, alpha, strict):
    """Per ruined tour: one contiguous string, or a split string (two parts of
    ⌊lt/2⌋ and ⌈lt/2⌉ around a kept inner sub-string), listed together in tour order;
    at most ks tours; PCVRP: unvisited customers only singly."""
    arrays, state = _solutions(problem, n, seed, mode)
    destroy = SISRDestroy(c_bar, l_max, alpha, strict_strings=strict)
    u = destroy.draw_uniforms(len(INST), 15, seed)
    sets = destroy.sets_from_uniforms(state, arrays, u)
    for s, routes in enumerate(state.to_routes()):
        where = {c: (t, p) for t, r in enumerate(routes) for p, c in enumerate(r)}
        ls_max = min(l_max, len(where) // len(routes)) if routes else 1
        ks_max = 4 * c_bar / (1 + ls_max) - 1
        for r, row in enumerate(sets[s]):
            ids = _members(row)
            ks = max(1, int(1 + u[s, r, 0] * (ks_max + 0.9999 - 1)))
            tours = [where[c][0] if c in where else None for c in ids]
            assert problem == "pcvrp" or None not in tours
            ruined = [t for j, t in enumerate(tours) if t is not None
                      and (j == 0 or tours[j - 1] != t)]
            assert len(ruined) == len(set(ruined)) <= ks <= destroy.ks_bound(1)
            for t in ruined:
                pos = [where[c][1] for c in ids if where.get(c, (None,))[0] == t]
                assert pos == sorted(pos) and len(pos) <= ls_max
                gaps = [b - a - 1 for a, b in zip(pos, pos[1:]) if b - a > 1]
                assert len(gaps) <= 1
                if gaps:
                    first = next(j for j in range(1, len(pos)) if pos[j] - pos[j - 1] > 1)
                    assert first == len(pos) // 2 and 2 <= len(pos) < ls_max
                    assert pos[-1] - pos[0] + 1 <= len(routes[t])


# ---------------------------------------------------------------------- hand-computed sets
def _one_row(destroy: SISRDestroy, values: dict[int, float]) -> np.ndarray:
    u = np.zeros((1, 1, destroy.uniforms_per_set))
    for j, v in values.items():
        u[0, 0, j] = v
    return u


@pytest.mark.parametrize(("values", "strict", "want"), [
    # ks = 1, seed 5 (position 4 of [1..10]), lt = ⌊1 + 0.35 * 9.9999⌋ = 4, plain string,
    # start ∈ [0, 4]: ⌊0.5 * 5⌋ = 2 -> positions 2..5.
    ({1: 0.45, 2: 0.35, 3: 0.2, 5: 0.5}, False, [3, 4, 5, 6]),
    # start at the low end: NDS's window may end just before the seed; strict starts at 1.
    ({1: 0.45, 2: 0.35, 3: 0.2, 5: 0.0}, False, [1, 2, 3, 4]),
    ({1: 0.45, 2: 0.35, 3: 0.2, 5: 0.0}, True, [2, 3, 4, 5]),
    # split: m = 3 (0.99^3 <= 0.975 < 0.99^2), window 7, start ∈ [0, 3]: 2; keep 2 + 2:
    # removes positions 2, 3 and 7, 8, keeps 5, 6, 7 (positions 4..6).
    ({1: 0.45, 2: 0.35, 3: 0.7, 4: 0.975, 5: 0.5}, False, [3, 4, 8, 9]),
])
def test_sisr_hand_computed_single_tour(values, strict, want):
    arrays = _line_arrays(10)
    state = ToursState.from_routes(arrays, [[list(range(1, 11))]], [0])
    destroy = SISRDestroy(strict_strings=strict)
    sets = destroy.sets_from_uniforms(state, arrays, _one_row(destroy, values))
    assert _members(sets[0, 0]) == want


def test_sisr_hand_computed_two_tours():
    """ls_max 3, ks_max 14: u0 0.1 -> 2 strings; seed 3; its tour gives [3]
    (lt 1, start 2); the walk 3, 2, 4: tour [4, 5, 6] gives lt 3 = lt_max, all of it."""
    arrays = _line_arrays(6)
    state = ToursState.from_routes(arrays, [[[1, 2, 3], [4, 5, 6]]], [0])
    destroy = SISRDestroy()
    u = _one_row(destroy, {0: 0.1, 1: 0.4, 2: 0.0, 5: 0.9, 6: 0.99})
    assert _members(destroy.sets_from_uniforms(state, arrays, u)[0, 0]) == [3, 4, 5, 6]


def test_sisr_reaches_its_bound():
    """6 tours of 10 and all uniforms near 1: 5 strings of 10 = k_max = 50."""
    arrays = _line_arrays(60)
    state = ToursState.from_routes(arrays, [[list(range(10 * j + 1, 10 * j + 11))
                                             for j in range(6)]], [0])
    destroy = SISRDestroy()
    assert destroy.max_set_size(CVRP, 60) == 50 and destroy.uniforms_per_set == 2 + 4 * 29
    sets = destroy.sets_from_uniforms(state, arrays, np.full((1, 1, 118), 0.999999))
    assert sets.shape == (1, 1, 50) and (sets > 0).all()


def test_sisr_pcvrp_unvisited_are_removed_singly():
    """Nothing visited: the walk removes the seed and its nearest customers one by one
    until more than 2 c̄ are removed: ⌊2 c̄⌋ + 1 customers."""
    _, arrays = make_instances("pcvrp", 40, 7, b=1)
    state = ToursState.from_routes(arrays, [[]], [0])
    destroy = SISRDestroy(c_bar=15)
    assert destroy.max_set_size(PCVRP, 40) == 40
    u = destroy.draw_uniforms(1, 6, 0)
    sets = destroy.sets_from_uniforms(state, arrays, u)
    for r in range(6):
        seed = 1 + int(u[0, r, 1] * 40)
        assert _members(sets[0, r]) == ref.walk_order(arrays.dist[0], seed)[:31]


# ---------------------------------------------------------------------- search use
@settings(max_examples=6, deadline=None)
@given(problem=st.sampled_from(PROBLEMS), seed=st.integers(0, 10**6),
       temperature=st.sampled_from([0.0, 0.05]))
def test_sets_apply_to_clean_solutions(problem, seed, temperature):
    arrays, state = _solutions(problem, 40, seed, "start")
    rng = np.random.default_rng(seed)
    for destroy in (RandomDestroy(15), SISRDestroy()):
        sets = destroy.propose(state, arrays, 25, rng)
        best = state.clone()
        apply_sets_sa(state, best, arrays, sets, temperature=temperature, rng=rng)
        state.check(arrays)
        best.check(arrays)


@pytest.mark.parametrize("destroy", [RandomDestroy(7), SISRDestroy()], ids=repr)
def test_determinism_by_rng_seed(destroy):
    """Same seed, same sets (whatever the thread count); another seed, other sets."""
    arrays, state = _solutions("cvrp", 30, 3, "start")
    a = destroy.propose(state, arrays, 20, np.random.default_rng(5))
    b = destroy.propose(state, arrays, 20, np.random.default_rng(5))
    c = destroy.propose(state, arrays, 20, np.random.default_rng(6))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        assert np.array_equal(destroy.propose(state, arrays, 20, np.random.default_rng(5)), a)
        numba.set_num_threads(1)
        assert np.array_equal(destroy.propose(state, arrays, 20, np.random.default_rng(5)), a)
    finally:
        numba.set_num_threads(before)


# ---------------------------------------------------------------------- interface
def test_protocol_repr_and_cache():
    arrays, state = _solutions("cvrp", 12, 0, "start")
    for destroy, name in ((RandomDestroy(4), "random"), (SISRDestroy(10, 5, 0.1), "sisr")):
        assert isinstance(destroy, DestroyProvider) and destroy.name == name
        destroy.propose(state, arrays, 2, 0)
        table = destroy._tables.get(arrays)
        assert destroy._tables.get(arrays) is table              # built once per arrays
        copy = pickle.loads(pickle.dumps(destroy))
        assert len(copy._tables) == 0 and repr(copy) == repr(destroy)
    assert repr(RandomDestroy(4)) == "RandomDestroy(k=4)"
    assert repr(SISRDestroy(10, 5, 0.1)) == ("SISRDestroy(c_bar=10, l_max=5, alpha=0.1, "
                                             "strict_strings=False)")
    destroy = SISRDestroy()
    other, _ = _solutions("cvrp", 12, 1, "start")
    destroy._tables.get(arrays)
    destroy._tables.get(other)
    assert len(destroy._tables) == 2
    other.dist = other.dist.copy()                                # a new matrix: rebuilt
    assert destroy._tables.get(other) is not None
    del other
    gc.collect()
    assert len(destroy._tables) == 1                             # held weakly


@pytest.mark.parametrize(("make", "option"), [
    (lambda: RandomDestroy(0), "`k`"),
    (lambda: RandomDestroy(2.0), "`k`"),
    (lambda: RandomDestroy(True), "`k`"),
    (lambda: SISRDestroy(c_bar=0), "`c_bar`"),
    (lambda: SISRDestroy(c_bar=-3.0), "`c_bar`"),
    (lambda: SISRDestroy(c_bar=float("nan")), "`c_bar`"),
    (lambda: SISRDestroy(c_bar="15"), "`c_bar`"),
    (lambda: SISRDestroy(l_max=0), "`l_max`"),
    (lambda: SISRDestroy(l_max=2.5), "`l_max`"),
    (lambda: SISRDestroy(alpha=-0.1), "`alpha`"),
    (lambda: SISRDestroy(alpha=1.5), "`alpha`"),
    (lambda: SISRDestroy(strict_strings=1), "`strict_strings`"),
])
def test_bad_options_name_the_option(make, option):
    with pytest.raises(InvalidRemovalSetError, match=option):
        make()


def test_bad_propose_inputs():
    arrays, state = _solutions("cvrp", 12, 0, "start")
    destroy = SISRDestroy()
    for provider in (destroy, RandomDestroy(3)):
        with pytest.raises(InvalidRemovalSetError, match="`num_sets`"):
            provider.propose(state, arrays, 0, 0)
    _, other = make_instances("cvrp", 13, 0)
    with pytest.raises(InvalidSolutionError):
        destroy.propose(state, other, 3, 0)
    with pytest.raises(InvalidRemovalSetError, match="`u` must have shape"):
        destroy.sets_from_uniforms(state, arrays, np.zeros((4, 3, 5)))
    with pytest.raises(InvalidRemovalSetError, match="not in"):
        destroy.sets_from_uniforms(state, arrays, np.full((4, 3, 118), 1.5))
    broken = state.clone()
    broken.tour[1, 3] = -1
    with pytest.raises(InvalidRemovalSetError, match="slot 1: customer 3 is in no tour"):
        destroy.propose(broken, arrays, 3, 0)
