"""The search paths that run in batch slices (``functional/chunks.py``) compute what one
pass over the whole batch computes: the encoders and the masks bit for bit; the moves
exactly on these seeds, and the scores up to the last bit of the output layers whose
single output column makes them matrix-vector products (MKL's summation order there
depends on the number of rows: 1 ulp between a slice and the whole batch).

Slicing is forced on small batches by shrinking the slice budget. The bit-for-bit
tests run on one torch thread and slice at least four instances: on some CPUs (an AMD
EPYC with MKL's AVX2 path) a product whose rows are the instances (a graph embedding,
a per-instance query) takes another kernel for 1-3 rows, and with two threads the
products of a slice and of the whole batch are split differently, with other last
bits."""

import pytest
import torch

from pyg_routing.data.generators import make_generator
from pyg_routing.envs import PairReinsertionEnv
from pyg_routing.envs.base import any_per_row
from pyg_routing.envs.two_opt import TwoOptEnv
from pyg_routing.functional import chunks
from pyg_routing.models import DACTPolicy, GPSEncoder, N2SPolicy
from pyg_routing.models.dact.pair_decoder import PairDecoder, allowed_gate, mask_logits_
from pyg_routing.models.dact.pair_scores import PairWorkspace, pair_scores, search_pair_scores
from pyg_routing.models.sampling import choose, sample_categorical, uniforms


