"""NDS's search tail (:mod:`pyg_routing.models.nds.tail`) samples by the law of the
training path's ``log_softmax`` + ``sample_categorical``: the same picks for the same
uniforms, a chi-squared test of its pick frequencies, the search's GRU step from
gathered input gates equal to ``nn.GRUCell``, and the whole decoder picking the same
sets either way."""

import math

import pytest
import torch
import torch.nn.functional as F
from scipy import stats

from pyg_routing.data.dense_rows import take_rows
from pyg_routing.functional import chunks
from pyg_routing.models.nds.decoder import NDSDecoder, gru_step, sample_z
from pyg_routing.models.nds.tail import pick_rows
from pyg_routing.models.sampling import sample_categorical, uniforms

SCALE, CLIP = 1 / math.sqrt(16), 10.0


def _reference(scores, mask, generator, temperature=1.0):
    """The training path's tail (models/nds/decoder.py)."""
    logits = CLIP * torch.tanh(scores * SCALE) + mask
    logp = F.log_softmax(logits / temperature, dim=-1)
    pick = sample_categorical(logp.exp(), generator)
    return pick, logp.gather(1, pick.unsqueeze(1)).squeeze(1)


def _inputs(rows=300, m=41, seed=0):
    g = torch.Generator().manual_seed(seed)
    scores = 8 * torch.randn(rows, m, generator=g)
    mask = torch.where(torch.rand(rows, m, generator=g) < 0.3, float("-inf"), 0.0)
    mask[:, 0] = float("-inf")
    return scores, mask


@pytest.mark.parametrize("temperature", [1.0, 0.5])
@pytest.mark.parametrize("budget", [None, 200])
def test_same_picks_as_the_training_path_under_one_generator(monkeypatch, temperature,
                                                             budget):
    if budget is not None:
        monkeypatch.setattr(chunks, "CHUNK_ELEMENTS", budget)     # many row slices
    scores, mask = _inputs()
    for seed in range(3):
        ref, ref_logp = _reference(scores, mask, torch.Generator().manual_seed(seed),
                                   temperature)
        got, logp = pick_rows(scores.clone(), mask, uniforms(300, torch.Generator()
                                                                 .manual_seed(seed)),
                              SCALE, CLIP, temperature)
        assert torch.equal(got, ref)
        torch.testing.assert_close(logp, ref_logp, rtol=1e-5, atol=1e-5)
        assert torch.isfinite(logp).all() and not mask.gather(1, got[:, None]).isinf().any()


def test_pick_frequencies_follow_the_softmax_chi_squared():
    scores, mask = _inputs(rows=1, m=12, seed=5)
    scores = scores / 16                                   # every allowed entry drawn often
    rows = 60_000
    picks, _ = pick_rows(scores.expand(rows, -1).clone(), mask.expand(rows, -1),
                         uniforms(rows, torch.Generator().manual_seed(11)), SCALE, CLIP, 1.0)
    logits = (CLIP * torch.tanh(scores.double() * SCALE) + mask.double())[0]
    probs = torch.softmax(logits, -1)
    counts = torch.bincount(picks, minlength=12).double()
    allowed = probs > 0
    assert counts[~allowed].sum() == 0                     # masked entries never drawn
    expected = probs[allowed] * rows
    assert expected.min() > 5
    chi2 = float(((counts[allowed] - expected) ** 2 / expected).sum())
    p_value = stats.chi2.sf(chi2, int(allowed.sum()) - 1)
    assert p_value > 1e-3, (chi2, p_value)


def test_the_decoder_picks_the_same_sets_with_the_search_tail():
    torch.manual_seed(0)
    dec = NDSDecoder(32, 4, poly_embedding_dim=16)
    enc = torch.randn(3, 30, 32)
    z = sample_z(3, 20, generator=torch.Generator().manual_seed(1))
    start = torch.randn(32)
    with torch.no_grad():                                  # the search tail
        fast, fast_logp = dec(enc, z, start, 6, generator=torch.Generator().manual_seed(2))
    slow, slow_logp = dec(enc.requires_grad_(), z, start, 6,      # the training path
                          generator=torch.Generator().manual_seed(2))
    assert torch.equal(fast[..., 0], slow[..., 0])         # first picks
    assert torch.equal(fast, slow)
    torch.testing.assert_close(fast_logp, slow_logp.detach(), rtol=1e-5, atol=1e-5)
    assert all(len(set(row.tolist())) == 6 for row in fast.view(-1, 6))


def test_gru_step_from_gathered_node_gates_equals_the_cell_bit_for_bit():
    torch.manual_seed(3)
    cell = torch.nn.GRUCell(24, 24)
    enc = torch.randn(4, 37, 24)
    hidden = torch.randn(4 * 50, 24)
    with torch.no_grad():
        node_gates = F.linear(enc, cell.weight_ih, cell.bias_ih)           # every node once
        for seed in range(3):
            pick = torch.randint(0, 37, (4, 50), generator=torch.Generator().manual_seed(seed))
            want = cell(take_rows(enc, pick).view(-1, 24), hidden)
            got = gru_step(cell, take_rows(node_gates, pick).view(-1, 72), hidden)
            assert torch.equal(got, want)
            hidden = want
