"""N2S's policy: every encoding, the folded decoders against N2S's formulas written
plainly, allowed actions only, scoring a given action, batch equals one-by-one."""

import pytest
import torch
import torch.nn.functional as F

from pyg_routing import encodings
from pyg_routing.data import PDTSPGenerator
from pyg_routing.envs import PairReinsertionEnv, UnsupportedProblemError
from pyg_routing.models import N2SPolicy
from pyg_routing.models.n2s.synthesis_attention import SynthesisAttentionLayer

SMALL = dict(dim=16, heads=2, num_layers=2, pe_dim=8, num_bands=2)


def _setting(pe="ipexpe", n=10, b=5, steps=3, seed=0):
    torch.manual_seed(seed)
    policy = N2SPolicy.build("pdtsp", pe=pe, **SMALL).eval()
    env = PairReinsertionEnv()
    gen = torch.Generator().manual_seed(seed)
    state = env.reset(PDTSPGenerator(n, seed=seed).sample(b), "random", gen)
    for _ in range(steps):
        state, _ = env.step(state, env.random_action(state, generator=gen))
    return policy, env, state


@pytest.mark.parametrize("pe", list(encodings.available()))
def test_every_encoding_acts_and_rescores_its_action(pe):
    policy, env, state = _setting(pe)
    obs = env.policy_observation(state)
    with torch.no_grad():
        action, logp, ent, value = policy(obs, generator=torch.Generator().manual_seed(1))
        _, again, ent2, _ = policy(obs, action=action)
    assert torch.allclose(logp, again, atol=1e-5) and torch.allclose(ent, ent2)
    assert torch.isfinite(logp).all() and (logp <= 0).all() and value.shape == (len(state),)
    assert env.action_mask(state).gather(1, action[:, :1]).all()
    place = env.reinsertion_mask(state, action[:, 0]).flatten(1)
    m = state.num_nodes
    assert place.gather(1, (action[:, 1] * m + action[:, 2])[:, None]).all()


def test_parameter_counts_differ_only_by_the_positional_parts():
    def count(pe, part=None):
        torch.manual_seed(0)
        policy = N2SPolicy.build("pdtsp", pe=pe, **SMALL)
        module = policy if part is None else getattr(policy.encoder.positional, part)
        return sum(p.numel() for p in module.parameters())

    base = count("none")
    assert count("rope") == count("alibi") == base
    width = {"ipexpe": 8 + 4, "dact_cpe": 8, "ape": 8}
    for pe, w in width.items():
        table = count(pe, "ape") if pe == "ape" else 0      # APE's learnable table
        assert count(pe) == base + 2 * w * SMALL["dim"] + table
    assert count("rpe") > base and count("spd") > base


def test_synthesis_attention_without_positional_scores_equals_zero_scores():
    layer = SynthesisAttentionLayer(16, 2, 16)
    h = torch.randn(3, 7, 16)
    assert torch.allclose(layer(h, None), layer(h, torch.zeros(3, 2, 7, 7)), atol=1e-6)


