"""The ``IPEXPE`` transform: the paper's full hierarchical encoding."""

from __future__ import annotations

import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from pyg_routing.transforms._base import set_node_attr
from pyg_routing.transforms.ipe import IPE
from pyg_routing.transforms.xpe import XPE


class IPEXPE(BaseTransform):
    r"""``[IPE ‖ XPE]`` per node (paper Sec. 3): ``[num_nodes, dim + 2 * num_bands]``.

    Args:
        dim: IPE width.
        num_bands: XPE bands ``K`` (XPE adds ``2K`` channels).
        direction, frequencies, base: as in :class:`IPE`.
        attr_name: attribute name; ``None`` concatenates onto ``data.x``.
    """

    def __init__(self, dim: int = 64, num_bands: int = 4, direction: str = "auto",
                 frequencies: str = "harmonic", base: float = 10000.0,
                 attr_name: str | None = "pe") -> None:
        self.ipe = IPE(dim, direction, frequencies, base, attr_name=None)
        self.xpe = XPE(num_bands, None, attr_name=None)
        self.attr_name = attr_name

    def encode(self, data: Data) -> torch.Tensor:
        return torch.cat([self.ipe.encode(data), self.xpe.encode(data)], dim=-1)

    def forward(self, data: Data) -> Data:
        return set_node_attr(data, self.encode(data), self.attr_name)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.ipe.dim}, num_bands={self.xpe.num_bands}, "
                f"direction={self.ipe.direction!r}, frequencies={self.ipe.frequencies!r})")
