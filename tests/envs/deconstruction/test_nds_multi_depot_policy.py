"""NDS's learned destroy on several depots: the observation in the kernel order, the
encoder and decoder over K depot rows, PolicyDestroy and the search; one depot as
before, bit for bit."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from pyg_routing import encodings
from pyg_routing.data import RoutingData, make_generator
from pyg_routing.envs.deconstruction import (
    DeconstructionEnv,
    NDSFeatures,
    PolicyDestroy,
    ProblemArrays,
    apply_sets_sa,
    observe,
    start_solutions,
)
from pyg_routing.envs.deconstruction import depots as D
from pyg_routing.errors import InvalidInstanceError, UnsupportedProblemError
from pyg_routing.models import NDSDecoder, NDSEncoder, NDSPolicy
from pyg_routing.models.nds import decoder as decoder_module
from pyg_routing.models.nds.encoder import MessagePassingLayer, TourLayer
from pyg_routing.search import DestroyRepairSearch, MaxIterations

N, AUGMENT = 12, 2
REFERENCES = ("first", "route", "route_code")
_CACHE: dict = {}


def _setup(depots: int, costs: bool = False):
    """Three ``depots``-depot CVRP-12 instances (with an asymmetric explicit matrix when
    ``costs``), their arrays and NDS's start solutions on ``AUGMENT`` slots each."""
    key = (depots, costs)
    if key not in _CACHE:
        inst = make_generator("cvrp", N, seed=0, depots=depots).sample(3)
        if costs:
            g = torch.Generator().manual_seed(0)
            pos = inst.pos.double()
            noise = 1 + torch.rand(len(inst), inst.num_nodes, inst.num_nodes, generator=g,
                                   dtype=torch.float64)
            inst = dataclasses.replace(inst, cost_matrix=(torch.cdist(pos, pos) * noise).float())
        arrays = ProblemArrays.from_instances(inst)
        slots = np.repeat(np.arange(len(inst), dtype=np.int32), AUGMENT)
        _CACHE[key] = inst, arrays, start_solutions(arrays, slots, rng=0)
    inst, arrays, state = _CACHE[key]
    return inst, arrays, state.clone()


def _data_solution(inst, state, s: int) -> RoutingData:
    """Slot ``s``'s solution built in the data layer (the instances' node ids)."""
    routes = D.to_data_routes(state.to_routes(), inst.num_depots)[s]
    return RoutingData.from_routes(inst[int(state.inst[s])], routes,
                                   depots=state.route_depots()[s])


def _order(inst) -> torch.Tensor:
    return torch.from_numpy(D.kernel_order(inst.num_depots, inst.num_nodes))


def _policy(pe: str = "ipexpe", seed: int = 0, **kwargs) -> NDSPolicy:
    torch.manual_seed(seed)
    return NDSPolicy.build("cvrp", pe=pe, dim=32, heads=4, pe_dim=8, **kwargs)


# ---------------------------------------------------------------------- (a) observation
@pytest.mark.parametrize("depots,costs", [(2, False), (3, False), (2, True)])
def test_the_observation_is_the_data_layers_solution_in_the_kernel_order(depots, costs):
    inst, arrays, state = _setup(depots, costs)
    obs = observe(state, NDSFeatures.from_instances(inst))
    order, m, k = _order(inst), N + depots, depots
    assert obs.x.shape == (len(state), m, 3) and obs.num_depots == k
    for s in range(0, len(state), AUGMENT):                     # the identity symmetry
        b = int(state.inst[s])
        data = _data_solution(inst, state, s)
        assert torch.equal(obs.pos[s], inst.pos[b, order].float())
        ratio = (inst.demand[b] / inst.capacity[b]).float()[order]
        torch.testing.assert_close(obs.x[s, 1:N + 1, 2], ratio[1:N + 1])
        assert not obs.x[s, 0, 2:].any() and not obs.x[s, N + 1:, 2:].any()   # depots: xy
        rid = obs.route_id[s]
        offset = int(rid[rid >= 0].min())
        assert torch.equal(obs.route_pos[s], data.route_pos[order])
        assert torch.equal(torch.where(rid >= 0, rid - offset, -1), data.route_id[order])
        for name in ("cum_dist", "route_length", "depot_angle"):
            torch.testing.assert_close(getattr(obs, name)[s], getattr(data, name)[order],
                                       rtol=1e-5, atol=1e-5)
    # NDS's neighbours: the tour's own depot node where the state holds its sentinel 0
    home = D.depot_node(state.depot[np.arange(len(state))[:, None], state.tour[:, 1:]], N)
    pred, succ = state.pred[:, 1:], state.succ[:, 1:]
    assert np.array_equal(obs.pred.numpy(), np.where(pred == 0, home, pred))
    assert np.array_equal(obs.succ.numpy(), np.where(succ == 0, home, succ))
    assert (obs.pred.numpy() > N).any()                 # some route leaves another depot


