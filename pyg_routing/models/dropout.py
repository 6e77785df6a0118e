"""``BitDropout``: dropout whose CPU masks are drawn as 16 random bits per entry.

``nn.Dropout`` on the CPU draws its mask with ``bernoulli_``, one generator call per
entry: 7–8 ns an entry on the development machine, so DACT's aggregation MLP (dropout
0.05 on ``[B, M, M, 32]`` activations, drawn again when a checkpointed slice is
recomputed) spent a fifth of a PPO update of DACT's own network drawing masks.
:class:`BitDropout` fills 64-bit words from torch's generator (``random_``, four
entries per word, 1–2 ns an entry) and keeps an entry where its 16
bits, read as a signed integer, are at least ``t - 2^15`` with ``t = round(p 2^16)``:
each entry is dropped with probability ``q = t / 2^16`` (``p`` rounded to a multiple of
``2^-16``: 0.05 -> 0.0500030518) and kept ones are scaled by ``1 / (1 - q)``, so the
output's expectation is the input, as with ``nn.Dropout``. The masks come from torch's
global generator like ``nn.Dropout``'s (``torch.manual_seed`` fixes them, and
``torch.utils.checkpoint`` redraws the same ones when it recomputes), but they are other
draws than ``bernoulli_``'s. On other devices (CUDA's dropout is a fused kernel) it is
``F.dropout``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

#: the resolution of the drop probability: 16 random bits per entry
BITS = 16


def drop_threshold(p: float) -> int:
    """``t = round(p 2^16)``: an entry is dropped when its 16 bits (unsigned) are below
    ``t``, with probability ``t / 2^16``."""
    return round(p * (1 << BITS))


def bit_dropout_mask(like: Tensor, p: float) -> Tensor:
    """The scaled keep-mask of :class:`BitDropout` for ``like`` (its shape, dtype and
    device): ``1 / (1 - q)`` where kept, 0 where dropped (``q``: :func:`drop_threshold`
    over ``2^16``)."""
    t = drop_threshold(p)
    n = like.numel()
    words = torch.empty((n + 3) // 4, dtype=torch.int64, device=like.device)
    words.random_(-(1 << 63), None)                 # all 64 bits uniform
    bits = words.view(torch.int16)[:n].view(like.shape)
    mask = torch.empty(like.shape, dtype=like.dtype, device=like.device)
    torch.ge(bits, t - (1 << (BITS - 1)), out=mask)
    return mask.mul_((1 << BITS) / ((1 << BITS) - t))


class BitDropout(nn.Module):
    """``nn.Dropout(p)`` with the CPU masks of :func:`bit_dropout_mask` (see the module
    docstring); the identity in eval mode. Shapes: any -> the same."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, got {p!r}")
        self.p = float(p)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu" or drop_threshold(self.p) == 1 << BITS:
            return F.dropout(x, self.p, training=True)    # CUDA's fused kernel; or all dropped
        return x * bit_dropout_mask(x, self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"
