"""The ``SinusoidalPE`` transform: SIN of the within-route position (paper App. E)."""

from __future__ import annotations

from torch import Tensor

from pyg_routing.functional.index_pe import check_even_dim, sinusoidal_pe
from pyg_routing.transforms._base import EncodingInputs, NodeEncoding


class SinusoidalPE(NodeEncoding):
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

    @property
    def width(self) -> int:
        return self.dim

    def code(self, inputs: EncodingInputs) -> Tensor:
        inputs.need(type(self).__name__, "route_pos")
        return sinusoidal_pe(inputs.route_pos, self.dim, self.base, dtype=inputs.dtype)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, base={self.base:g}, "
                f"attr_name={self.attr_name!r})")
