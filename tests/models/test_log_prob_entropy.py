"""``log_prob_entropy``: ``Categorical``'s log-probability and entropy, with a
hand-written backward."""

import pytest
import torch
from torch.distributions import Categorical

from pyg_routing.models.sampling import log_prob_entropy, sample_categorical


def _masked_logits(b: int, k: int, dtype: torch.dtype, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    logits = 3 * torch.randn(b, k, generator=gen, dtype=dtype)
    allowed = torch.rand(b, k, generator=gen) < 0.6
    allowed[:, 0] = True                            # every row has an allowed entry
    allowed[1] = False
    allowed[1, min(3, k - 1)] = True                # a row with one allowed entry
    logits = logits.masked_fill(~allowed, float("-inf"))
    pick = sample_categorical(torch.softmax(logits, -1), gen)
    return logits, pick


@pytest.mark.parametrize("k", [1, 7, 50])
def test_values_and_gradients_are_categoricals(k):
    logits, pick = _masked_logits(6, k, torch.float64, seed=k)
    mine = logits.clone().requires_grad_()
    ref = logits.clone().requires_grad_()
    lp, ent = log_prob_entropy(mine, pick)
    dist = Categorical(logits=ref)
    want_lp, want_ent = dist.log_prob(pick), dist.entropy()
    assert lp.dtype == torch.float32 and ent.dtype == torch.float32
    torch.testing.assert_close(lp.double(), want_lp, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(ent.double(), want_ent, rtol=1e-6, atol=1e-6)
    # |g| < 1: Categorical's entropy multiplies the smallest float by it (above 1 it
    # overflows to -inf and its gradient turns NaN; a loss's mean keeps it small)
    g_lp, g_ent = (torch.rand(6, dtype=torch.float64) - 0.5 for _ in range(2))
    (lp.double() * g_lp + ent.double() * g_ent).sum().backward()
    (want_lp * g_lp + want_ent * g_ent).sum().backward()
    # Categorical's own gradient is NaN at masked entries (the masking ``where`` drops
    # it upstream); ours is 0 there, and equal elsewhere
    allowed = torch.isfinite(logits)
    torch.testing.assert_close(mine.grad[allowed], ref.grad[allowed], rtol=1e-5, atol=1e-6)
    assert (mine.grad[~allowed] == 0).all()


def test_one_output_alone_and_the_exact_rule():
    """Only the entropy, or only the log-probability, in the loss: each gradient by
    its own formula (``-p (l + H)``, ``1[a] - p``) on a small float32 example."""
    logits = torch.tensor([[0.5, -1.0, float("-inf"), 2.0]], requires_grad=True)
    pick = torch.tensor([3])
    lp, ent = log_prob_entropy(logits, pick)
    (g,) = torch.autograd.grad(ent.sum(), logits)
    p = torch.softmax(logits.detach(), -1)
    logp = torch.log_softmax(logits.detach(), -1).clamp(min=torch.finfo(torch.float32).min)
    torch.testing.assert_close(ent.detach(), -(p * logp).sum(-1))
    torch.testing.assert_close(g, -p * (logp + ent.detach().unsqueeze(1)))
    lp, _ = log_prob_entropy(logits, pick)
    (g,) = torch.autograd.grad(lp.sum(), logits)
    torch.testing.assert_close(g, torch.nn.functional.one_hot(pick, 4).float() - p)


def test_gradcheck_and_a_retained_graph():
    logits, pick = _masked_logits(3, 5, torch.float64, seed=1)
    finite = torch.where(torch.isfinite(logits), logits, torch.zeros(()))
    x = finite.clone().requires_grad_()
    # gradcheck on finite logits (finite differences of -inf are undefined); float32
    # inside, so loose tolerances
    assert torch.autograd.gradcheck(lambda z: log_prob_entropy(z, pick), (x,),
                                    eps=1e-3, atol=1e-3, rtol=1e-2)
    lp, ent = log_prob_entropy(x, pick)
    (lp + ent).sum().backward(retain_graph=True)
    first = x.grad.clone()
    (lp + ent).sum().backward()
    torch.testing.assert_close(x.grad, 2 * first)
