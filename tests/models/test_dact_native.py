"""DACT's own network (``DACTPolicy.build(encoder="native")``): VRP-DACT's sizes, where
each encoding enters the dual-aspect encoder, the move parametrisation of its decoder,
batch equals one by one, and searches that stay feasible."""

import pytest
import torch

from pyg_routing import encodings
from pyg_routing.data import RoutingData
from pyg_routing.data.generators import make_generator
from pyg_routing.envs import TwoOptEnv
from pyg_routing.envs.observation import tour_encoding_inputs
from pyg_routing.functional.index_pe import dact_cpe
from pyg_routing.models import DACTPolicy
from pyg_routing.models.dact.dual_aspect import DualAspectEncoder
from pyg_routing.search import MaxIterations, StepSearch
from pyg_routing.training.dact_config import DACTConfig
from pyg_routing.transforms.dact_cpe import DACTCPE

ALL_PE = list(encodings.available())


def _state(problem="cvrp", n=10, b=3, steps=5, seed=0):
    env = TwoOptEnv(depot_rate=0.5 if problem in ("cvrp", "vrptw") else None)
    inst = make_generator(problem, n, seed=seed).sample(b)
    init = "nearest_neighbor" if problem == "vrptw" else "random"
    state = env.reset(inst, init=init, generator=torch.Generator().manual_seed(seed))
    gen = torch.Generator().manual_seed(seed + 1)
    for _ in range(steps):
        state, _ = env.step(state, env.random_action(state, generator=gen))
    return env, inst, state


def _count(module):
    return sum(p.numel() for p in module.parameters())


def test_as_released_sizes_are_vrp_dacts():
    """VRP-DACT's CVRP actor has 281,121 parameters and its critic 155,137 (width 64,
    4 heads, 3 layers, FF 64; critic 6 heads on the 128 concatenated aspects)."""
    policy = DACTPolicy.build("cvrp", pe="dact_cpe", dim=64, heads=4, pe_dim=64, scope="tour",
                              encoder="native")
    assert policy.encoder.pos_embed is None                     # the CPE enters as it is
    assert _count(policy) - _count(policy.critic) == 281_121
    assert _count(policy.critic) == 155_137
    tsp = DACTPolicy.build("tsp", pe="dact_cpe", pe_dim=64, encoder="native")
    assert _count(tsp) - _count(tsp.critic) == 281_121 - 5 * 64     # node_dim 2, not 7


@pytest.mark.parametrize("pe", ALL_PE)
def test_every_encoding_enters_the_positional_aspect_and_takes_valid_steps(pe):
    torch.manual_seed(0)
    policy = DACTPolicy.build("cvrp", pe=pe, dim=32, heads=4, num_layers=2, pe_dim=16,
                              encoder="native", critic_heads=4)
    enc = policy.encoder
    width = enc.positional.width
    assert (enc.pos_embed is None) == (width in (0, 32))
    base = DACTPolicy.build("cvrp", pe="none", dim=32, heads=4, num_layers=2, pe_dim=16,
                            encoder="native", critic_heads=4)
    extra = _count(policy) - _count(base)
    bias_tables = _count(enc.positional)
    assert extra == (width * 32 if enc.pos_embed is not None else 0) + bias_tables
    env, _, state = _state()
    obs = policy.prepare(env.policy_observation(state))
    b, m = state.order.shape
    g0 = enc.positional_input(obs.x, obs.pe, obs.route_pos)
    if enc.kind == "node":
        assert g0.abs().sum() > 0
    else:                                   # bias, rotary, none: no code in g
        assert torch.equal(g0, torch.zeros(b, m, 32))
    with torch.no_grad():
        action, log_prob, entropy, value = policy(obs, generator=torch.Generator().manual_seed(1))
    assert obs.mask[torch.arange(b), action[:, 0], action[:, 1]].all()
    assert torch.isfinite(log_prob).all() and torch.isfinite(value).all()
    assert value.shape == (b,)


