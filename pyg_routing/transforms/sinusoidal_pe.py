"""The ``SinusoidalPE`` transform: SIN of the within-route position (paper App. E)."""

from __future__ import annotations

from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from pyg_routing.functional.index_pe import check_even_dim, node_route_inputs, sinusoidal_pe
from pyg_routing.transforms._base import set_node_attr


class SinusoidalPE(BaseTransform):
    r"""Sinusoidal PE of the within-route position ``i`` (Vaswani et al. 2017):
    ``PE_{2k} = sin(i / base^{2k/D})``, ``PE_{2k+1} = cos(i / base^{2k/D})``.

    Output ``data[attr_name]``: ``[num_nodes, dim]``. The depot (``i = 0``) gets
    ``[0, 1, 0, 1, ...]``, unvisited customers (PCVRP) all zeros. Works on a
    ``RoutingData`` or a ``Batch`` of them.

    Args:
        dim: even width ``>= 2``.
        base: ``λ`` (10,000 in the paper).
        attr_name: attribute to store the encoding in; ``None`` concatenates it
            onto ``data.x``.

    Raises:
        NoSolutionError: the instance has no solution (no route positions).
    """

    def __init__(self, dim: int = 64, base: float = 1e4,
                 attr_name: str | None = "sin_pe") -> None:
        check_even_dim(dim, "SinusoidalPE")
        self.dim = dim
        self.base = float(base)
        self.attr_name = attr_name

    def encode(self, data: Data) -> Tensor:
        """The ``[num_nodes, dim]`` encoding, without storing it."""
        route_pos, _ = node_route_inputs(data)
        return sinusoidal_pe(route_pos, self.dim, self.base, dtype=data.pos.dtype)

    def forward(self, data: Data) -> Data:
        return set_node_attr(data, self.encode(data), self.attr_name)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, base={self.base:g}, "
                f"attr_name={self.attr_name!r})")
