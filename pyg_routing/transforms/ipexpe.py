"""The ``IPEXPE`` transform: the paper's full hierarchical encoding."""

from __future__ import annotations

import torch
from torch import Tensor

from pyg_routing.transforms._base import EncodingInputs, NodeEncoding
from pyg_routing.transforms.ipe import IPE
from pyg_routing.transforms.xpe import XPE


class IPEXPE(NodeEncoding):
    r"""``[IPE ‖ XPE]`` per node (paper Sec. 3): ``[num_nodes, dim + 2 * num_bands]``.

    Args:
        dim: IPE width.
        num_bands: XPE bands ``K`` (XPE adds ``2K`` channels).
        direction, frequencies, base, amplitude, phase: as in :class:`IPE`.
        aggregation: as in :class:`XPE` (``"node"``: the paper's per-node XPE).
        reference: XPE's reference point on multi-depot solutions, as in :class:`XPE`.
        attr_name: attribute name; ``None`` concatenates onto ``data.x``.
    """

    def __init__(self, dim: int = 64, num_bands: int = 4, direction: str = "auto",
                 frequencies: str = "harmonic", base: float = 10000.0,
                 attr_name: str | None = "pe", amplitude: str = "inverse_square",
                 phase: str = "distance", aggregation: str = "node",
                 reference: str = "first") -> None:
        self.ipe = IPE(dim, direction, frequencies, base, attr_name=None, amplitude=amplitude,
                       phase=phase)
        self.xpe = XPE(num_bands, None, attr_name=None, aggregation=aggregation,
                       reference=reference)
        self.attr_name = attr_name

    @property
    def width(self) -> int:
        return self.ipe.width + self.xpe.width

    def code(self, inputs: EncodingInputs) -> Tensor:
        return torch.cat([self.ipe.code(inputs), self.xpe.code(inputs)], dim=-1)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.ipe.dim}, num_bands={self.xpe.num_bands}, "
                f"direction={self.ipe.direction!r}, frequencies={self.ipe.frequencies!r}, "
                f"amplitude={self.ipe.amplitude!r}"
                + (f", phase={self.ipe.phase!r}" if self.ipe.phase != "distance" else "")
                + (f", aggregation={self.xpe.aggregation!r}"
                   if self.xpe.aggregation != "node" else "")
                + (f", reference={self.xpe.reference!r}"
                   if self.xpe.reference != "first" else "") + ")")
