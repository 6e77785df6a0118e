"""APE: a learnable table indexed by within-route position (Gehring et al. 2017)."""

from __future__ import annotations

from collections.abc import Iterable

from torch import Tensor, nn
from torch_geometric.data import Data

from pyg_routing.functional.index_pe import max_route_length


class AbsolutePE(nn.Module):
    r"""Absolute PE (paper App. E): ``PE(v_i) = E_i`` with ``E ∈ R^{(L_max + 1) × D}``
    learnable, indexed by the within-route position ``i``.

    Rows: ``0`` is the depot (learnable, shared by all routes), ``1..L_max`` the
    customer positions. Unvisited customers (``i < 0``) get an all-zero vector
    (not learnable). ``L_max`` is the largest route size seen in training; build the
    module with :meth:`from_data` to read it from a dataset.

    Args:
        dim: ``D``, width of the encoding (``>= 1``).
        max_len: ``L_max``, largest position the table holds.
        clamp: ``False`` (default): a position above ``max_len`` raises
            ``ValueError``; ``True``: such positions use row ``max_len``.

    Shapes:
        ``route_pos [...]`` (integer) -> ``[..., dim]``.
    """

    def __init__(self, dim: int, max_len: int, clamp: bool = False) -> None:
        super().__init__()
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"AbsolutePE needs dim >= 1, got dim={dim}")
        if not isinstance(max_len, int) or max_len < 1:
            raise ValueError(f"AbsolutePE needs max_len >= 1, got max_len={max_len}")
        self.dim = dim
        self.max_len = max_len
        self.clamp = clamp
        self.embedding = nn.Embedding(max_len + 1, dim)
        self.reset_parameters()

    @classmethod
    def from_data(cls, data: Data | Iterable[Data], dim: int, clamp: bool = False,
                  ) -> AbsolutePE:
        """An ``AbsolutePE`` with ``max_len`` = the largest route size in ``data`` (a
        ``RoutingData``, ``Batch``, dataset or iterable of solved instances).

        Raises:
            NoSolutionError: an instance has no solution.
        """
        return cls(dim, max(1, max_route_length(data)), clamp=clamp)

    def reset_parameters(self) -> None:
        self.embedding.reset_parameters()

    def forward(self, route_pos: Tensor) -> Tensor:
        """``[..., dim]`` encoding of integer positions ``route_pos [...]``."""
        if route_pos.is_floating_point():
            raise ValueError(f"AbsolutePE needs integer positions, got {route_pos.dtype}")
        pos = route_pos.long()
        if self.clamp:
            pos = pos.clamp(max=self.max_len)
        elif pos.numel() and int(pos.max()) > self.max_len:
            raise ValueError(
                f"AbsolutePE: position {int(pos.max())} is above max_len={self.max_len} "
                f"(the longest route seen in training); rebuild with a larger max_len "
                f"(AbsolutePE.from_data) or pass clamp=True")
        out = self.embedding(pos.clamp(min=0))
        return out * (pos >= 0).unsqueeze(-1).to(out.dtype)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, max_len={self.max_len}"
                f"{', clamp=True' if self.clamp else ''})")