def test_synthesis_attention_scores_equal_n2s_formula():
    # N2S written plainly: per pair, MLP over [A_node (H) ; A_pos (H)] channels, softmax
    torch.manual_seed(0)
    layer = SynthesisAttentionLayer(16, 2, 16)
    h, pos = torch.randn(3, 7, 16), torch.randn(3, 2, 7, 7)
    q, k, v = layer.qkv(h).view(3, 7, 3, 2, 8).permute(2, 0, 3, 1, 4)
    pairs = torch.cat([q @ k.transpose(-1, -2), pos], 1).permute(0, 2, 3, 1)   # [B, M, M, 2H]
    w1 = torch.cat([layer.mix_node.weight, layer.mix_pos.weight], 1)
    hidden = F.relu(pairs @ w1.t() + layer.mix_node.bias)
    expected = torch.softmax((hidden @ layer.mix_out.weight.t() + layer.mix_out.bias)
                             .permute(0, 3, 1, 2), -1)
    attn, values = layer.scores(h, pos, None)
    torch.testing.assert_close(attn, expected, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(values, v)
    # the split first layer and the in-place accumulation keep the formula's gradients
    w = torch.randn_like(attn)
    params = [layer.mix_node.weight, layer.mix_node.bias, layer.mix_pos.weight,
              layer.mix_out.weight, layer.mix_out.bias, layer.qkv.weight]
    got = torch.autograd.grad((attn * w).sum(), params, retain_graph=True)
    want = torch.autograd.grad((expected * w).sum(), params)
    for g, e in zip(got, want):
        torch.testing.assert_close(g, e, atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="positional scores of shape"):
        layer.scores(h, torch.zeros(3, 2, 6, 6), None)


def test_removal_decoder_equals_n2s_formula():
    policy, env, state = _setting("dact_cpe")
    obs = env.policy_observation(state)
    dec = policy.removal
    h = torch.randn(len(state), state.num_nodes, SMALL["dim"])
    got = dec(h, obs.succ, obs.history)
    b, m, _ = h.shape
    p = state.num_pairs
    pred = torch.argsort(obs.succ, 1)        # succ is a permutation: argsort inverts it
    post = obs.succ.gather(1, obs.succ)
    rows = torch.arange(b)[:, None]
    heads = []
    for k in range(dec.heads):
        q, key = h @ dec.query[k], h @ dec.key[k]
        s = ((q[rows, pred] * key).sum(-1) + (q * key[rows, post]).sum(-1)
             - (q[rows, pred] * key[rows, post]).sum(-1))
        heads.append(s)
    s = torch.stack(heads, -1)                                         # [B, M, H]
    feats = torch.cat([s[:, 1:p + 1], s[:, p + 1:], obs.history], -1)
    assert torch.allclose(got, dec.score(feats).squeeze(-1), atol=1e-4)


def test_reinsertion_decoder_equals_n2s_formula_on_every_allowed_place():
    policy, env, state = _setting("dact_cpe")
    dec = policy.reinsertion
    b, m, d = len(state), state.num_nodes, SMALL["dim"]
    h = torch.randn(b, m, d)
    pair = torch.randint(state.num_pairs, (b,), generator=torch.Generator().manual_seed(2))
    pickup, delivery = pair + 1, pair + 1 + state.num_pairs
    rows = torch.arange(b)
    place = env.reinsertion_mask(state, pair).flatten(1)
    first, second = place.nonzero(as_tuple=True)[1].view(b, -1).div(m, rounding_mode="floor"), \
        place.nonzero(as_tuple=True)[1].view(b, -1) % m
    got = dec(h, state.succ, pickup, delivery, first, second)

    def compat(kind, q, keys):                        # N2S's MultiHeadCompat, unscaled
        return torch.stack([((q @ dec.query[kind, k]).unsqueeze(1)
                             * (keys @ dec.key[kind, k])).sum(-1)
                            for k in range(dec.heads)], -1)            # [B, M, H]

    h_next = h[rows[:, None], state.succ]
    hp, hd = h[rows, pickup], h[rows, delivery]
    left = torch.cat([compat(0, hp, h), compat(1, hp, h_next)], -1)       # at i
    right = torch.cat([compat(0, hd, h), compat(1, hd, h_next)], -1)      # at j
    table = torch.cat([left[:, :, None].expand(b, m, m, -1),
                       right[:, None].expand(b, m, m, -1)], -1)          # [B, M, M, 16]
    z = F.relu(dec.first(table))
    want = dec.out(F.relu(dec.hidden(z))).squeeze(-1)[rows[:, None], first, second]
    assert torch.allclose(got, want, atol=1e-4)
    w = torch.randn_like(got)                      # gradients too (GatherSum, in-place ReLUs)
    params = list(dec.parameters())
    grads = torch.autograd.grad((got * w).sum(), params, retain_graph=True)
    for g, e in zip(grads, torch.autograd.grad((want * w).sum(), params)):
        torch.testing.assert_close(g, e, atol=1e-4, rtol=1e-3)


def test_batch_equals_one_by_one_and_batch_of_one_works():
    policy, env, state = _setting("ipexpe", b=4)
    obs = env.policy_observation(state)
    with torch.no_grad():
        action, logp, _, value = policy(obs, greedy=True)
        for i in range(len(state)):
            one = env.policy_observation(state[i])
            a1, lp1, _, v1 = policy(one, greedy=True)
            assert torch.equal(a1, action[i:i + 1])
            assert torch.allclose(lp1, logp[i:i + 1], atol=1e-5)
            assert torch.allclose(v1, value[i:i + 1], atol=1e-5)


def test_gradients_reach_the_encoding_and_both_decoders():
    policy, env, state = _setting("ipexpe")
    policy.train()
    obs = env.policy_observation(state)
    _, logp, _, value = policy(obs, generator=torch.Generator().manual_seed(0))
    (logp.sum() + value.sum()).backward()
    for name in ("encoder.pos_query.weight", "removal.query", "reinsertion.key",
                 "reinsertion.first.weight", "critic.value.0.weight"):
        grad = dict(policy.named_parameters())[name].grad
        assert grad is not None and grad.abs().sum() > 0, name


def test_build_refuses_other_problems():
    with pytest.raises(UnsupportedProblemError,
                       match="the pair_reinsertion environment supports pdtsp, not 'cvrp'"):
        N2SPolicy.build("cvrp")


def test_instance_norm_is_n2s_unbiased_normalisation_with_its_gradient():
    from pyg_routing.models.n2s.synthesis_attention import instance_norm

    x = torch.randn(3, 11, 16, dtype=torch.float64, requires_grad=True)
    mean, var = x.mean((1, 2), keepdim=True), x.var((1, 2), keepdim=True)   # unbiased, as N2S
    ref = (x - mean) / torch.sqrt(var + 1e-5)
    out = instance_norm(x)
    torch.testing.assert_close(out, ref)
    g = torch.randn_like(out)
    torch.testing.assert_close(torch.autograd.grad((out * g).sum(), x)[0],
                               torch.autograd.grad((ref * g).sum(), x)[0])


def _places_setting(dtype=torch.float64, b=7, m=6, k=9):
    gen = torch.Generator().manual_seed(0)
    left = torch.randn(b, m, 5, dtype=dtype, generator=gen, requires_grad=True)
    right = torch.randn(b, m, 5, dtype=dtype, generator=gen, requires_grad=True)
    first = torch.randint(m, (b, k), generator=gen)         # repeated rows included
    second = torch.randint(m, (b, k), generator=gen)
    weights = [torch.randn(*shape, dtype=dtype, generator=gen, requires_grad=True)
               for shape in ((4, 5), (4,), (1, 4), (1,))]
    return left, right, first, second, weights


def _places_by_autograd(left, right, first, second, w_h, b_h, w_o, b_o):
    rows = torch.arange(left.size(0)).unsqueeze(1)
    z = F.relu(left[rows, first] + right[rows, second])
    return F.linear(F.relu(F.linear(z, w_h, b_h)), w_o, b_o).squeeze(-1)


def _grads(fn, inputs, w):
    out = fn(*inputs)
    return out, torch.autograd.grad((out * w).sum(), [inputs[0], inputs[1], *inputs[4:]])


@pytest.mark.parametrize("budget", [1 << 20, 40])         # one slice; a slice per instance
def test_place_scores_equal_autograd_in_slices_with_their_gradient(monkeypatch, budget):
    """The reinsertion places' MLP (``PlaceScores``): the logits and every gradient of
    plain autograd, in one slice and in one slice per instance; gradcheck in both."""
    from pyg_routing.models.n2s import place_scores as module

    monkeypatch.setattr(module, "chunk_budget", lambda device: budget)
    left, right, first, second, weights = _places_setting()
    assert len(module.place_slices(left, first, 4)) == (1 if budget > 40 else 7)
    inputs = (left, right, first, second, *weights)
    w = torch.randn(first.shape, dtype=left.dtype, generator=torch.Generator().manual_seed(1))
    got, got_grads = _grads(module.PlaceScores.apply, inputs, w)
    want, want_grads = _grads(_places_by_autograd, inputs, w)
    torch.testing.assert_close(got, want)
    for g, e in zip(got_grads, want_grads):
        torch.testing.assert_close(g, e)
    with torch.no_grad():
        assert torch.equal(module.place_scores(*inputs), got)
    assert torch.autograd.gradcheck(
        lambda a, b, *ws: module.PlaceScores.apply(a, b, first, second, *ws),
        (left, right, *weights))


def test_kept_place_activations_give_the_recomputed_gradients_bit_for_bit(monkeypatch):
    """Within :func:`keeps_activations`'s budget ``PlaceScores`` keeps each slice's two
    activations for its backward instead of recomputing them: the same logits and
    gradients, bit for bit (float32, a slice per instance); these small shapes keep
    under the real rule."""
    from pyg_routing.models.n2s import place_scores as module

    monkeypatch.setattr(module, "chunk_budget", lambda device: 40)
    real_hidden, real_rule = module._hidden, module.keeps_activations
    calls = []
    monkeypatch.setattr(module, "_hidden", lambda *a: calls.append(1) or real_hidden(*a))
    left, right, first, second, weights = _places_setting(torch.float32)
    inputs = (left, right, first, second, *weights)
    w = torch.randn(first.shape, generator=torch.Generator().manual_seed(1))
    runs = {}
    for kept, rule in (("recomputed", lambda saved, device: False), ("kept", real_rule)):
        monkeypatch.setattr(module, "keeps_activations", rule)
        calls.clear()
        runs[kept] = _grads(module.PlaceScores.apply, inputs, w)
        assert len(calls) == (7 if kept == "kept" else 14)       # 7 slices, once or twice
    (out, grads), (kept_out, kept_grads) = runs["recomputed"], runs["kept"]
    assert torch.equal(kept_out, out)
    assert all(torch.equal(a, b) for a, b in zip(kept_grads, grads))


def test_the_elementwise_place_logits_for_the_compiler_equal_the_eager_ones(monkeypatch):
    """``place_scores(compiled=True)`` runs each slice through
    ``place_logits_elementwise`` (the form ``torch.compile`` gets; here run eagerly):
    the eager logits, in several slices."""
    from pyg_routing.models.n2s import place_scores as module

    monkeypatch.setattr(module, "compiled_function", lambda fn: fn)
    monkeypatch.setattr(module, "chunk_budget", lambda device: 2 * 9 * 4)   # 2 per slice
    left, right, first, second, weights = _places_setting()
    with torch.no_grad():
        want = module.place_scores(left, right, first, second, *weights)
        got = module.place_scores(left, right, first, second, *weights, compiled=True)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got, _places_by_autograd(left, right, first, second,
                                                        *weights).detach())


