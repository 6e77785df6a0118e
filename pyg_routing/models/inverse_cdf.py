"""The inverse-CDF draw of one index per row, on the CPU in one numba pass per row.

:func:`~pyg_routing.models.sampling.sample_categorical` draws index ``k`` of a row ``p``
(non-negative, not necessarily normalised) for a uniform ``u``: the first ``k`` whose
running sum ``c_k = p_0 + ... + p_k`` (in float64) exceeds ``u * total``, capped at the
first ``k`` whose running sum reaches ``total = c_{M-1}``. Written in torch that is a
float64 copy of the rows, their ``cumsum`` and two ``searchsorted``: two float64
temporaries the size of the rows and four passes through memory (:func:`inverse_cdf`
keeps that form for other devices and dtypes). On the CPU :func:`draw_rows` does the
same per row with two sequential float64 sums and no temporary.

The sums are the same sequential float64 additions as torch's CPU ``cumsum``, so the
picks equal the torch form's bit for bit, and so do the edge cases: an all-zero row
draws 0, a row with an infinite entry draws its first one, a row whose total is NaN
draws ``M`` (out of range, as ``searchsorted`` answers). The tests compare the kernel,
its pure-Python reference :func:`draw_rows_reference` and the torch form.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch import Tensor

#: The row dtypes the kernel reads; others (bf16, fp16) take the torch form.
KERNEL_DTYPES = (torch.float32, torch.float64)


@njit(cache=True, nogil=True)
def _draw_kernel(probs, u, picks, totals):  # pragma: no cover - compiled by numba
    rows, m = probs.shape
    for r in range(rows):
        total = 0.0
        for j in range(m):
            total += np.float64(probs[r, j])
        target = u[r] * total
        acc = 0.0
        k = m
        for j in range(m):
            acc += np.float64(probs[r, j])
            if acc > target or acc >= total:
                k = j
                break
        picks[r] = k
        totals[r] = total


def draw_rows_reference(probs: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's rules in plain Python (for tests): ``(picks [R] int64, totals [R]
    float64)`` of ``probs [R, M]`` and ``u [R]``."""
    rows, m = probs.shape
    picks, totals = np.empty(rows, np.int64), np.empty(rows, np.float64)
    for r in range(rows):
        total = 0.0
        for j in range(m):
            total += float(probs[r, j])
        target = float(u[r]) * total
        acc, k = 0.0, m
        for j in range(m):
            acc += float(probs[r, j])
            if acc > target or acc >= total:
                k = j
                break
        picks[r], totals[r] = k, total
    return picks, totals


def kernel_applies(probs: Tensor) -> bool:
    """Whether :func:`draw_rows` can run on ``probs`` (a 2-D float32/float64 CPU tensor)."""
    return probs.device.type == "cpu" and probs.dtype in KERNEL_DTYPES and probs.dim() == 2


def inverse_cdf(probs: Tensor, uniform: Tensor) -> tuple[Tensor, Tensor]:
    """One index per row of ``probs [R, M]`` (non-negative) for the uniforms ``uniform
    [R, 1]``: ``(picks [R] long, totals [R, 1] float64)`` on ``probs``' device, by the
    rule of the module docstring: :func:`draw_rows` where :func:`kernel_applies`, else
    torch's float64 ``cumsum`` and ``searchsorted``."""
    if kernel_applies(probs):
        return draw_rows(probs, uniform)
    cdf = probs.cumsum(-1, dtype=torch.float64)
    total = cdf[:, -1:].contiguous()      # searchsorted copies (and warns) otherwise
    idx = torch.searchsorted(cdf, uniform * total, right=True)
    return torch.minimum(idx, torch.searchsorted(cdf, total)).squeeze(1), total


def draw_rows(probs: Tensor, uniform: Tensor) -> tuple[Tensor, Tensor]:
    """One index per row of ``probs [R, M]`` (float32/float64 on the CPU; see
    :func:`kernel_applies`) for the uniforms ``uniform [R, 1]`` (float64): ``(picks [R]
    long, totals [R, 1] float64)``, the totals being the rows' float64 sums."""
    rows = probs.shape[0]
    picks = torch.empty(rows, dtype=torch.long)
    totals = torch.empty(rows, 1, dtype=torch.float64)
    if rows:
        _draw_kernel(probs.detach().contiguous().numpy(),
                     uniform.detach().to(torch.float64).reshape(rows).contiguous().numpy(),
                     picks.numpy(), totals.view(rows).numpy())
    return picks, totals
