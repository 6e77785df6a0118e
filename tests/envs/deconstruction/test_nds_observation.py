"""The NDS policy's observation of a ToursState, and PolicyDestroy in the search."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pyg_routing import encodings
from pyg_routing.data import RoutingData
from pyg_routing.envs.augment import augment_positions
from pyg_routing.envs.deconstruction import (
    NDSFeatures,
    PolicyDestroy,
    ProblemArrays,
    ToursState,
    apply_sets_sa,
    augmentation_index,
    observe,
    start_solutions,
    unit_square_symmetries,
)
from pyg_routing.errors import InvalidInstanceError
from pyg_routing.models import NDSPolicy
from pyg_routing.search import DestroyRepairSearch, MaxIterations
from tests.envs.deconstruction.common import PROBLEMS, make_instances

N = 14


def _search_state(problem: str, augment: int = 3, seed: int = 0, n: int = N):
    inst, arrays = make_instances(problem, n, seed)
    slots = np.repeat(np.arange(len(inst), dtype=np.int32), augment)
    return inst, arrays, start_solutions(arrays, slots, rng=seed)


def _reversed(state: ToursState) -> ToursState:
    """Every tour driven the other way (no feasibility check: observation only)."""
    rev = state.clone()
    rev.pred, rev.succ = state.succ.copy(), state.pred.copy()
    rev.first, rev.last = state.last.copy(), state.first.copy()
    return rev


@pytest.mark.parametrize("problem", PROBLEMS)
def test_route_quantities_equal_routing_data_for_every_slot(problem):
    inst, arrays, state = _search_state(problem, augment=10)   # slots 8, 9 wrap around
    obs = observe(state, NDSFeatures.from_instances(inst))
    routes = state.to_routes()
    for s in range(len(state)):
        data = RoutingData.from_routes(inst[int(state.inst[s])], routes[s])
        rid = obs.route_id[s]
        offset = int(rid[rid >= 0].min()) if bool((rid >= 0).any()) else 0
        assert torch.equal(obs.route_pos[s], data.route_pos)
        assert torch.equal(torch.where(rid >= 0, rid - offset, -1), data.route_id)
        torch.testing.assert_close(obs.cum_dist[s], data.cum_dist, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(obs.route_length[s], data.route_length, rtol=1e-5,
                                   atol=1e-5)
        rel = obs.pos[s] - obs.pos[s, :1]                        # the slot's own angles
        angle = torch.atan2(rel[:, 1], rel[:, 0])
        torch.testing.assert_close(obs.depot_angle[s, 1:], angle[1:])
        assert float(obs.depot_angle[s, 0]) == 0
    # NDS's neighbour and tour inputs, as the state holds them.
    assert torch.equal(obs.pred, torch.from_numpy(state.pred[:, 1:]).long())
    assert torch.equal(obs.succ, torch.from_numpy(state.succ[:, 1:]).long())
    assert torch.equal(obs.tour, torch.from_numpy(state.tour[:, 1:]).long())


@pytest.mark.parametrize("problem", PROBLEMS)
def test_features_are_nds_scaled_and_slots_see_their_symmetry(problem):
    inst, arrays, state = _search_state(problem, augment=10)
    obs = observe(state, NDSFeatures.from_instances(inst))
    width = {"cvrp": 3, "vrptw": 5, "pcvrp": 4}[problem]
    assert obs.x.shape == (len(state), N + 1, width)
    aug = augment_positions(inst.pos.float(), 8).view(8, len(inst), N + 1, 2)
    for s in range(len(state)):
        b, a = int(state.inst[s]), s % 10
        torch.testing.assert_close(obs.pos[s], aug[a % 8, b])
        torch.testing.assert_close(obs.x[s, :, :2], obs.pos[s])
        ratio = (inst.demand[b] / inst.capacity[b]).float()
        torch.testing.assert_close(obs.x[s, 1:, 2], ratio[1:])
        if problem == "vrptw":
            torch.testing.assert_close(obs.x[s, 1:, 3:], inst.time_window[b, 1:].float())
        if problem == "pcvrp":
            torch.testing.assert_close(obs.x[s, 1:, 3], inst.prize[b, 1:].float())
        assert bool((obs.x[s, 0, 2:] == 0).all())               # the depot: xy only


def test_augmentation_index_ranks_slots_within_their_instance():
    inst = np.array([2, 0, 2, 1, 0, 2])
    assert augmentation_index(inst).tolist() == [0, 0, 1, 0, 1, 2]
    assert augmentation_index(np.repeat(np.arange(3), 4)).tolist() == [0, 1, 2, 3] * 3


def test_unit_square_symmetries_are_nds_flips_and_keep_distances():
    inst, arrays, state = _search_state("cvrp", augment=8)
    feats = NDSFeatures.from_instances(inst, symmetry="unit_square")
    pos = inst.pos.float()
    flips = unit_square_symmetries(pos).view(8, len(inst), N + 1, 2)
    torch.testing.assert_close(flips[1, ..., 0], 1 - pos[..., 0])
    torch.testing.assert_close(flips[4], pos.flip(-1))
    assert bool(((flips >= 0) & (flips <= 1)).all())
    obs = observe(state, feats)
    d = torch.cdist(obs.pos.double(), obs.pos.double())
    want = torch.from_numpy(arrays.dist[state.inst])
    torch.testing.assert_close(d, want, rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="symmetry"):
        NDSFeatures.from_instances(inst, symmetry="rotate")


@pytest.mark.parametrize("problem,aware", [("vrptw", True), ("pcvrp", True), ("cvrp", False)])
def test_ipe_is_direction_aware_exactly_where_the_problem_is(problem, aware):
    inst, arrays, state = _search_state(problem, augment=2)
    ipe = encodings.node_transform("ipe", dim=8, attr_name=None)
    feats = NDSFeatures.from_instances(inst)
    code = ipe.code(observe(state, feats).encoding_inputs(None))
    again = ipe.code(observe(_reversed(state), feats).encoding_inputs(None))
    assert code.shape == (len(state) * (N + 1), 8)
    if aware:
        assert not torch.allclose(code, again, atol=1e-4)
    else:
        torch.testing.assert_close(code, again, rtol=0, atol=1e-5)


@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("options", [{"phase": "index"}, {"aggregation": "demand_mean"},
                                     {"aggregation": "median"}])
def test_the_ablation_variants_code_of_every_slot_equals_the_transform(problem, options):
    inst, arrays, state = _search_state(problem, augment=2)
    obs = observe(state, NDSFeatures.from_instances(inst))
    transform = encodings.node_transform("ipexpe", dim=8, num_bands=2, attr_name=None,
                                         **options)
    code = transform.code(obs.encoding_inputs(None)).view(len(state), N + 1, -1)
    routes = state.to_routes()
    assert torch.equal(obs.pos[0], inst.pos[0])
    for s in range(0, len(state), 2):            # the identity symmetry's slots
        data = RoutingData.from_routes(inst[int(state.inst[s])], routes[s])
        torch.testing.assert_close(code[s], transform.encode(data), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("pe", ["none", "ipexpe", "rpe"])
def test_policy_sets_pass_the_repair_and_keep_the_state_clean(problem, pe):
    inst, arrays, state = _search_state(problem, augment=2, seed=1)
    torch.manual_seed(0)
    destroy = PolicyDestroy(NDSPolicy.build(problem, pe=pe, pe_dim=8), inst, k=6)
    rng = np.random.default_rng(0)
    best = state.clone()
    for temperature in (0.0, 0.05):
        sets = destroy.propose(state, arrays, 5, rng)
        assert sets.dtype == np.int32 and sets.shape == (len(state), 5, 6)
        assert ((sets >= 1) & (sets <= N)).all()
        assert (np.diff(np.sort(sets, -1), axis=-1) > 0).all()
        apply_sets_sa(state, best, arrays, sets, temperature=temperature, rng=rng)
        state.check(arrays)
        best.check(arrays)
    assert destroy.policy.training                       # the mode is restored


def test_policy_destroy_is_seeded_by_the_rng_and_refuses_other_arrays():
    inst, arrays, state = _search_state("cvrp", augment=2)
    destroy = PolicyDestroy(NDSPolicy.build("cvrp"), inst, k=4)
    a = destroy.propose(state, arrays, 6, np.random.default_rng(5))
    b = destroy.propose(state, arrays, 6, np.random.default_rng(5))
    c = destroy.propose(state, arrays, 6, np.random.default_rng(6))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    other = ProblemArrays.from_instances(make_instances("cvrp", N, seed=9)[0])
    with pytest.raises(InvalidInstanceError, match="other instances"):
        destroy.propose(state, other, 6, np.random.default_rng(5))
    with pytest.raises(ValueError, match="built for 'cvrp'"):
        PolicyDestroy(NDSPolicy.build("cvrp"), make_instances("vrptw", N, 0)[0])
    with pytest.raises(ValueError, match="above the number of customers"):
        PolicyDestroy(NDSPolicy.build("cvrp"), inst, k=N + 1)


def test_policy_destroy_drives_the_augmented_annealing():
    inst, arrays = make_instances("vrptw", N, seed=2)
    destroy = PolicyDestroy(NDSPolicy.build("vrptw", pe="ipexpe", pe_dim=8), inst, k=5)
    search = DestroyRepairSearch(augment=8, rollouts=4)
    result = search.run(inst, destroy, MaxIterations(2), seed=0, arrays=arrays)
    assert result.iterations == 2 and (result.cost <= result.initial_cost + 1e-9).all()
    for b, routes in enumerate(result.routes):
        RoutingData.from_routes(inst[b], routes).check()
    # the policy itself in the destroy slot: wrapped in PolicyDestroy(k=search.remove)
    direct = DestroyRepairSearch(augment=8, rollouts=4, remove=5).run(
        inst, destroy.policy, MaxIterations(2), seed=0, arrays=arrays)
    assert direct.routes == result.routes and torch.equal(direct.cost, result.cost)


@pytest.mark.parametrize("problem", PROBLEMS)
def test_policy_destroy_under_cpu_autocast_and_an_outer_autocast(problem):
    """The CUDA path's autocast, on the CPU (bf16), also inside an outer autocast such
    as Lightning's: the observation stays float32 and the sets are valid."""
    inst, arrays, state = _search_state(problem, augment=8)
    policy = NDSPolicy.build(problem, pe="ipexpe", pe_dim=8)
    with torch.autocast("cpu", dtype=torch.bfloat16):      # built inside, as in training
        destroy = PolicyDestroy(policy, inst, k=5, autocast=True)
        assert destroy.observe(state).pos.dtype == torch.float32
        sets = destroy.propose(state, arrays, 6, np.random.default_rng(0))
    assert sets.shape == (len(state), 6, 5)
    apply_sets_sa(state, state.clone(), arrays, sets, temperature=0.01, rng=0)
    state.check(arrays)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("problem", PROBLEMS)
def test_policy_destroy_on_cuda_under_autocast(problem):
    inst, arrays, state = _search_state(problem, augment=8)
    destroy = PolicyDestroy(NDSPolicy.build(problem, pe="ipexpe").cuda(), inst, k=10)
    assert destroy.autocast
    sets = destroy.propose(state, arrays, 16, np.random.default_rng(0))
    assert sets.shape == (len(state), 16, 10)
    apply_sets_sa(state, state.clone(), arrays, sets, temperature=0.01, rng=0)
    state.check(arrays)
