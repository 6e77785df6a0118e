"""N2S's Synthesis Attention scores in training (``SynthesisScores``): both passes in
slices of instances, against the layer's eager computation under autograd."""

import pytest
import torch

from pyg_routing.models.n2s import synthesis_scores as module
from pyg_routing.models.n2s.synthesis_attention import SynthesisAttentionLayer

B, H, M, D = 5, 2, 6, 4


def _inputs(dtype=torch.float64, positional=True, seed=0):
    gen = torch.Generator().manual_seed(seed)
    layer = SynthesisAttentionLayer(H * D, heads=H).to(dtype)
    q, k = (torch.randn(B, H, M, D, dtype=dtype, generator=gen) for _ in range(2))
    pos = torch.randn(B, H, M, M, dtype=dtype, generator=gen) if positional else None
    leaves = [q, k, pos, layer.mix_node.weight, layer.mix_node.bias, layer.mix_pos.weight,
              layer.mix_out.weight, layer.mix_out.bias]
    return layer, [None if t is None else t.detach().clone().requires_grad_()
                   for t in leaves]


def _eager(layer, q, k, pos, *weights):
    """The layer's own eager scores (its no-gradient path), here under autograd."""
    b, h, m, _ = q.shape
    wn, bn, wp, wo, bo = weights
    a = (q @ k.transpose(-1, -2)).view(b, h, m * m)
    if pos is None:
        z = layer._mix(wn, a, bn)
    else:
        z = layer._mix(wp, pos.reshape(b, h, m * m), bn)
        z.baddbmm_(layer._batched(wn, a), a)
    return layer._mix(wo, z.relu_(), bo).view(b, h, m, m)


def _run(fn, layer, leaves, g):
    out = fn(*leaves) if layer is None else fn(layer, *leaves)
    wanted = [t for t in leaves if t is not None]
    grads = torch.autograd.grad((out * g).sum(), wanted, allow_unused=True)
    return out, grads


