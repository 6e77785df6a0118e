"""``BitDropout`` (:mod:`pyg_routing.models.dropout`): nn.Dropout's law with CPU masks
drawn 16 bits an entry: the keep rate and the scale, an unbiased output, the gradient,
the same masks for the same seed and under checkpointing, eval mode, the edge
probabilities, and DACT's MLP using it."""

import math

import pytest
import torch
from scipy import stats
from torch.utils.checkpoint import checkpoint

from pyg_routing.models.dact.mhc import dact_mlp
from pyg_routing.models.dropout import BitDropout, bit_dropout_mask, drop_threshold


@pytest.mark.parametrize("p", [0.05, 0.5, 0.9])
def test_keep_rate_and_scale(p):
    torch.manual_seed(0)
    x = torch.ones(1001, 997)                        # numel not a multiple of 4
    out = BitDropout(p).train()(x)
    q = drop_threshold(p) / 2 ** 16
    assert abs(q - p) <= 2 ** -17
    kept = out != 0
    assert torch.equal(out[kept], torch.full_like(out[kept], 1 / (1 - q)))
    n, k = x.numel(), int(kept.sum())
    assert stats.binomtest(k, n, 1 - q).pvalue > 1e-3
    # neighbours are independent: the kept pairs of adjacent entries (one 64-bit word
    # holds four entries) follow (1 - q)^2
    pairs = int((kept.view(-1)[:-1] & kept.view(-1)[1:]).sum())
    assert stats.binomtest(pairs, n - 1, (1 - q) ** 2).pvalue > 1e-4


def test_the_output_is_unbiased_and_the_gradient_is_the_mask():
    torch.manual_seed(1)
    x = torch.randn(64, 50).requires_grad_()
    drop = BitDropout(0.3).train()
    mean = torch.stack([drop(x).detach() for _ in range(3000)]).mean(0)
    assert (mean - x.detach()).abs().max() < 6 * x.detach().abs().max() * math.sqrt(
        0.3 / 0.7 / 3000)
    out = drop(x)
    w = torch.randn_like(out)
    (out * w).sum().backward()
    scale = torch.where(out.detach() != 0, out.detach() / x.detach(), 0.0)
    torch.testing.assert_close(x.grad, w * scale)


def test_same_seed_same_mask_and_checkpointing_redraws_it():
    torch.manual_seed(2)
    a = bit_dropout_mask(torch.empty(7, 9), 0.5)
    torch.manual_seed(2)
    assert torch.equal(bit_dropout_mask(torch.empty(7, 9), 0.5), a)
    torch.manual_seed(3)
    mlp = dact_mlp(8, 32, 32, 0.05).train()
    x = torch.randn(5, 11, 8, requires_grad=True)
    state = torch.get_rng_state()
    mlp(x).sum().backward()
    plain = [x.grad.clone()] + [p.grad.clone() for p in mlp.parameters()]
    x.grad = None
    mlp.zero_grad()
    torch.set_rng_state(state)
    checkpoint(mlp, x, use_reentrant=False).sum().backward()
    again = [x.grad] + [p.grad for p in mlp.parameters()]
    assert all(torch.equal(u, v) for u, v in zip(plain, again))


def test_eval_zero_one_and_bad_probabilities():
    x = torch.randn(4, 5)
    assert BitDropout(0.5).eval()(x) is x
    assert BitDropout(0.0).train()(x) is x
    assert torch.equal(BitDropout(1.0).train()(x), torch.zeros_like(x))
    for bad in (-0.1, 1.5, True, "0.1"):
        with pytest.raises(ValueError, match="between 0 and 1"):
            BitDropout(bad)
    assert repr(BitDropout(0.05)) == "BitDropout(p=0.05)"


def test_dtypes_and_empty_inputs():
    torch.manual_seed(4)
    x = torch.randn(3, 6, dtype=torch.bfloat16)
    out = BitDropout(0.5).train()(x)
    assert out.dtype == torch.bfloat16 and out.shape == x.shape
    assert BitDropout(0.5).train()(torch.empty(0, 3)).shape == (0, 3)


def test_dact_mlp_uses_it_and_keeps_its_state_dict_keys():
    mlp = dact_mlp(8, 32, 32, 0.05)
    assert isinstance(mlp[2], BitDropout) and mlp[2].p == 0.05
    assert sorted(mlp.state_dict()) == ["0.bias", "0.weight", "3.bias", "3.weight",
                                        "5.bias", "5.weight"]
