"""RoPE: rotary query/key encoding by within-route position (Su et al. 2024)."""

from __future__ import annotations

from torch import Tensor, nn

from pyg_routing.functional.index_pe import check_even_dim
from pyg_routing.functional.pair_pe import apply_rotary


class RotaryPE(nn.Module):
    r"""Rotary PE (paper App. E): rotates each channel pair ``(2k, 2k+1)`` of queries
    and keys by ``θ_i = i · base^{-2k/D}`` (``D`` = head dim, ``i`` = within-route
    position), so the logit ``<R_{θ_i} q, R_{θ_j} k>`` depends only on ``i - j``.

    Apply it to the projected queries and keys of every attention layer, before the
    dot product. Negative positions (unvisited, padding) are not rotated. No
    learnable parameters.

    Args:
        head_dim: ``D``, even ``>= 2``.
        base: ``λ`` (10,000).

    Shapes:
        ``q, k [B, H, N, D]``, ``position [B, N]`` (or ``[N]``) -> ``(q, k)`` rotated.
    """

    def __init__(self, head_dim: int, base: float = 1e4) -> None:
        super().__init__()
        check_even_dim(head_dim, "RotaryPE (head_dim)")
        self.head_dim = head_dim
        self.base = float(base)

    def reset_parameters(self) -> None:
        """No learnable parameters."""

    def forward(self, q: Tensor, k: Tensor, position: Tensor) -> tuple[Tensor, Tensor]:
        if q.size(-1) != self.head_dim:
            raise ValueError(f"RotaryPE(head_dim={self.head_dim}) got queries with head dim "
                             f"{q.size(-1)}")
        return apply_rotary(q, k, position, self.base)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(head_dim={self.head_dim}, base={self.base:g})"
