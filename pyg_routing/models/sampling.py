"""Sampling one index per row of a categorical distribution, shared by the decoders."""

from __future__ import annotations

import torch
from torch import Tensor


def uniforms(rows: int, generator: torch.Generator | None = None,
             device: torch.device | str | None = None) -> Tensor:
    """The ``[rows, 1]`` float64 uniforms :func:`sample_categorical` draws for ``rows``
    rows. Drawn once for a batch that is then sampled in slices (``uniform=``), they
    give exactly the picks of one call on the whole batch."""
    return torch.rand(rows, 1, generator=generator, device=device, dtype=torch.float64)


def sample_categorical(probs: Tensor, generator: torch.Generator | None = None,
                       uniform: Tensor | None = None) -> Tensor:
    """One index per row of ``probs [B, K]`` (rows need not be normalized), by
    inverse-CDF sampling: one uniform number per row, where ``torch.multinomial``
    draws ``K`` exponentials per row (it dominated small 2-opt steps and NDS's
    15-step decoder at N = 500: 27 ms against 1.3 ms per step for 1 600 rows).

    Zero-probability entries are never drawn: the index is the first whose CDF
    exceeds ``u * total``, capped at the first index where the CDF reaches the total
    (which has positive probability), for the rare ``u * total`` that rounds up to
    the total. ``uniform``: the rows' ``u`` (``[B, 1]`` float64, :func:`uniforms`)
    instead of a draw from ``generator``. Returns ``[B]`` long on ``probs``' device.
    """
    cdf = probs.cumsum(-1, dtype=torch.float64)       # cast on the fly: one pass
    total = cdf[:, -1:].contiguous()      # searchsorted copies (and warns) otherwise
    if uniform is None:
        uniform = uniforms(probs.size(0), generator, probs.device)
    u = uniform * total
    idx = torch.searchsorted(cdf, u, right=True)
    return torch.minimum(idx, torch.searchsorted(cdf, total)).squeeze(1)
