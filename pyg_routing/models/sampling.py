"""Sampling one index per row of a categorical distribution, shared by the decoders."""

from __future__ import annotations

import torch
from torch import Tensor


def sample_categorical(probs: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """One index per row of ``probs [B, K]`` (rows need not be normalized), by
    inverse-CDF sampling: one uniform number per row, where ``torch.multinomial``
    draws ``K`` exponentials per row (it dominated small 2-opt steps and NDS's
    15-step decoder at N = 500: 27 ms against 1.3 ms per step for 1 600 rows).

    Zero-probability entries are never drawn: the index is the first whose CDF
    exceeds ``u * total``, capped at the first index where the CDF reaches the total
    (which has positive probability), for the rare ``u * total`` that rounds up to
    the total. Returns ``[B]`` long on ``probs``' device.
    """
    cdf = probs.double().cumsum(-1)
    total = cdf[:, -1:].contiguous()      # searchsorted copies (and warns) otherwise
    u = torch.rand(probs.size(0), 1, generator=generator, device=probs.device,
                   dtype=torch.float64) * total
    idx = torch.searchsorted(cdf, u, right=True)
    return torch.minimum(idx, torch.searchsorted(cdf, total)).squeeze(1)