@pytest.mark.parametrize("depots", [2, 3])
@pytest.mark.parametrize("reference", REFERENCES)
def test_ipe_xpe_codes_equal_the_data_layers_under_every_reference(depots, reference):
    inst, arrays, state = _setup(depots)
    obs = observe(state, NDSFeatures.from_instances(inst))
    t = encodings.node_transform("ipexpe", dim=8, num_bands=2, attr_name=None,
                                 reference=reference)
    code = t.code(obs.encoding_inputs(None)).view(len(state), N + depots, -1)
    first = encodings.node_transform("ipexpe", dim=8, num_bands=2, attr_name=None)
    about_0 = first.code(obs.encoding_inputs(None)).view(len(state), N + depots, -1)
    for s in range(0, len(state), AUGMENT):
        want = t.encode(_data_solution(inst, state, s))[_order(inst)]
        torch.testing.assert_close(code[s], want, rtol=1e-5, atol=1e-5)
    if reference != "first":            # the references reach XPE: a route of depot >= 1
        assert not torch.allclose(code[..., 8:8 + 4], about_0[..., 8:8 + 4])


def test_the_graph_encodings_refuse_several_depots_by_name():
    inst, arrays, state = _setup(2)
    inputs = observe(state, NDSFeatures.from_instances(inst)).encoding_inputs(None)
    with pytest.raises(UnsupportedProblemError, match="several depots"):
        inputs.route_graph()


# ---------------------------------------------------------------------- (b) batch = one by one
def _slot(obs, s: int) -> SimpleNamespace:
    """Slot ``s`` of ``obs`` as an observation of its own (its prepared node code)."""
    keys = ("x", "pred", "succ", "tour", "route_pos", "route_id", "pe")
    return SimpleNamespace(num_depots=obs.num_depots, **{
        k: None if getattr(obs, k) is None else getattr(obs, k)[s:s + 1] for k in keys})


