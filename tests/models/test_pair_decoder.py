import shutil

import pytest
import torch

from pyg_routing.models.dact.pair_decoder import PairDecoder, ValueHead


def test_masked_pairs_are_never_sampled_and_log_probs_match():
    torch.manual_seed(0)
    dec = PairDecoder(16, heads=4)
    h = torch.randn(5, 7, 16)
    mask = torch.rand(5, 7, 7) < 0.3
    mask[:, 0, 1] = True                                   # at least one move each
    for _ in range(20):
        action, logp, ent = dec.act(h, mask)
        assert mask[torch.arange(5), action[:, 0], action[:, 1]].all()
        assert torch.isfinite(logp).all() and (ent >= 0).all()
    # Scoring a given action returns the same log-probability as sampling it.
    _, logp2, _ = dec.act(h, mask, action=action)
    torch.testing.assert_close(logp, logp2)
    greedy, _, _ = dec.act(h, mask, greedy=True)
    logits = dec(h, mask).flatten(1)
    assert torch.equal(greedy[:, 0] * 7 + greedy[:, 1], logits.argmax(-1))
    assert logits.max() <= dec.clip


def test_no_allowed_move_is_a_clear_error():
    dec = PairDecoder(8, heads=2)
    mask = torch.zeros(2, 3, 3, dtype=torch.bool)
    mask[0, 0, 1] = True
    with pytest.raises(ValueError, match=r"no allowed move for instance\(s\) \[1\]"):
        dec.act(torch.randn(2, 3, 8), mask)


def test_value_head_ignores_padding_and_has_gradients():
    torch.manual_seed(0)
    head = ValueHead(8, extra=2)
    h = torch.randn(3, 5, 8)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1, 3:] = False
    v = head(h, mask, torch.randn(3, 2))
    padded = h.clone()
    padded[1, 3:] = 1e3                                    # garbage in padding slots
    torch.testing.assert_close(head(padded, mask, torch.zeros(3, 2))[1],
                               head(h, mask, torch.zeros(3, 2))[1])
    v.sum().backward()
    assert head.mlp[0].weight.grad.abs().sum() > 0


def test_sample_categorical_follows_the_distribution_and_skips_zeros():
    from pyg_routing.models.sampling import sample_categorical

    probs = torch.tensor([[0.0, 0.2, 0.0, 0.5, 0.3, 0.0]]).repeat(40_000, 1)
    idx = sample_categorical(probs, torch.Generator().manual_seed(0))
    freq = torch.bincount(idx, minlength=6).double() / len(idx)
    assert freq[[0, 2, 5]].sum() == 0                    # zero-probability moves never drawn
    torch.testing.assert_close(freq, probs[0].double(), atol=0.01, rtol=0)
    # unnormalized rows and one-hot rows
    assert sample_categorical(torch.tensor([[0.0, 0.0, 3.0], [5.0, 0.0, 0.0]])).tolist() == [2, 0]


def _compat_and_weights(seed: int = 0, b: int = 3, h: int = 4, m: int = 6):
    torch.manual_seed(seed)
    dec = PairDecoder(8 * h, heads=h)
    compat = torch.randn(b, h, m, m)
    first, last = dec.mix[0], dec.mix[2]
    return dec, compat, (first.weight, first.bias, last.weight, last.bias)


def test_pair_scores_are_clip_tanh_of_the_mix_mlp_per_pair():
    from pyg_routing.models.dact.pair_scores import pair_scores, pair_scores_elementwise

    dec, compat, w = _compat_and_weights()
    with torch.no_grad():
        ref = dec.clip * torch.tanh(dec.mix(compat.permute(0, 2, 3, 1)).squeeze(-1))
        # one pair by hand: w2 . relu(w1 c + b1) + b2 for c = compat[1, :, 2, 4]
        c = compat[1, :, 2, 4]
        one = w[2] @ torch.relu(w[0] @ c + w[1]) + w[3]
        torch.testing.assert_close(ref[1, 2, 4], dec.clip * torch.tanh(one[0]))
        torch.testing.assert_close(pair_scores(compat, *w, dec.clip), ref)
        torch.testing.assert_close(pair_scores_elementwise(compat, *w, dec.clip), ref,
                                   atol=1e-5, rtol=1e-5)


