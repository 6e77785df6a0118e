"""DACT cyclic positional encoding as a module (original fixed code, or the paper's
Gray code with a learnable projection)."""

from __future__ import annotations

from torch import Tensor, nn

from pyg_routing.functional.index_pe import check_even_dim, check_variant, dact_cpe, gray_code


class DACTCyclicPE(nn.Module):
    r"""DACT CPE of nodes from their position ``i`` and route size ``L``.

    * ``variant="original"`` (default): DACT's fixed cyclic sinusoid code
      (:func:`~pyg_routing.functional.index_pe.dact_cpe`; Ma et al. 2021,
      yining043/VRP-DACT ``nets/graph_layers.py``) for a closed tour of ``L + 1``
      nodes; no learnable parameters.
    * ``variant="paper"`` (App. E): ``W · Gray(i mod L) + b``, the ``num_bits``
      Gray-code bits of :func:`~pyg_routing.functional.index_pe.gray_code` projected
      to ``dim`` by a learnable linear map.

    Unvisited customers (``i < 0``) get zeros (original) or the projection of the
    all-zero code, i.e. the bias ``b`` (paper).

    Args:
        dim: output width (even ``>= 2`` for the original variant).
        variant: ``"original"`` or ``"paper"``.
        num_bits: Gray-code bits (paper variant): routes up to ``2^num_bits``
            customers.

    Shapes:
        ``position [...]``, ``route_size [...]`` -> ``[..., dim]``.
    """

    def __init__(self, dim: int, variant: str = "original", num_bits: int = 16) -> None:
        super().__init__()
        check_variant(variant)
        if variant == "original":
            check_even_dim(dim, "DACTCyclicPE(variant='original')")
        elif not isinstance(dim, int) or dim < 1:
            raise ValueError(f"DACTCyclicPE needs dim >= 1, got dim={dim}")
        self.dim = dim
        self.variant = variant
        self.num_bits = num_bits
        self.proj = nn.Linear(num_bits, dim) if variant == "paper" else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.proj is not None:
            self.proj.reset_parameters()

    def forward(self, position: Tensor, route_size: Tensor) -> Tensor:
        if self.proj is None:
            return dact_cpe(position, route_size, self.dim, "original")
        bits = gray_code(position, route_size, self.num_bits, dtype=self.proj.weight.dtype)
        return self.proj(bits)

    def __repr__(self) -> str:
        extra = f", num_bits={self.num_bits}" if self.variant == "paper" else ""
        return f"{type(self).__name__}(dim={self.dim}, variant={self.variant!r}{extra})"