def test_the_decoder_scores_move_i_j_as_dacts_pair_succ_i_j():
    torch.manual_seed(0)
    policy = DACTPolicy.build("cvrp", pe="dact_cpe", pe_dim=64, scope="tour", encoder="native")
    env, _, state = _state(steps=8)
    obs = policy.prepare(env.policy_observation(state))
    policy.eval()
    with torch.no_grad():
        hg = policy.embed(obs)
        pairs = policy.decoder.dact_logits(hg)
        moves = policy.decoder(hg, obs.mask, obs.succ)
    b, m, _ = moves.shape
    for bb in range(b):
        for i in range(m):
            for j in range(m):
                want = pairs[bb, state.succ[bb, i], j] if obs.mask[bb, i, j] else float("-inf")
                assert moves[bb, i, j] == want
    with pytest.raises(ValueError, match="successors"):
        policy.decoder(hg, obs.mask, None)


def test_the_aggregation_mlp_written_for_the_compiler_equals_the_eager_one(monkeypatch):
    """``_mix_for_compiler`` (the form ``torch.compile`` gets in eval mode; run eagerly
    here) scores what ``mix`` scores; in training mode (dropout) the eager MLP runs."""
    torch.manual_seed(0)
    policy = DACTPolicy.build("cvrp", encoder="native", dim=16).eval()
    env, _, state = _state(steps=3)
    obs = policy.prepare(env.policy_observation(state))
    with torch.no_grad():
        hg = policy.embed(obs)
        want = policy.decoder.dact_logits(hg)
        monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
        torch.testing.assert_close(policy.decoder.dact_logits(hg), want)
        calls = []
        monkeypatch.setattr(type(policy.decoder), "_mix_for_compiler",
                            lambda self, pairs: calls.append(pairs))
        policy.decoder.train()
        policy.decoder.dact_logits(hg)
    assert calls == []


