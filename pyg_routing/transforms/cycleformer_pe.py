"""The ``CycleFormerPE`` transform: CycleFormer's circular PE of the within-route position."""

from __future__ import annotations

from torch import Tensor

from pyg_routing.functional.index_pe import (
    check_even_dim,
    check_variant,
    cycleformer_pe,
)
from pyg_routing.transforms._base import EncodingInputs, NodeEncoding


class CycleFormerPE(NodeEncoding):
    r"""CycleFormer circular PE (Yook et al. 2024) of the within-route position ``i``,
    with ``L`` the number of customers on the node's route; interleaved sin/cos
    with the SIN frequencies ``ω_k = base^{-2k/D}``.

    * ``variant="original"`` (default; Giventicket/CycleFormer ``model.py``,
      ``PositionalEncoding_Circular``): ``sin/cos(i ω_k + 2π i / (L + 1))``: SIN plus
      a phase that turns once around the closed tour (depot + ``L`` customers;
      CycleFormer's ``max_len`` is the TSP size).
    * ``variant="paper"`` (App. E as printed): ``sin/cos(2π i / L · ω_k)``.

    See :func:`~pyg_routing.functional.index_pe.cycleformer_pe`. The depot
    (``i = 0``) gets ``[0, 1, 0, 1, ...]``, unvisited customers all zeros.

    Args:
        dim: even width ``>= 2``.
        variant: ``"original"`` or ``"paper"``.
        base: ``λ`` of the frequencies (10,000).
        attr_name: attribute to store the encoding in; ``None`` concatenates it
            onto ``data.x``.

    Raises:
        NoSolutionError: the instance has no solution.
    """

    def __init__(self, dim: int = 64, variant: str = "original", base: float = 1e4,
                 attr_name: str | None = "cycleformer_pe") -> None:
        check_even_dim(dim, "CycleFormerPE")
        check_variant(variant)
        self.dim = dim
        self.variant = variant
        self.base = float(base)
        self.attr_name = attr_name

    @property
    def width(self) -> int:
        return self.dim

    def code(self, inputs: EncodingInputs) -> Tensor:
        size = inputs.route_size(type(self).__name__)
        return cycleformer_pe(inputs.route_pos, size, self.dim, self.variant, self.base,
                              dtype=inputs.dtype)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, variant={self.variant!r}, "
                f"base={self.base:g}, attr_name={self.attr_name!r})")
