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