def test_select_draws_the_same_move_as_act():
    torch.manual_seed(1)
    dec = PairDecoder(16, heads=4)
    h = torch.randn(6, 9, 16)
    mask = torch.rand(6, 9, 9) < 0.5
    mask[:, 0, 2] = True
    for seed in range(5):
        a, _, _ = dec.act(h, mask, generator=torch.Generator().manual_seed(seed))
        s = dec.select(h, mask, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(a, s)
        assert mask[torch.arange(6), s[:, 0], s[:, 1]].all()
    assert torch.equal(dec.select(h, mask, greedy=True), dec.act(h, mask, greedy=True)[0])
    with pytest.raises(ValueError, match="no allowed move"):
        dec.select(h, torch.zeros_like(mask))


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="torch.compile on CPU needs a C++ compiler")
def test_compiled_pair_scores_match_eager_values():
    torch.manual_seed(0)
    dec = PairDecoder(16, heads=4)
    h = torch.randn(4, 7, 16)
    mask = torch.rand(4, 7, 7) < 0.7
    with torch.no_grad():
        eager = dec(h, mask)
        dec.compiled = True
        assert "compiled=True" in repr(dec)
        compiled = dec(h, mask)
    torch.testing.assert_close(compiled, eager, atol=1e-5, rtol=1e-5)


def _queries_keys_and_weights(b: int, m: int, h: int = 4, d: int = 8, seed: int = 0):
    torch.manual_seed(seed)
    dec = PairDecoder(d * h, heads=h)
    q, k = torch.randn(b, h, m, d), torch.randn(b, h, m, d)
    first, last = dec.mix[0], dec.mix[2]
    return dec, q, k, (first.weight, first.bias, last.weight, last.bias)


def _autograd_reference(q, k, w, clip, g):
    """Gradients of ``pair_scores(q k^T)`` by autograd itself: the reference."""
    from pyg_routing.models.dact.pair_scores import pair_scores

    leaves = [t.detach().clone().requires_grad_() for t in (q, k, *w)]
    out = pair_scores(leaves[0] @ leaves[1].transpose(-1, -2), *leaves[2:], clip)
    out.backward(g)
    return out.detach(), [t.grad for t in leaves]


@pytest.mark.parametrize("per_slice", [1, 2, 5])
def test_hand_written_backward_equals_autograd(monkeypatch, per_slice):
    """Both passes in slices of ``per_slice`` instances (5 of 5: one slice): the
    values and every gradient are autograd's (float64; several slices reassociate
    the weight gradients' sums); a retained graph gives the same again."""
    from pyg_routing.models.dact import pair_scores as module

    dec, q, k, w = _queries_keys_and_weights(b=5, m=6)
    hidden = w[0].size(0)
    monkeypatch.setattr(module, "chunk_budget", lambda device: per_slice * 6 * 6 * hidden)
    assert [s.stop - s.start for s in module._pair_slices(q, hidden)] == \
        [per_slice] * (5 // per_slice) + ([5 % per_slice] if 5 % per_slice else [])
    q, k, w = q.double(), k.double(), [t.detach().double() for t in w]
    g = torch.randn(5, 6, 6, dtype=torch.float64)
    want_out, want = _autograd_reference(q, k, w, dec.clip, g)
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, *w)]
    out = module.PairScores.apply(*leaves, dec.clip)
    torch.testing.assert_close(out, want_out)
    out.backward(g, retain_graph=True)
    for got, ref in zip([t.grad for t in leaves], want):
        torch.testing.assert_close(got, ref)
    first = [t.grad.clone() for t in leaves]
    out.backward(g)
    for t, f in zip(leaves, first):
        torch.testing.assert_close(t.grad, 2 * f)
    small = [t.detach().clone().requires_grad_() for t in (q[:3, :, :3], k[:3, :, :3], *w)]
    monkeypatch.setattr(module, "chunk_budget", lambda device: 3 * 3 * hidden)
    assert torch.autograd.gradcheck(lambda *a: module.PairScores.apply(*a, 6.0), small)


def test_one_slice_is_autograd_bit_for_bit():
    """A batch within one slice (the fixed-seed trainings' sizes) gives the scores and
    the gradients of the inputs (``q``, ``k``: what trains the encoder) exactly as
    autograd through ``q @ k^T`` and the whole-batch scores did (float32), and the
    weights' as the whole-batch hand-written backward did."""
    from pyg_routing.models.dact import pair_scores as module

    dec, q, k, w = _queries_keys_and_weights(b=4, m=7)
    assert len(list(module._pair_slices(q, w[0].size(0)))) == 1
    g = torch.randn(4, 7, 7)
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, *w)]
    out = module.PairScores.apply(*leaves, dec.clip)
    out.backward(g)
    ref = [t.detach().clone().requires_grad_() for t in (q, k)]
    compat = ref[0] @ ref[1].transpose(-1, -2)
    pairs, weight, hidden, want = module._pair_mlp(compat.detach(), *[t.detach() for t in w],
                                                   dec.clip)
    assert torch.equal(out, want)
    mask = hidden.sign_()
    g_z = (dec.clip - want * want / dec.clip).mul_(g).reshape(-1, 1)
    g_pairs = mask.mm((weight[:4] * w[2].detach()).t()).mul_(g_z)
    compat.backward(g_pairs.view(4, 7, 7, 4).permute(0, 3, 1, 2))
    assert torch.equal(leaves[0].grad, ref[0].grad)
    assert torch.equal(leaves[1].grad, ref[1].grad)
    a = (pairs * g_z).t().mm(mask)
    assert torch.equal(leaves[2].grad, (a * w[2].detach())[:4].t())
    assert torch.equal(leaves[4].grad, (weight * a).sum(0, keepdim=True))


