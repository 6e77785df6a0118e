"""The CPU inverse-CDF kernel (:mod:`pyg_routing.models.inverse_cdf`) draws what the
torch form (float64 ``cumsum`` + two ``searchsorted``) draws, bit for bit, edge cases
included; its pure-Python reference follows the same rules; the NDS search tail picks
the same with and without it."""

import math

import numpy as np
import pytest
import torch

from pyg_routing.models import inverse_cdf
from pyg_routing.models.inverse_cdf import draw_rows, draw_rows_reference, kernel_applies
from pyg_routing.models.nds import tail
from pyg_routing.models.sampling import sample_categorical, uniforms


def _torch_form(probs, uniform, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(inverse_cdf, "kernel_applies", lambda p: False)
        return sample_categorical(probs, uniform=uniform)


def _rows(rows, width, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    p = torch.softmax(6 * torch.randn(rows, width, generator=g), -1).to(dtype)
    return p.masked_fill(torch.rand(rows, width, generator=g) < 0.4, 0.0)


@pytest.mark.parametrize("width", [1, 7, 501, 13_000])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_kernel_draws_what_the_torch_form_draws(monkeypatch, width, dtype):
    probs = _rows(300, width, seed=width, dtype=dtype)
    probs[:, -1] = 0.01                            # every row has a positive entry
    u = uniforms(300, torch.Generator().manual_seed(1))
    u[:3] = torch.tensor([[0.0], [1.0 - 2.0 ** -53], [0.5]], dtype=torch.float64)
    assert kernel_applies(probs)
    assert torch.equal(sample_categorical(probs, uniform=u), _torch_form(probs, u, monkeypatch))
    picks, totals = draw_rows(probs, u)
    torch.testing.assert_close(totals, probs.double().sum(-1, keepdim=True), rtol=1e-12,
                               atol=0)
    assert not (probs.gather(1, picks[:, None]) == 0).any()       # zeros never drawn


def test_targets_on_a_cdf_step_and_degenerate_rows(monkeypatch):
    inf, nan = math.inf, math.nan
    probs = torch.tensor([[1.0, 2.0, 0.0, 3.0]] * 4 + [[0.0] * 4, [nan] * 4,
                                                        [0.1, nan, 0.3, 0.2],
                                                        [0.1, inf, 0.2, 0.0], [inf] * 4])
    # u * total lands exactly on the CDF steps 1, 3 and 6 (right-continuous: the next
    # positive entry), and 0 (the first positive entry)
    u = torch.tensor([[1 / 6], [0.5], [1.0], [0.0], [0.5], [0.5], [0.5], [0.0], [0.3]],
                     dtype=torch.float64)
    want = _torch_form(probs, u, monkeypatch)
    assert want.tolist() == [1, 3, 3, 0, 0, 4, 4, 1, 0]
    assert torch.equal(sample_categorical(probs, uniform=u), want)
    ref, _ = draw_rows_reference(probs.numpy(), u.view(-1).numpy())
    assert ref.tolist() == want.tolist()


def test_reference_follows_the_kernel():
    probs = _rows(40, 23, seed=3)
    u = uniforms(40, torch.Generator().manual_seed(2))
    picks, totals = draw_rows(probs, u)
    ref_picks, ref_totals = draw_rows_reference(probs.numpy(), u.view(-1).numpy())
    assert picks.tolist() == ref_picks.tolist()
    assert np.array_equal(totals.view(-1).numpy(), ref_totals)


def test_layouts_dtypes_and_devices_the_kernel_leaves_to_torch(monkeypatch):
    probs = _rows(50, 30, seed=4)
    u = uniforms(50, torch.Generator().manual_seed(5))
    transposed = probs.t().contiguous().t()                      # not row-contiguous
    assert torch.equal(sample_categorical(transposed, uniform=u),
                       _torch_form(probs, u, monkeypatch))
    assert not kernel_applies(probs.to(torch.bfloat16))
    assert not kernel_applies(probs.unsqueeze(0))
    assert not kernel_applies(probs.to("meta"))
    drawn = sample_categorical(probs.to(torch.bfloat16), uniform=u)      # the torch form
    assert drawn.shape == (50,) and not (probs.gather(1, drawn[:, None]) == 0).any()
    assert draw_rows(probs[:0], u[:0])[0].shape == (0,)


def test_probs_with_gradients_and_float32_uniforms(monkeypatch):
    probs = _rows(20, 9, seed=6).requires_grad_()
    u = uniforms(20, torch.Generator().manual_seed(7))
    want = _torch_form(probs.detach(), u, monkeypatch)
    assert torch.equal(sample_categorical(probs, uniform=u), want)
    u32 = u.float()
    assert torch.equal(sample_categorical(probs, uniform=u32),
                       _torch_form(probs.detach(), u32, monkeypatch))


def test_nds_tail_picks_the_same_with_and_without_the_kernel(monkeypatch):
    g = torch.Generator().manual_seed(8)
    scores = 8 * torch.randn(400, 61, generator=g)
    mask = torch.where(torch.rand(400, 61, generator=g) < 0.3, float("-inf"), 0.0)
    mask[:, 0] = float("-inf")
    u = uniforms(400, torch.Generator().manual_seed(9))
    got = tail.pick_rows(scores.clone(), mask, u, 0.25, 10.0, 1.0)
    monkeypatch.setattr(inverse_cdf, "kernel_applies", lambda p: False)
    want = tail.pick_rows(scores.clone(), mask, u, 0.25, 10.0, 1.0)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])