def test_place_scores_in_one_slice_give_autograds_weight_gradients_bit_for_bit():
    """One slice makes autograd's own products: the weight gradients are its bits
    (the sides' gradients sum repeated rows in another order: equal to rounding)."""
    from pyg_routing.models.n2s.place_scores import PlaceScores

    left, right, first, second, weights = _places_setting(torch.float32, b=3, m=30, k=200)
    inputs = (left, right, first, second, *weights)
    w = torch.randn(first.shape, generator=torch.Generator().manual_seed(1))
    got, got_grads = _grads(PlaceScores.apply, inputs, w)
    want, want_grads = _grads(_places_by_autograd, inputs, w)
    assert torch.equal(got, want)
    for g, e in zip(got_grads[2:], want_grads[2:]):
        assert torch.equal(g, e)
    for g, e in zip(got_grads[:2], want_grads[:2]):
        torch.testing.assert_close(g, e)


def test_place_scores_under_cpu_bf16_autocast_run_the_layers_in_bf16():
    """As the ``addmm`` autocast casts: the hidden and output layers in bf16, the
    gradients back in the parameters' dtypes, close to float32's."""
    from pyg_routing.models.n2s.place_scores import PlaceScores

    left, right, first, second, weights = _places_setting(torch.float32)
    inputs = (left, right, first, second, *weights)
    w = torch.randn(first.shape, generator=torch.Generator().manual_seed(1))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got, got_grads = _grads(PlaceScores.apply, inputs, w)
    want, want_grads = _grads(_places_by_autograd, inputs, w)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want, atol=0.1, rtol=0.05)
    for g, e in zip(got_grads, want_grads):
        assert g.dtype == torch.float32
        torch.testing.assert_close(g, e, atol=0.2, rtol=0.05)