def test_decoder_trains_through_the_hand_written_backward():
    torch.manual_seed(0)
    dec = PairDecoder(16, heads=4)
    h = torch.randn(3, 6, 16, requires_grad=True)
    mask = torch.rand(3, 6, 6) < 0.7
    logits = dec(h, mask)
    assert "PairScores" in type(logits.grad_fn.next_functions[0][0]).__name__
    grads = torch.autograd.grad(logits[mask].sum(), [h, dec.mix[0].weight, dec.query.weight])
    with torch.no_grad():
        assert dec(h, mask).grad_fn is None
    ref = _plain_logits(dec, h, mask)
    torch.testing.assert_close(logits, ref)
    want = torch.autograd.grad(ref[mask].sum(), [h, dec.mix[0].weight, dec.query.weight])
    for a, b in zip(grads, want):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def _plain_logits(dec: PairDecoder, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The decoder's logits with the pair MLP applied as plain modules (autograd's
    own backward): the reference of the hand-written one."""
    b, m, _ = h.shape
    q = dec.query(h).view(b, m, dec.heads, -1).transpose(1, 2) / (dec.dim // dec.heads) ** 0.5
    k = dec.key(h).view(b, m, dec.heads, -1).transpose(1, 2)
    ref = dec.clip * torch.tanh(dec.mix((q @ k.transpose(-1, -2)).permute(0, 2, 3, 1)))
    return ref.squeeze(-1).masked_fill(~mask, float("-inf"))


def test_hand_written_backward_under_cpu_autocast():
    torch.manual_seed(0)
    dec = PairDecoder(16, heads=4)
    h = torch.randn(3, 6, 16, requires_grad=True)
    mask = torch.rand(3, 6, 6) < 0.7
    params = [h, dec.mix[0].weight, dec.mix[2].weight]
    exact = torch.autograd.grad(dec(h, mask)[mask].sum(), params)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = dec(h, mask)
        plain = _plain_logits(dec, h, mask)
    assert logits.dtype == torch.bfloat16
    got = torch.autograd.grad(logits[mask].float().sum(), params)
    ref = torch.autograd.grad(plain[mask].float().sum(), params)
    for a, r, e in zip(got, ref, exact):
        assert a.dtype == e.dtype == torch.float32
        assert torch.isfinite(a).all()
        # bf16 keeps ~3 digits: as close to the float32 gradient as autograd gets
        err, err_ref = float((a - e).norm() / e.norm()), float((r - e).norm() / e.norm())
        assert err < 1.5 * err_ref + 1e-3, (err, err_ref)


def test_sample_categorical_never_draws_a_trailing_zero_when_u_rounds_to_the_total(monkeypatch):
    from pyg_routing.models import sampling

    # u * total == total (the rounding edge) must still land on a positive entry
    monkeypatch.setattr(sampling.torch, "rand",
                        lambda *a, **k: torch.ones(a[0], a[1], dtype=k["dtype"]))
    probs = torch.tensor([[0.2, 0.8, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    assert sampling.sample_categorical(probs).tolist() == [1, 3]


def test_slices_under_cpu_bf16_autocast_match_one_slice(monkeypatch):
    """Under ``bf16-mixed`` on the CPU the sliced passes run in the products' bf16 and
    sum ``A`` in float32: the scores and gradients of one slice, to bf16 rounding."""
    from pyg_routing.models.dact import pair_scores as module

    torch.manual_seed(0)
    dec = PairDecoder(32, heads=4)
    h = torch.randn(6, 9, 32, requires_grad=True)
    mask = torch.rand(6, 9, 9) < 0.7
    runs = []
    for budget in (None, 2 * 9 * 9 * 32):
        if budget is not None:
            monkeypatch.setattr(module, "chunk_budget", lambda device, b=budget: b)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = dec(h, mask)
        assert out.dtype == torch.bfloat16
        grads = torch.autograd.grad(out[mask].float().sum(), [h, dec.mix[0].weight])
        runs.append((out, grads))
    (one, g_one), (sliced, g_sliced) = runs
    torch.testing.assert_close(sliced, one)
    for a, b in zip(g_sliced, g_one):
        assert a.dtype == torch.float32
        torch.testing.assert_close(a, b, rtol=2e-2, atol=1e-2)
