"""The tail of an NDS decoder step in one pass, for the search (no gradient, CPU).

A decoder step ends with the pick of one customer per rollout from the compatibilities
``s [R, M]`` (``R = B K`` rollouts, ``M = N + 1`` nodes): the logits
``C tanh(s / sqrt(d)) + mask``, the softmax at temperature ``T``, and the inverse-CDF
draw of :func:`~pyg_routing.models.sampling.sample_categorical` with one uniform ``u``
per row. Written with torch, that is about ten passes over ``[R, M]`` (scale, tanh,
clip, mask, temperature, log-softmax, exp, the float64 cast and cumulative sum, the
search) and as many ``[R, M]`` temporaries (1 600 x 501 at CVRP-500). Here each row
is read once into an ``M``-long float64 buffer, in cache:

1. ``l_j = (C tanh(s_j / sqrt(d)) + mask_j) / T`` (float32, as torch computes it) and
   its maximum;
2. ``p_j = exp(l_j - max)`` (float64) and their running sum, the CDF up to a factor;
3. the first ``j`` whose running sum exceeds ``u * total``, capped at the first ``j``
   where it reaches the total (a positive entry), and ``log p_j / total``.

That is the law of ``sample_categorical(softmax(l))``: the same ``u`` picks the same
customer except where ``u * total`` falls within rounding (about ``1e-7`` relative) of a
CDF step, and the log-probability is the log-softmax's up to rounding. The decoder
uses it where no gradient is needed (the search's removal sets) on the CPU; training,
which backpropagates through the log-probabilities, and CUDA keep the torch path.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit, prange
from torch import Tensor


@njit(cache=True, parallel=True)
def _pick_rows(scores, mask, uniform, scale, clip, temperature, picks, log_prob):
    rows, m = scores.shape
    for r in prange(rows):
        weights = np.empty(m)
        top = -np.inf
        for j in range(m):
            # float32 arithmetic, in torch's order: (clip * tanh(s * scale) + mask) / T
            logit = np.float32(np.float32(clip) * np.float32(
                math.tanh(np.float32(scores[r, j] * np.float32(scale))))) + mask[r, j]
            logit = np.float32(logit / np.float32(temperature))
            weights[j] = logit
            if logit > top:
                top = logit
        total = 0.0
        for j in range(m):
            weights[j] = math.exp(weights[j] - top)
            total += weights[j]
        target = uniform[r] * total
        pick, cap, acc = -1, m - 1, 0.0
        for j in range(m):
            acc += weights[j]
            if pick < 0 and acc > target:
                pick = j
            if acc >= total:
                cap = j
                break
        if pick < 0 or pick > cap:
            pick = cap
        picks[r] = pick
        log_prob[r] = math.log(weights[pick] / total) if total > 0.0 else -np.inf


def fused_pick(scores: Tensor, mask: Tensor, uniform: Tensor, scale: float, clip: float,
               temperature: float) -> tuple[Tensor, Tensor]:
    """One pick per row of ``scores [R, M]`` (float32, CPU) with the additive ``mask
    [R, M]`` (0 or ``-inf``) and uniforms ``uniform [R, 1]`` (float64): ``(picks [R]
    long, log_prob [R] float32)`` (see the module docstring). A row with no allowed
    entry gets a ``-inf`` log-probability."""
    scores = scores.detach().float().contiguous()
    mask = mask.detach().float().contiguous()
    rows = scores.size(0)
    picks = np.empty(rows, dtype=np.int64)
    log_prob = np.empty(rows, dtype=np.float64)
    _pick_rows(scores.numpy(), mask.numpy(), uniform.reshape(-1).double().numpy(),
               float(scale), float(clip), float(temperature), picks, log_prob)
    return torch.from_numpy(picks), torch.from_numpy(log_prob).float()
