import shutil

import pytest
import torch

from pyg_routing.models.pair_decoder import PairDecoder, ValueHead


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
    from pyg_routing.models.pair_decoder import sample_categorical

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
    from pyg_routing.models.pair_decoder import pair_scores, pair_scores_elementwise

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
def test_compiled_pair_scores_match_eager_values_and_gradients():
    torch.manual_seed(0)
    dec = PairDecoder(16, heads=4)
    h = torch.randn(4, 7, 16, requires_grad=True)
    mask = torch.rand(4, 7, 7) < 0.7
    eager = dec(h, mask)
    dec.compiled = True
    assert "compiled=True" in repr(dec)
    compiled = dec(h, mask)
    torch.testing.assert_close(compiled, eager, atol=1e-5, rtol=1e-5)
    params = [h, dec.mix[0].weight, dec.query.weight]
    g_eager = torch.autograd.grad(eager[mask].sum(), params)
    g_comp = torch.autograd.grad(compiled[mask].sum(), params)
    for a, b in zip(g_eager, g_comp):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