@pytest.mark.parametrize("positional", [True, False])
@pytest.mark.parametrize("per_slice", [1, 2, 5])
def test_scores_and_gradients_equal_the_eager_layer_in_slices(monkeypatch, per_slice,
                                                              positional):
    monkeypatch.setattr(module, "chunk_budget", lambda device: per_slice * 2 * H * M * M)
    layer, leaves = _inputs(positional=positional)
    assert len(module._slices(leaves[0], 2 * H)) == -(-B // per_slice)
    g = torch.randn(B, H, M, M, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    got, got_grads = _run(module.SynthesisScores.apply, None, leaves, g)
    want, want_grads = _run(_eager, layer, leaves, g)
    torch.testing.assert_close(got, want)
    for a, b in zip(got_grads, want_grads):
        if b is None:                              # w_pos without positional scores
            assert a is None
        else:
            torch.testing.assert_close(a, b)
    small = [None if t is None else t.detach().clone().requires_grad_() for t in leaves]
    small[0], small[1] = small[0][:2, :, :3].detach().requires_grad_(), \
        small[1][:2, :, :3].detach().requires_grad_()
    if positional:
        small[2] = small[2][:2, :, :3, :3].detach().requires_grad_()
    assert torch.autograd.gradcheck(module.SynthesisScores.apply, tuple(small))


@pytest.mark.parametrize("positional", [True, False])
def test_kept_channels_give_the_recomputed_gradients_bit_for_bit(monkeypatch, positional):
    """Within :func:`keeps_activations`'s budget the forward keeps each slice's node
    scores and channels and the backward reads them instead of recomputing them: the
    same scores and gradients, bit for bit (float32, three slices); these small
    shapes keep under the real rule."""
    monkeypatch.setattr(module, "chunk_budget", lambda device: 2 * 2 * H * M * M)
    real_channels, real_rule = module._channels, module.keeps_activations
    calls = []
    monkeypatch.setattr(module, "_channels", lambda *a: calls.append(1) or real_channels(*a))
    layer, leaves = _inputs(torch.float32, positional=positional)
    g = torch.randn(B, H, M, M, generator=torch.Generator().manual_seed(1))
    runs = {}
    for kept, rule in (("recomputed", lambda saved, device: False), ("kept", real_rule)):
        monkeypatch.setattr(module, "keeps_activations", rule)
        calls.clear()
        runs[kept] = _run(module.SynthesisScores.apply, None, leaves, g)
        assert len(calls) == (3 if kept == "kept" else 6)        # 3 slices, once or twice
    (out, grads), (kept_out, kept_grads) = runs["recomputed"], runs["kept"]
    assert torch.equal(kept_out, out)
    for a, b in zip(kept_grads, grads):
        assert (a is None and b is None) or torch.equal(a, b)


def test_one_slice_gives_autograds_gradients_bit_for_bit():
    """A batch within one slice (the fixed-seed trainings' sizes): the scores and every
    gradient exactly as autograd through the eager layer (float32)."""
    layer, leaves = _inputs(torch.float32)
    assert len(module._slices(leaves[0], 2 * H)) == 1
    g = torch.randn(B, H, M, M, generator=torch.Generator().manual_seed(1))
    got, got_grads = _run(module.SynthesisScores.apply, None, leaves, g)
    want, want_grads = _run(_eager, layer, leaves, g)
    assert torch.equal(got, want)
    for a, b in zip(got_grads, want_grads):
        assert torch.equal(a, b)


def test_the_layer_trains_through_the_slices_and_searches_eagerly():
    """With a gradient the layer's scores come from ``SynthesisScores``; without one
    from the eager form; both give the same layer output (and the wrong positional
    shape is refused on both paths)."""
    torch.manual_seed(0)
    layer = SynthesisAttentionLayer(16, heads=4)
    h = torch.randn(3, 7, 16, requires_grad=True)
    pos = torch.randn(3, 4, 7, 7)
    attn, _ = layer.scores(h, pos, None)
    assert "SynthesisScores" in type(attn.grad_fn.next_functions[0][0]).__name__
    with torch.no_grad():
        eager = layer(h, pos)
    torch.testing.assert_close(layer(h, pos), eager)
    for grad in (True, False):
        with torch.set_grad_enabled(grad), pytest.raises(ValueError, match="positional scores "
                                                         r"of shape \(3, 4, 7, 6\)"):
            layer(h, pos[..., :6])


def test_under_cpu_bf16_autocast_the_scores_run_in_bf16_and_return_float32_gradients():
    layer, leaves = _inputs(torch.float32)
    q, k = leaves[0].detach().bfloat16().requires_grad_(), \
        leaves[1].detach().bfloat16().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = module.SynthesisScores.apply(q, k, *leaves[2:])
    assert out.dtype == torch.bfloat16
    want = _eager(layer, leaves[0], leaves[1], *leaves[2:])
    torch.testing.assert_close(out.float(), want, atol=0.1, rtol=0.05)
    grads = torch.autograd.grad(out.float().sum(), [q, leaves[2], leaves[3]])
    assert [t.dtype for t in grads] == [torch.bfloat16, torch.float32, torch.float32]


@pytest.mark.parametrize("positional", [True, False])
def test_the_elementwise_pair_mlp_for_the_compiler_equals_the_eager_one(positional):
    """``_pair_mlp_elementwise`` (the form ``torch.compile`` gets) computes the eager
    layer's pair MLP, with and without positional scores (run eagerly here)."""
    layer, leaves = _inputs(positional=positional)
    q, k, pos, *weights = (None if t is None else t.detach() for t in leaves)
    b, h, m, _ = q.shape
    with torch.no_grad():
        want = _eager(layer, q, k, pos, *weights)
        a = (q @ k.transpose(-1, -2)).view(b, h, m * m)
        got = layer._pair_mlp_elementwise(a, None if pos is None else pos.reshape(b, h, m * m))
    torch.testing.assert_close(got.view(b, h, m, m), want)