def test_batch_equals_one_by_one_in_eval_mode():
    torch.manual_seed(0)
    policy = DACTPolicy.build("cvrp", pe="ipexpe", encoder="native").eval()
    env, _, state = _state(b=4)
    obs = policy.prepare(env.policy_observation(state))
    with torch.no_grad():
        hg = policy.embed(obs)
        values = policy.critic(hg)
        logits = policy.decoder(hg, obs.mask, obs.succ)
        for i in range(4):
            one = policy.prepare(env.policy_observation(state[i]))
            h1 = policy.embed(one)
            torch.testing.assert_close(h1[0], hg[i], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(policy.critic(h1)[0], values[i], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(policy.decoder(h1, one.mask, one.succ)[0], logits[i],
                                       atol=1e-5, rtol=1e-5)


def test_dropout_only_in_training_mode():
    torch.manual_seed(0)
    policy = DACTPolicy.build("cvrp", pe="none", encoder="native")
    env, _, state = _state()
    obs = policy.prepare(env.policy_observation(state))
    policy.eval()
    with torch.no_grad():
        a, b = policy.value(obs), policy.value(obs)
    assert torch.equal(a, b)
    policy.train()
    with torch.no_grad():
        draws = torch.stack([policy.value(obs) for _ in range(8)])
    assert draws.std(0).max() > 0                 # DACT's MLPs drop out while training


def test_tour_scope_cpe_is_dacts_cycle_position_and_equals_route_scope_on_tsp():
    _, _, state = _state("cvrp")
    inputs = tour_encoding_inputs(state)
    b, m = state.order.shape
    code = DACTCPE(16, scope="tour", attr_name=None).code(inputs).view(b, m, -1)
    torch.testing.assert_close(code, dact_cpe(state.rank, torch.full_like(state.rank, m - 1),
                                              16, dtype=code.dtype))
    _, _, tsp = _state("tsp")
    inputs = tour_encoding_inputs(tsp)
    tour = DACTCPE(16, scope="tour", attr_name=None).code(inputs)
    route = DACTCPE(16, attr_name=None).code(inputs)
    torch.testing.assert_close(tour, route)
    paper = DACTCPE(8, variant="paper", scope="tour", attr_name=None).code(inputs)
    assert paper.shape == (tsp.order.numel(), 8)
    with pytest.raises(ValueError, match="scope"):
        DACTCPE(16, scope="giant")
    data = RoutingData.from_routes(make_generator("cvrp", 6, seed=0).sample(1)[0],
                                   [[1, 2, 3], [4, 5, 6]])
    with pytest.raises(Exception, match="one cycle of a search state"):
        DACTCPE(16, scope="tour").encode(data)


@pytest.mark.parametrize("problem", ["tsp", "cvrp", "vrptw", "pdtsp"])
def test_native_searches_stay_feasible(problem):
    torch.manual_seed(0)
    n = 10
    policy = DACTPolicy.build(problem, pe="ipexpe", dim=32, heads=4, num_layers=1,
                              encoder="native", critic_heads=4)
    inst = make_generator(problem, n, seed=3).sample(2)
    init = "nearest_neighbor" if problem in ("vrptw", "pdtsp") else "random"
    res = StepSearch(env=TwoOptEnv(), init=init, augment=2).run(inst, policy,
                                                                MaxIterations(6), seed=0)
    for b in range(2):
        data = RoutingData.from_routes(inst[b], res.routes[b])
        data.check()
        assert float(data.cost()) == pytest.approx(float(res.cost[b]), rel=1e-5)


def test_gps_only_options_are_refused_for_the_native_network():
    with pytest.raises(ValueError, match="'local_mp' is an option of the GPS network"):
        DACTPolicy.build("cvrp", encoder="native", local_mp="none")
    with pytest.raises(ValueError, match="'pe_init' is an option of the GPS network"):
        DACTPolicy.build("cvrp", encoder="native", pe_init="default")
    for name, value in (("pe_init", "default"), ("local_mp", "none")):
        with pytest.raises(ValueError, match=f"--model.{name} is an option of the gps encoder; "
                                             f"--model.encoder native has no such setting"):
            DACTConfig.create(encoder="native", **{name: value})
    with pytest.raises(ValueError, match="--encoding.cpe_scope must be one of route, tour"):
        DACTConfig.create(pe="dact_cpe", cpe_scope="ring")
    native, gps = DACTConfig(pe="dact_cpe"), DACTConfig.create(pe="dact_cpe", encoder="gps")
    assert (native.encoding.dim, native.encoding.cpe_scope, gps.encoding.dim,
            gps.encoding.cpe_scope) == (64, "tour", 32, "route")
    assert native.encoding_spec.options == {"scope": "tour"}
    # the scope is dact_cpe's alone: another encoding's spec does not carry it
    assert DACTConfig(pe="ipexpe").encoding_spec.options.get("scope") is None
    with pytest.raises(ValueError, match="in_channels=7"):
        DualAspectEncoder(7, dim=16, heads=2).forward_dense(torch.zeros(1, 4, 6))


def test_both_critics_read_the_solution_not_its_cost():
    """The state value depends on the embedded solution only: neither DACT's critic nor the
    GPS network's reads the current or best cost, whose raw scale made the GPS critic's
    advantage a constant bias while training was stuck (docs/experiments.md)."""
    torch.manual_seed(0)
    env, _, state = _state(b=3)
    for encoder in ("native", "gps"):
        policy = DACTPolicy.build("cvrp", pe="ipexpe", encoder=encoder).eval()
        obs = policy.prepare(env.policy_observation(state))
        with torch.no_grad():
            before = policy.value(obs)
            obs.extra.mul_(10.0).add_(3.0)          # other costs, the same routes
            torch.testing.assert_close(policy.value(obs), before, rtol=0, atol=0)


@pytest.mark.parametrize("per_slice", [1, 2])
def test_the_decoder_scores_in_slices_what_the_whole_batch_scores(monkeypatch, per_slice):
    """On slices of ``per_slice`` instances DACT's decoder gives the whole batch's
    scores (but for the last bit of the one-column output layer) and the same moves
    under one generator; with gradients (eval mode: no dropout) the same gradients."""
    from pyg_routing.models.dact import mhc

    torch.manual_seed(0)
    policy = DACTPolicy.build("cvrp", pe="ipexpe", encoder="native").eval()
    env, _, state = _state(steps=4)
    obs = policy.prepare(env.policy_observation(state))
    b, m = state.order.shape
    with torch.no_grad():
        hg = policy.embed(obs)
        whole = policy.decoder.dact_logits(hg)
        first = policy(obs, generator=torch.Generator().manual_seed(3))[0]
    hg = hg.clone().requires_grad_()
    want = torch.autograd.grad(policy.decoder.dact_logits(hg).square().sum(), hg)[0]
    hidden = policy.decoder.mix[0].out_features
    calls, search_calls = [], []
    real, real_search = policy.decoder._pair_logits, policy.decoder._search_pair_logits
    monkeypatch.setattr(mhc, "chunk_budget", lambda device: per_slice * m * m * hidden)
    monkeypatch.setattr(policy.decoder, "_pair_logits",
                        lambda refined: calls.append(refined.size(1)) or real(refined))
    monkeypatch.setattr(policy.decoder, "_search_pair_logits",
                        lambda refined, ws: search_calls.append(refined.size(1))
                        or real_search(refined, ws))
    with torch.no_grad():
        sliced = policy.decoder.dact_logits(hg)
        again = policy(obs, generator=torch.Generator().manual_seed(3))[0]
    assert search_calls[:b // per_slice] == [per_slice] * (b // per_slice) and not calls
    torch.testing.assert_close(sliced, whole, rtol=1e-6, atol=1e-6)
    assert torch.equal(again, first)
    calls.clear()
    policy.train()                       # no gradient, dropout on: the module's path
    with torch.no_grad():
        policy.decoder.dact_logits(hg)
    assert calls[:b // per_slice] == [per_slice] * (b // per_slice)
    policy.eval()
    calls.clear()
    monkeypatch.setattr(mhc, "keeps_activations", lambda saved, device, **kw: False)
    got = torch.autograd.grad(policy.decoder.dact_logits(hg).square().sum(), hg)[0]
    # checkpointed: each slice once forward, once again in the backward (last first)
    sizes = [per_slice] * (b // per_slice) + [b % per_slice] * (b % per_slice > 0)
    assert calls == sizes + sizes[::-1]
    calls.clear()
    monkeypatch.setattr(mhc, "keeps_activations", lambda saved, device, **kw: True)
    kept = torch.autograd.grad(policy.decoder.dact_logits(hg).square().sum(), hg)[0]
    assert calls == sizes and torch.equal(kept, got)      # kept: each slice once
    # the slices' products sum in another order (float32: seen 2.5e-6 off at 0.13 on
    # an AMD EPYC); a wrong slice would be off by the gradient's own size
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_checkpointed_slices_recompute_the_forwards_dropout_masks(monkeypatch):
    """In training mode (dropout 0.05) the backward of the checkpointed slices
    recomputes each slice with the dropout mask its forward drew: the gradient equals
    autograd's through the same slices computed directly from the same random state."""
    from pyg_routing.models.dact import mhc

    torch.manual_seed(0)
    policy = DACTPolicy.build("cvrp", pe="ipexpe", encoder="native").train()
    env, _, state = _state(steps=4)
    obs = policy.prepare(env.policy_observation(state))
    b, m = state.order.shape
    hg = policy.embed(obs).detach().requires_grad_()
    monkeypatch.setattr(mhc, "chunk_budget",
                        lambda device: m * m * policy.decoder.mix[0].out_features)
    monkeypatch.setattr(mhc, "keeps_activations", lambda saved, device, **kw: False)
    torch.manual_seed(7)
    got = torch.autograd.grad(policy.decoder.dact_logits(hg).square().sum(), hg)[0]
    dec = policy.decoder
    torch.manual_seed(7)
    x = torch.stack(hg.split(dec.dim, -1))
    refined = torch.stack([dec.project_node[a](x[a])
                           + dec.project_graph[a](x[a].amax(1)).unsqueeze(1) for a in range(2)])
    direct = torch.cat([dec._pair_logits(refined[:, i:i + 1]) for i in range(b)])
    want = torch.autograd.grad(direct.square().sum(), hg)[0]
    assert torch.equal(got, want)
    torch.manual_seed(8)
    other = torch.autograd.grad(policy.decoder.dact_logits(hg).square().sum(), hg)[0]
    assert not torch.equal(other, got)            # the masks are random, and they matter


def test_kept_slices_train_as_the_checkpointed_ones(monkeypatch):
    """Slices whose activations fit the budget are kept for the backward, not
    checkpointed: in training mode (dropout) the same gradients of the whole policy,
    bit for bit, and the global random state left where checkpointing leaves it."""
    from pyg_routing.models.dact import mhc

    torch.manual_seed(0)
    policy = DACTPolicy.build("cvrp", pe="ipexpe", encoder="native").train()
    env, _, state = _state(steps=4)
    obs = policy.prepare(env.policy_observation(state))
    m = state.order.shape[1]
    monkeypatch.setattr(mhc, "chunk_budget",
                        lambda device: 2 * m * m * policy.decoder.mix[0].out_features)
    runs = {}
    for kept in (False, True):
        monkeypatch.setattr(mhc, "keeps_activations", lambda saved, device, k=kept, **kw: k)
        policy.zero_grad(set_to_none=True)
        torch.manual_seed(5)
        _, log_prob, entropy, value = policy(obs, generator=torch.Generator().manual_seed(1))
        (log_prob.mean() + entropy.mean() + value.square().mean()).backward()
        runs[kept] = ([p.grad.clone() for p in policy.parameters()], torch.rand(3))
    (grads, after), (kept_grads, kept_after) = runs[False], runs[True]
    assert all(torch.equal(a, b) for a, b in zip(grads, kept_grads))
    assert torch.equal(after, kept_after)


@pytest.mark.parametrize("instances", [1, 3])
def test_compatibilities_by_head_are_the_batched_product_bit_for_bit(instances):
    """The search's per-head products on the projections' own memory give ``q k^T``
    exactly as the product batched over the heads does (which copies both out first);
    queries of another layout take the batched product itself."""
    from pyg_routing.models.dact.mhc import _compat_by_head, per_head

    torch.manual_seed(0)
    dec = DACTPolicy.build("tsp", encoder="native").decoder
    refined = torch.randn(2, instances, 17, dec.dim)
    with torch.no_grad():                                 # the search's path
        q, k = per_head(refined, dec.query), per_head(refined, dec.key)   # [2, c, H, M, D]
        want = (q @ k.transpose(-1, -2)).permute(2, 0, 1, 3, 4)
        got = _compat_by_head(q, k)
        other = _compat_by_head(q.contiguous(), k.contiguous())
    assert q.transpose(2, 3).is_contiguous()             # the per-head products' case
    assert got.shape == (dec.heads, 2, instances, 17, 17) and torch.equal(got, want)
    assert torch.equal(other, want)


def test_the_decoder_keeps_activations_up_to_the_budget(monkeypatch):
    """The rule: five ``[B M², hidden]`` activations against 128 MB on the CPU (half the
    free memory the commands keep) and 1 GB on a GPU, or, for a pass that asks
    (``up_to_free``: DACT's decoder), a quarter of the memory free if that is more."""
    from pyg_routing.functional import chunks

    keeps = chunks.keeps_activations
    free = {"cpu": None, "cuda": 0}
    monkeypatch.setattr(chunks, "available_memory", lambda: free["cpu"])
    monkeypatch.setattr(chunks, "_free_cuda_bytes", lambda device: free["cuda"])
    dec = DACTPolicy.build("tsp", encoder="native").decoder
    hidden = dec.mix[0].out_features
    hg = torch.empty(64, 50, 128)                          # TSP-50, the CPU recipe's batch
    saved, big = dec._saved_bytes(hg), dec._saved_bytes(torch.empty(600, 50, 128))
    assert saved == 5 * 64 * 50 * 50 * hidden * 4         # big: the recipe's batch of 600
    # memory unknown (off Linux) or scarce, or a pass that keeps to the floors
    for cpu, up_to_free in ((None, True), (0, True), (4 * chunks.KEEP_BYTES, True),
                            (2**40, False)):
        free["cpu"] = cpu
        assert keeps(saved, "cpu", up_to_free=up_to_free)
        assert not keeps(big, "cpu", up_to_free=up_to_free)
        assert keeps(chunks.KEEP_BYTES, "cpu", up_to_free=up_to_free)
        assert not keeps(chunks.KEEP_BYTES + 1, "cpu", up_to_free=up_to_free)
    assert keeps(big, "cuda", up_to_free=True)
    assert not keeps(chunks.CUDA_KEEP_BYTES + 1, torch.device("cuda", 0), up_to_free=True)
    # with memory free: a quarter of it, for the passes that ask
    free["cpu"], free["cuda"] = 16 * 2**30, 40 * 2**30
    assert keeps(big, "cpu", up_to_free=True) and not keeps(big, "cpu")
    assert keeps(4 * 2**30, "cpu", up_to_free=True)
    assert not keeps(4 * 2**30 + 1, "cpu", up_to_free=True)
    assert keeps(10 * 2**30, "cuda", up_to_free=True)
    assert not keeps(10 * 2**30 + 1, torch.device("cuda", 0), up_to_free=True)
    assert not keeps(chunks.CUDA_KEEP_BYTES + 1, "cuda")


def test_the_decoder_asks_to_keep_up_to_the_free_memory(monkeypatch):
    """A batch whose slices save more than 128 MB: recomputed with no memory free,
    kept with plenty (the call's own budget, not a fixed one)."""
    from pyg_routing.functional import chunks
    from pyg_routing.models.dact import mhc

    dec = DACTPolicy.build("tsp", encoder="native").decoder.train()
    hg = torch.randn(200, 50, 128, requires_grad=True)     # 333 MB of pair activations
    assert dec._saved_bytes(hg) > chunks.KEEP_BYTES
    calls = []
    monkeypatch.setattr(mhc, "checkpoint", lambda fn, part, **kw: calls.append(1) or fn(part))
    for free, checkpoints in ((0, True), (2**40, False)):
        calls.clear()
        monkeypatch.setattr(chunks, "available_memory", lambda free=free: free)
        dec.dact_logits(hg)
        assert bool(calls) == checkpoints


def _explicit_dual_aspect(layer, h, g, bias):
    """DAC-Att with the attention weights written out (DACT's own form): the reference
    of the fused-kernel layer."""
    from pyg_routing.models.attention import instance_norm
    from pyg_routing.models.dact.dual_aspect import per_head

    b, m, _ = h.shape
    x = torch.stack([h, g])
    q, k = per_head(x, layer.query), per_head(x, layer.key)
    logits = q @ k.transpose(-1, -2) / q.size(-1) ** 0.5
    if bias is not None:
        logits = torch.stack([logits[0], logits[1] + bias])
    attn = torch.softmax(logits, -1)
    v = per_head(x, layer.value).view(2, b, 2, layer.heads, m, -1)
    heads = torch.cat([attn[0].unsqueeze(0) @ v[:, :, 0], attn[1].unsqueeze(0) @ v[:, :, 1]], -1)
    out = torch.einsum("abhme,ahef->abmf", heads, layer.out)
    h, g = instance_norm(h + out[0]), instance_norm(g + out[1])
    return instance_norm(h + layer.ff[0](h)), instance_norm(g + layer.ff[1](g))


@pytest.mark.parametrize("with_bias", [False, True])
def test_dual_aspect_attention_by_the_fused_kernel_equals_the_explicit_form(with_bias):
    from pyg_routing.models.dact.dual_aspect import DualAspectLayer

    torch.manual_seed(0)
    layer = DualAspectLayer(16, heads=4)
    h, g = torch.randn(3, 9, 16, requires_grad=True), torch.randn(3, 9, 16, requires_grad=True)
    bias = torch.randn(3, 4, 9, 9) if with_bias else None
    got = layer(h, g, bias)
    want = _explicit_dual_aspect(layer, h, g, bias)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    grads = torch.autograd.grad(sum(t.square().sum() for t in got), [h, g, layer.value])
    ref = torch.autograd.grad(sum(t.square().sum() for t in want), [h, g, layer.value])
    for a, b in zip(grads, ref):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("greedy", [False, True])
def test_the_decoder_selects_in_slices_the_whole_batch_moves(monkeypatch, greedy):
    """A search batch above one slice is scored, read and drawn from slice by slice:
    the moves of the whole batch under one generator, and the same errors."""
    from pyg_routing.models.dact import mhc

    torch.manual_seed(0)
    policy = DACTPolicy.build("cvrp", pe="ipexpe", encoder="native").eval()
    env, _, state = _state(b=5, steps=4)
    obs = policy.prepare(env.policy_observation(state))
    b, m = state.order.shape
    dec = policy.decoder
    with torch.no_grad():
        h = policy.embed(obs)
        whole = dec.select(h, obs.mask, greedy, torch.Generator().manual_seed(5), succ=obs.succ)
        # the aggregation MLP on one instance at a time, the read-out on four (8 floats
        # a move against the MLP's 32)
        monkeypatch.setattr(mhc, "chunk_budget",
                            lambda device: m * m * dec.mix[0].out_features)
        seen, real = [], dec._read_moves
        monkeypatch.setattr(dec, "_read_moves", lambda scores, *rest:
                            seen.append(scores.size(0)) or real(scores, *rest))
        sliced = dec.select(h, obs.mask, greedy, torch.Generator().manual_seed(5),
                            succ=obs.succ)
        assert seen == [4, 1] and torch.equal(sliced, whole)
        assert obs.mask[torch.arange(b), sliced[:, 0], sliced[:, 1]].all()
        with pytest.raises(ValueError, match="no allowed move"):
            dec.select(h, torch.zeros_like(obs.mask), greedy, succ=obs.succ)
        with pytest.raises(ValueError, match="reads the solutions' successors"):
            dec.select(h, obs.mask, greedy)