def _slot_draws(rollouts: int, seed: int):
    """The decoder's uniforms from a fixed generator, the same for every slot: step
    ``t`` of a slot's rollouts draws the same numbers in a batch and alone."""
    gen = torch.Generator().manual_seed(seed)

    def draw(rows: int, generator=None, device=None) -> torch.Tensor:
        u = torch.rand(rollouts, 1, generator=gen, dtype=torch.float64)
        return u.repeat(rows // rollouts, 1).to(device)
    return draw


@pytest.mark.parametrize("pe", ["none", "ipexpe", "rpe", "ape"])
def test_a_batch_of_slots_equals_its_slots_one_by_one(pe, monkeypatch):
    inst, arrays, state = _setup(3)
    features = NDSFeatures.from_instances(inst)
    policy = _policy(pe, reference="route_code") if pe == "ipexpe" else _policy(pe)
    obs = policy.prepare(observe(state, features))
    z = torch.from_numpy(np.random.default_rng(0).integers(0, 2, (len(state), 4, 10))).float()
    with torch.no_grad():
        h = policy.embed(obs)
        monkeypatch.setattr(decoder_module, "uniforms", _slot_draws(4, 3))
        sel, log_prob, _ = policy(obs, 4, 5, z=z)
        for s in range(len(state)):
            alone = _slot(obs, s)
            torch.testing.assert_close(policy.embed(alone)[0], h[s], rtol=1e-4, atol=1e-4)
            monkeypatch.setattr(decoder_module, "uniforms", _slot_draws(4, 3))
            picks, one, _ = policy(alone, 4, 5, z=z[s:s + 1])
            assert torch.equal(picks[0], sel[s])
            torch.testing.assert_close(one[0], log_prob[s], rtol=0, atol=1e-4)
    # the observation of one slot alone (the identity slots keep their symmetry)
    for s in range(0, len(state), AUGMENT):
        one = observe(state.take([s]), features)
        for name in ("x", "pred", "succ", "route_pos", "cum_dist", "route_length"):
            assert torch.equal(getattr(one, name)[0], getattr(obs, name)[s]), name


# ---------------------------------------------------------------------- (c) never a depot
@pytest.mark.parametrize("depots", [2, 3])
def test_the_decoder_never_picks_a_depot_row(depots):
    inst, arrays, state = _setup(depots)
    policy = _policy()
    obs = observe(state, NDSFeatures.from_instances(inst))
    hot = 50.0                          # near-uniform: an unmasked depot would be drawn
    with torch.no_grad():               # the search's fused tail
        sel, log_prob, _ = policy(obs, 1024, 6, generator=torch.Generator().manual_seed(0),
                                  temperature=hot)
    assert bool(((sel >= 1) & (sel <= N)).all()) and bool(torch.isfinite(log_prob).all())
    assert len(torch.unique(sel)) == N                 # and every customer can be drawn
    sel, log_prob, _ = policy(obs, 64, 6, generator=torch.Generator().manual_seed(1),
                              temperature=hot)         # training's path (with gradient)
    assert bool(((sel >= 1) & (sel <= N)).all()) and bool(torch.isfinite(log_prob).all())
    every, _, _ = policy(obs, 3, N, generator=torch.Generator().manual_seed(2))
    assert torch.equal(every.sort(-1).values, torch.arange(1, N + 1).expand_as(every))
    with pytest.raises(ValueError, match="k must be"):
        policy(obs, 3, N + 1)


def test_the_decoder_masks_the_depot_rows_it_is_told_of():
    dec = NDSDecoder(dim=16, heads=2)
    enc = torch.randn(2, 9, 16)
    z = torch.zeros(2, 256, 10)
    sel, _ = dec(enc, z, torch.zeros(16), 5, torch.Generator().manual_seed(0),
                 temperature=50.0, num_depots=3)
    assert bool(((sel >= 1) & (sel <= 6)).all())
    with pytest.raises(ValueError, match="customers 1..6"):
        dec(enc, z[:, :1], torch.zeros(16), selected=torch.full((2, 1, 1), 7), num_depots=3)
    with pytest.raises(ValueError, match="num_depots"):
        dec(enc, z, torch.zeros(16), 2, num_depots=9)


def test_the_encoder_embeds_every_depot_row_as_a_depot():
    inst, arrays, state = _setup(3)
    obs = observe(state, NDSFeatures.from_instances(inst))
    torch.manual_seed(0)
    # no layers: the encoder's output is its embedding of every row
    enc = NDSEncoder(dim=16, heads=2, encoder_layer_num=0, encoder_layer_num_2=0,
                     tour_layer=False, message_passing_layer_num=0)
    with torch.no_grad():
        h = enc(obs.x, obs.pred, obs.succ, obs.tour, num_depots=3)
        depot_rows = torch.cat([obs.x[:, :1, :2], obs.x[:, N + 1:, :2]], dim=1)
        torch.testing.assert_close(torch.cat([h[:, :1], h[:, N + 1:]], dim=1),
                                   enc.embedding_depot(depot_rows))
        torch.testing.assert_close(h[:, 1:N + 1], enc.embedding_node(obs.x[:, 1:N + 1]))
    with pytest.raises(ValueError, match=r"N = M - K"):
        enc(obs.x, obs.pred, obs.succ, obs.tour)              # K = 1 by default


def test_the_solution_layers_keep_the_depot_rows_and_read_the_tours_depot():
    torch.manual_seed(0)
    b, k, d = 2, 3, 16
    h = torch.randn(b, N + k, d)
    tour = torch.arange(N).repeat(b, 1) % 4
    pred = torch.arange(N).repeat(b, 1)                       # customer c after c - 1,
    pred[:, 0] = N + 1                                        # the first after depot 1
    succ = torch.arange(2, N + 2).repeat(b, 1)
    succ[:, -1] = 0                                           # the last back to depot 0
    with torch.no_grad():
        for layer, args in ((TourLayer(d), (tour,)), (MessagePassingLayer(d), (pred, succ))):
            out = layer(h, *args)
            assert torch.equal(out[:, 0], h[:, 0]) and torch.equal(out[:, N + 1:], h[:, N + 1:])
        mp = MessagePassingLayer(d)
        out = mp(h, pred, succ)
        unused, used = h.clone(), h.clone()
        unused[:, N + 2] += 1.0                               # depot 2: nobody's neighbour
        used[:, N + 1] += 1.0                                 # depot 1: customer 1's
        assert torch.equal(mp(unused, pred, succ)[:, 1:N + 1], out[:, 1:N + 1])
        assert not torch.allclose(mp(used, pred, succ)[:, 1:N + 1], out[:, 1:N + 1])


# ---------------------------------------------------------------------- (d) destroy, search
@pytest.mark.parametrize("depots", [2, 3])
@pytest.mark.parametrize("encoder", ["native", "gps"])
def test_policy_destroy_proposes_valid_sets_the_repair_takes(depots, encoder):
    inst, arrays, state = _setup(depots)
    policy = _policy(encoder=encoder, reference="route")
    destroy = PolicyDestroy(policy, inst, k=5)
    rng = np.random.default_rng(0)
    for _ in range(2):
        sets = destroy.propose(state, arrays, 6, rng)
        assert sets.dtype == np.int32 and sets.shape == (len(state), 6, 5)
        assert ((sets >= 1) & (sets <= N)).all()
        assert (np.diff(np.sort(sets, -1), axis=-1) > 0).all()
        apply_sets_sa(state, state.clone(), arrays, sets, temperature=0.01, rng=rng)
        state.check(arrays)
    if encoder == "gps":                             # the depot channel marks all K
        x = policy.encoder.dense_inputs(destroy.observe(state))["x"]
        mark = torch.zeros(N + depots, dtype=torch.bool)
        mark[0] = True
        mark[N + 1:] = True
        assert torch.equal(x[..., -1].bool(), mark.expand(len(state), -1))


def test_policy_destroy_refuses_arrays_of_another_depot_count():
    inst, arrays, state = _setup(2)
    destroy = PolicyDestroy(_policy(), inst, k=4)
    other = ProblemArrays.from_instances(make_generator("cvrp", N, seed=0).sample(3))
    with pytest.raises(InvalidInstanceError, match="depot"):
        destroy.propose(state, other, 3, np.random.default_rng(0))
    moved = ProblemArrays.from_instances(make_generator("cvrp", N, seed=5, depots=2).sample(3))
    with pytest.raises(InvalidInstanceError, match="other instances"):
        destroy.propose(state, moved, 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="above the number of customers 12"):
        PolicyDestroy(_policy(), inst, k=N + 1)


@pytest.mark.parametrize("depots", [2, 3])
def test_the_search_runs_with_a_learned_destroy_on_several_depots(depots):
    inst, arrays, _ = _setup(depots)
    destroy = PolicyDestroy(_policy(reference="route_code"), inst, k=4)
    result = DestroyRepairSearch(augment=AUGMENT, rollouts=3, remove=4).run(
        inst, destroy, MaxIterations(3), seed=0, arrays=arrays)
    assert result.iterations == 3
    assert bool(torch.isfinite(result.cost).all())
    assert bool((result.cost <= result.initial_cost + 1e-9).all())


def test_a_training_step_reaches_every_part_on_several_depots():
    """training/nds.py's step: the environment's rounds, the policy's sets, one
    encoder pass scored again, the gradient."""
    inst = make_generator("cvrp", N, seed=1, depots=2).sample(2)
    env, rng = DeconstructionEnv(), np.random.default_rng(0)
    work = env.reset(inst, rng=rng)
    policy = _policy()
    destroy = PolicyDestroy(policy, inst, k=4)
    env.warm_up(work, destroy, 1, 4, rng)
    obs = destroy.observe(work.state)
    assert torch.equal(obs.pred, env.observe(work).pred) and obs.num_depots == 2
    policy.train()
    sel, sampled, z = policy(obs, 4, 5, generator=torch.Generator().manual_seed(4))
    res = env.improve(work, sel.numpy(), rng)
    assert np.isfinite(res.reward).all()
    h = policy.embed(obs)                               # training's one encoder pass
    _, log_prob, _ = policy.decode(h, 4, selected=sel, z=z, num_depots=obs.num_depots)
    torch.testing.assert_close(log_prob, sampled, rtol=0, atol=1e-5)
    (-log_prob.mean()).backward()
    for p in (policy.encoder.embedding_depot.weight, policy.encoder.embedding_node.weight,
              policy.decoder.Wk.weight, policy.start_last_node):
        assert p.grad is not None and bool(torch.isfinite(p.grad).all())
        assert float(p.grad.abs().sum()) > 0


# ---------------------------------------------------------------------- (e) one depot
def _nds_forward(enc, x, pred, succ, tour, pe):
    """NDS's single-depot encoder as it was written before several depots (depot row
    0, customers ``1:``), from ``enc``'s own layers: the reference of bit identity."""
    code = enc.positional.node_code(pe, None)
    depot, cust = x[:, :1, :2], x[:, 1:]
    if code is not None:
        depot = torch.cat([depot, code[:, :1].to(x.dtype)], dim=-1)
        cust = torch.cat([cust, code[:, 1:].to(x.dtype)], dim=-1)
    h = torch.cat([enc.embedding_depot(depot), enc.embedding_node(cust)], dim=1)
    for layer in enc.layers:
        h = layer(h)
    b, m, d = h.shape
    tl, c = enc.tour_layer, h[:, 1:]
    idx = torch.where(tour < 0, m - 1, tour).unsqueeze(-1).expand(b, m - 1, d)
    sums = c.new_zeros(b, m, d).scatter_add_(1, idx, c)
    sums = torch.cat([sums[:, :m - 1], sums.new_zeros(b, 1, d)], dim=1)
    mixed = F.relu(tl.tour_combiner(torch.cat([c, sums.gather(1, idx)], dim=-1)))
    h = torch.cat([h[:, :1], tl.add_and_normalize(c, tl.feedforward_layer(mixed))], dim=1)
    for mp in enc.mp_layers:
        left = h.gather(1, pred.unsqueeze(-1).expand(b, m - 1, d))
        right = h.gather(1, succ.unsqueeze(-1).expand(b, m - 1, d))
        msg = mp.neighbour_projector(left) + mp.neighbour_projector(right)
        c = h[:, 1:]
        mixed = F.relu(mp.neighbour_combiner(torch.cat([c, msg], dim=-1)))
        h = torch.cat([h[:, :1], mp.add_and_normalize(c, mp.feedforward_layer(mixed))], dim=1)
    for layer in enc.layers_2:
        h = layer(h)
    return h


@pytest.mark.parametrize("pe", ["none", "ipexpe"])
def test_one_depot_goes_through_the_same_code_bit_for_bit(pe):
    inst = make_generator("cvrp", N, seed=0, depots=1).sample(3)
    arrays = ProblemArrays.from_instances(inst)
    state = start_solutions(arrays, np.repeat(np.arange(3, dtype=np.int32), AUGMENT), rng=0)
    obs = observe(state, NDSFeatures.from_instances(inst))
    assert obs.num_depots == 1
    assert torch.equal(obs.pred, torch.from_numpy(state.pred[:, 1:]).long())   # NDS's 0
    assert torch.equal(obs.succ, torch.from_numpy(state.succ[:, 1:]).long())
    # NDS's route arcs: every route leaves node 0 of its slot
    s, m = len(state), N + 1
    base = (torch.arange(s) * m).unsqueeze(1)
    cust, pred = torch.arange(1, m), torch.from_numpy(state.pred[:, 1:]).long()
    opens = pred == 0
    want = torch.stack([torch.cat([base.expand(s, N)[opens], (base + cust).reshape(-1)]),
                        torch.cat([(base + cust)[opens],
                                   (base + torch.from_numpy(state.succ[:, 1:])).reshape(-1)])])
    assert torch.equal(obs.edge_index, want)
    # the three XPE references are the paper's one code
    codes = [encodings.node_transform("ipexpe", dim=8, num_bands=2, attr_name=None,
                                      reference=r).code(obs.encoding_inputs(None))
             for r in REFERENCES]
    assert torch.equal(codes[0], codes[1]) and torch.equal(codes[0], codes[2][:, :-4])
    assert not codes[2][:, -4:].any()
    policy = _policy(pe)
    obs = policy.prepare(obs)
    with torch.no_grad():
        got = policy.embed(obs)
        want = _nds_forward(policy.encoder, obs.x, obs.pred, obs.succ, obs.tour, obs.pe)
    assert torch.equal(got, want)
