"""Multi-head attention that takes the routing encodings (additive bias, rotary q/k), and
the per-instance normalisation of N2S and DACT (:func:`instance_norm`)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pyg_routing.models.pe.rope import RotaryPE


class RouteAttention(nn.Module):
    r"""Multi-head self-attention over dense node sets with an optional additive
    bias ``[B, H or 1, N, N]`` (RPE, ALiBi, SPD) and optional rotary positions
    (RoPE), computed with :func:`torch.nn.functional.scaled_dot_product_attention`.

    Args:
        dim: model width (divisible by ``heads``).
        heads: number of heads ``H``.
        dropout: attention dropout (training only).
        rotary: a :class:`~pyg_routing.models.pe.RotaryPE` applied to q and k.

    Shapes: ``x [B, N, dim]``, ``mask [B, N]`` (True = real node; ``None``: no
    padding) -> ``[B, N, dim]``.
    """

    def __init__(self, dim: int, heads: int, dropout: float = 0.0,
                 rotary: RotaryPE | None = None) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim={dim} must be divisible by heads={heads}")
        self.dim, self.heads, self.dropout = dim, heads, dropout
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.rotary = rotary
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.qkv.reset_parameters()
        self.out.reset_parameters()

    def forward(self, x: Tensor, mask: Tensor | None, bias: Tensor | None = None,
                position: Tensor | None = None) -> Tensor:
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        if self.rotary is not None:
            if position is None:
                raise ValueError("rotary attention needs the within-route positions")
            q, k = self.rotary(q, k, position)
        # Padded keys are masked out; padded query rows attend to themselves only so
        # softmax never sees an all -inf row (their outputs are dropped anyway).
        # ``mask=None`` (no padding, e.g. equal-size search batches) without a bias lets
        # SDPA pick its fused kernel with no [B, 1, N, N] mask at all.
        logits_bias = None
        if mask is not None:
            key_ok = mask[:, None, None, :] | torch.eye(n, dtype=torch.bool, device=x.device)
            logits_bias = torch.zeros(b, 1, n, n, dtype=q.dtype, device=x.device)
            logits_bias = logits_bias.masked_fill(~key_ok, float("-inf"))
        if bias is not None:
            bias = torch.nan_to_num(bias.to(q.dtype), neginf=-1e9)
            logits_bias = bias if logits_bias is None else logits_bias + bias
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=logits_bias,
                                             dropout_p=self.dropout if self.training else 0.0)
        return self.out(out.transpose(1, 2).reshape(b, n, self.dim))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, heads={self.heads}, "
                f"rotary={self.rotary is not None})")


def instance_norm(x: Tensor, eps: float = 1e-5) -> Tensor:
    """N2S's and DACT's ``'layer'`` normalisation: per instance over all nodes and
    channels, no affine parameters (``x [B, M, D]``). Not ``nn.LayerNorm`` (per node)
    nor BatchNorm.

    N2S divides by the UNBIASED deviation, ``(x - mean) / sqrt(var_u + eps)`` with
    ``var_u = n / (n - 1) var`` over ``n = M D`` values; that is ``layer_norm`` over the
    flattened instance with ``eps (n - 1) / n``, times ``sqrt((n - 1) / n)``: one fused
    kernel instead of four passes over ``x``.
    """
    b, m, d = x.shape
    n = m * d
    ratio = (n - 1) / n
    out = F.layer_norm(x.reshape(b, n), (n,), eps=eps * ratio)
    # in place on the fresh output, whose value the norm's backward does not read
    return out.mul_(math.sqrt(ratio)).view(b, m, d)