@pytest.fixture(autouse=True)
def one_thread():
    """Every test here on one torch thread (see the module's text)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def tiny_slices(monkeypatch):
    """Slices of one or two instances (a budget of 300 elements)."""
    monkeypatch.setattr(chunks, "CHUNK_ELEMENTS", 300)


def test_chunk_helpers():
    assert chunks.instances_per_chunk(1000, 4096) == 4
    assert chunks.instances_per_chunk(10_000, 4096) == 1            # never zero
    assert [(s.start, s.stop) for s in chunks.batch_slices(7, 3)] == [(0, 3), (3, 6), (6, 7)]
    lin = torch.nn.Linear(2, 2)
    assert chunks.needs_grad(lin)
    with torch.no_grad():
        assert not chunks.needs_grad(lin)
    assert not chunks.needs_grad(None, torch.zeros(2))
    assert chunks.needs_grad(None, torch.zeros(2, requires_grad=True))
    assert chunks.chunk_budget("cpu") == chunks.CHUNK_ELEMENTS


def _dact_observation(b=6, n=12, seed=0):
    inst = make_generator("cvrp", n, seed=seed).sample(b)
    env = TwoOptEnv()
    state = env.reset(inst, init="random", generator=torch.Generator().manual_seed(seed))
    return env.policy_observation(state, torch.float32)


@pytest.mark.parametrize("local_mp", ["directed", "none", "undirected"])
def test_gps_encoder_slices_equal_the_whole_batch(monkeypatch, local_mp):
    obs = _dact_observation(b=8)
    torch.manual_seed(0)
    enc = GPSEncoder(TwoOptEnv.feature_width("cvrp"), 32, 4, 2, pe="ipexpe", pe_dim=8,
                     local_mp=local_mp).eval()
    m = obs.x.size(1)
    with torch.no_grad():
        whole = enc.forward_observation(obs)
        monkeypatch.setattr(chunks, "CHUNK_ELEMENTS", 4 * 8 * m * 32)   # 4 and 4
        assert enc.slices_without_arcs(8, m, enc.dense_inputs(obs)) == (
            None if local_mp == "undirected" else 4)
        sliced = enc.forward_observation(obs)
    assert torch.equal(whole, sliced)


@pytest.mark.parametrize("greedy", [False, True])
def test_pair_decoder_select_in_slices_draws_the_whole_batch_moves(tiny_slices, greedy):
    torch.manual_seed(0)
    dec = PairDecoder(16, heads=4).eval()
    h = torch.randn(7, 9, 16)
    mask = torch.rand(7, 9, 9) < 0.4
    mask[:, 0, 1] = True
    for seed in range(5):
        whole = choose(dec._flat_logits(h, mask, None), greedy,
                       torch.Generator().manual_seed(seed))
        with torch.no_grad():
            moves = dec.select(h, mask, greedy, torch.Generator().manual_seed(seed))
        assert torch.equal(moves[:, 0] * 9 + moves[:, 1], whole)
        assert mask[torch.arange(7), moves[:, 0], moves[:, 1]].all()
    with torch.no_grad():
        q, k = dec._queries_keys(h)
        sliced = torch.cat([dec._masked_scores(q[i:i + 1], k[i:i + 1], mask[i:i + 1])
                            for i in range(7)])
        torch.testing.assert_close(sliced, dec(h, mask), rtol=1e-6, atol=1e-6)


def test_pair_decoder_slices_refuse_a_row_without_moves(tiny_slices):
    dec = PairDecoder(8, heads=2).eval()
    mask = torch.zeros(4, 3, 3, dtype=torch.bool)
    mask[:2, 0, 1] = True
    with torch.no_grad(), pytest.raises(ValueError, match=r"instance\(s\) \[2, 3\]"):
        dec.select(torch.randn(4, 3, 8), mask)


def test_dact_policy_act_in_slices_equals_one_pass(monkeypatch):
    obs = _dact_observation(b=5, n=10, seed=1)
    torch.manual_seed(0)
    policy = DACTPolicy.build("cvrp", pe="ipexpe", dim=16, heads=4, num_layers=2).eval()
    with torch.no_grad():
        h = policy.embed(obs)
        whole = choose(policy.decoder._flat_logits(h, obs.mask, None), False,
                       torch.Generator().manual_seed(3))
        monkeypatch.setattr(chunks, "CHUNK_ELEMENTS", 500)
        moves = policy.act(obs, generator=torch.Generator().manual_seed(3))
    m = obs.x.size(1)
    assert torch.equal(moves[:, 0] * m + moves[:, 1], whole)


def test_search_pair_scores_equal_pair_scores_bit_for_bit():
    torch.manual_seed(0)
    compat = torch.randn(3, 4, 6, 6)
    w1, b1, w2, b2 = torch.randn(32, 4), torch.randn(32), torch.randn(1, 32), torch.randn(1)
    workspace = PairWorkspace(4 * 36, 4, 32, torch.float32, torch.device("cpu"))
    for part in (compat, compat[:2], compat[2:]):     # a reused workspace, shorter slices
        ref = pair_scores(part, w1, b1, w2, b2, 6.0)
        assert torch.equal(search_pair_scores(part, w1, b1, w2, b2, 6.0, workspace), ref)


def test_the_gate_masks_like_masked_fill_values_and_gradients():
    torch.manual_seed(0)
    logits = torch.randn(4, 30, requires_grad=True)
    allowed = torch.rand(4, 30) < 0.5
    ref = logits.masked_fill(~allowed, float("-inf"))
    got = logits.clamp(max=allowed_gate(allowed, logits.dtype))
    assert torch.equal(ref, got)
    w = torch.randn(4, 30)
    g_ref, = torch.autograd.grad((ref.exp() * w).sum(), logits)
    g_got, = torch.autograd.grad((got.exp() * w).sum(), logits)
    assert torch.equal(g_ref, g_got)
    assert torch.equal(mask_logits_(logits.detach().clone(), allowed), ref.detach())


def test_any_per_row_is_any():
    mask = torch.rand(5, 4, 4) < 0.05
    mask[2] = False
    assert torch.equal(any_per_row(mask), mask.flatten(1).any(1))
    with pytest.raises(TypeError, match="bool mask"):
        any_per_row(mask.float())


def test_given_uniforms_draw_what_the_generator_draws():
    probs = torch.rand(50, 20) ** 4
    drawn = sample_categorical(probs, torch.Generator().manual_seed(4))
    u = uniforms(50, torch.Generator().manual_seed(4))
    assert torch.equal(sample_categorical(probs, uniform=u), drawn)
    assert torch.equal(torch.cat([sample_categorical(probs[:20], uniform=u[:20]),
                                  sample_categorical(probs[20:], uniform=u[20:])]), drawn)


def _n2s_setup(b=8, n=10, seed=0):
    inst = make_generator("pdtsp", n, seed=seed).sample(b)
    env = PairReinsertionEnv()
    state = env.reset(inst, init="random", generator=torch.Generator().manual_seed(seed))
    torch.manual_seed(0)
    policy = N2SPolicy.build("pdtsp", dim=16, heads=4, num_layers=2, pe_dim=16).eval()
    return env.policy_observation(state, torch.float32), policy


def test_n2s_slices_equal_the_whole_batch(monkeypatch):
    obs, policy = _n2s_setup()
    with torch.no_grad():
        h = policy.embed(obs)
        whole = policy._choose(h, obs, None, False, torch.Generator().manual_seed(2))
        # the encoder in slices of 4 and 4 instances (4 H M^2 elements each; M = 21)
        monkeypatch.setattr(chunks, "CHUNK_ELEMENTS", 4 * 4 * 4 * 21 * 21)
        assert torch.equal(policy.embed(obs), h)
        # the decoders in slices of one or two instances: their scores to the last bits
        monkeypatch.setattr(chunks, "CHUNK_ELEMENTS", 300)
        sliced = policy._choose(h, obs, None, False, torch.Generator().manual_seed(2))
    action, removal, pair, place, k = whole
    assert torch.equal(sliced[0], action) and torch.equal(sliced[2], pair)
    assert torch.equal(sliced[4], k)
    torch.testing.assert_close(sliced[1], removal, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(sliced[3], place, rtol=1e-6, atol=1e-6)


def test_n2s_act_draws_the_action_decode_draws():
    obs, policy = _n2s_setup(seed=3)
    with torch.no_grad():
        for seed in range(3):
            action, _, _, _ = policy(obs, generator=torch.Generator().manual_seed(seed))
            assert torch.equal(policy.act(obs, generator=torch.Generator().manual_seed(seed)),
                               action)


def test_batch_slices_keep_a_minimum_size():
    def spans(*args, **kw):
        return [(s.start, s.stop) for s in chunks.batch_slices(*args, **kw)]

    assert spans(5, 2, min_size=2) == [(0, 2), (2, 5)]        # no one-instance tail
    assert spans(3, 1, min_size=2) == [(0, 3)]
    assert spans(6, 2, min_size=2) == [(0, 2), (2, 4), (4, 6)]
    assert spans(1, 4) == [(0, 1)]


@pytest.mark.parametrize("pe", ["none", "ipexpe", "rpe", "rope"])
def test_nds_encoder_slices_equal_the_whole_batch(monkeypatch, pe):
    import numpy as np

    from pyg_routing.envs.deconstruction import PolicyDestroy, ProblemArrays, start_solutions
    from pyg_routing.models import NDSPolicy

    inst = make_generator("cvrp", 50, seed=1, preset="nds").sample(1)
    arrays = ProblemArrays.from_instances(inst)
    state = start_solutions(arrays, np.zeros(9, np.int32), rng=np.random.default_rng(0))
    torch.manual_seed(0)
    policy = NDSPolicy.build("cvrp", pe=pe, dim=32, heads=4).eval()
    obs = PolicyDestroy(policy, inst).observe(state)
    ff = policy.encoder.layers[0].feed_forward.W1.out_features
    with torch.no_grad():
        whole = policy.embed(obs)
        monkeypatch.setattr(chunks, "CHUNK_ELEMENTS", 4 * 51 * ff)   # slices of 4 and 5 slots
        assert torch.equal(policy.embed(obs), whole)


@pytest.mark.parametrize("pe", ["dact_cpe", "ipexpe", "rpe", "rope"])
def test_dact_native_encoder_slices_equal_the_whole_batch(monkeypatch, pe):
    obs = _dact_observation(b=14)
    torch.manual_seed(0)
    policy = DACTPolicy.build("cvrp", pe=pe, encoder="native", dim=16, heads=2).eval()
    obs = policy.prepare(obs)
    m = obs.x.size(1)
    calls = []
    body = policy.encoder._dense
    monkeypatch.setattr(policy.encoder, "_dense",
                        lambda x, *rest: calls.append(x.size(0)) or body(x, *rest))
    with torch.no_grad():
        whole = policy.embed(obs)
        assert calls == [14]
        monkeypatch.setattr(chunks, "CHUNK_ELEMENTS", 5 * 16 * m * 16)   # 5, 5 and 4
        calls.clear()
        assert torch.equal(policy.embed(obs), whole)
        assert calls == [5, 5, 4]
    with torch.enable_grad():                        # with gradients: the whole batch
        calls.clear()
        # (SDPA may take another kernel with a mask and gradients: equal up to rounding)
        torch.testing.assert_close(policy.embed(obs), whole, rtol=1e-5, atol=1e-5)
        assert calls == [14]
