"""The ``DACTCPE`` transform: DACT's cyclic positional encoding of route positions."""

from __future__ import annotations

from torch import Tensor

from pyg_routing.functional.index_pe import (
    check_even_dim,
    check_variant,
    dact_cpe,
    gray_code,
)
from pyg_routing.transforms._base import EncodingInputs, NodeEncoding

#: what the CPE's position counts: within each route (the paper's App. E) or along the
#: one cycle of all routes joined by depot copies (VRP-DACT's CVRP model)
SCOPES = ("route", "tour")


class DACTCPE(NodeEncoding):
    r"""DACT cyclic positional encoding (Ma et al. 2021) of the within-route position
    ``i``, with ``L`` the number of customers on the node's route.

    * ``variant="original"`` (default; yining043/VRP-DACT ``nets/graph_layers.py``,
      ``Cyclic_Positional_Encoding``): DACT's fixed code for a closed tour of
      ``L + 1`` nodes (triangle-wave sinusoids over a set of periods, mean-pooled
      over cyclic neighbours and centred); position ``L + 1`` wraps onto the depot.
      The depot uses the largest route of its graph (for a TSP: DACT exactly).
      Output ``[num_nodes, dim]``, ``dim`` even.
    * ``variant="paper"`` (App. E): the raw bits of ``Gray(i mod L)``, ``dim`` bits
      (least significant first), ``[num_nodes, dim]`` in ``{0, 1}``. The paper
      projects them with a learnable linear map: use
      :class:`pyg_routing.models.pe.DACTCyclicPE` (``variant="paper"``,
      ``num_bits=dim``) or any ``Linear(dim, D)`` on this attribute.

    See :func:`~pyg_routing.functional.index_pe.dact_cpe`. Unvisited customers
    (PCVRP) get all zeros.

    ``scope="tour"`` is VRP-DACT's own CVRP input: the position of a node along the
    whole solution kept as ONE cycle (the 2-opt state: routes joined by depot copies,
    depot copy 0 at position 0), on a cycle of all ``M`` nodes
    (:attr:`EncodingInputs.cycle_pos`; VRP-DACT's ``visited_time % seq_length``).
    Only a search state that keeps such a cycle has it. On a TSP both scopes agree.

    Args:
        dim: width (original: even ``>= 2``; paper: number of bits ``>= 1``).
        variant: ``"original"`` or ``"paper"``.
        attr_name: attribute to store the encoding in; ``None`` concatenates it
            onto ``data.x``.
        scope: ``"route"`` (default, the paper's) or ``"tour"`` (VRP-DACT's CVRP).

    Raises:
        NoSolutionError: the instance has no solution.
        ValueError: (paper) a route needs more than ``dim`` bits.
    """

    def __init__(self, dim: int = 64, variant: str = "original",
                 attr_name: str | None = "dact_cpe", scope: str = "route") -> None:
        check_variant(variant)
        if scope not in SCOPES:
            raise ValueError(f"unknown DACT CPE scope {scope!r}; choose from {SCOPES}")
        if variant == "original":
            check_even_dim(dim, "DACTCPE(variant='original')")
        elif not isinstance(dim, int) or dim < 1:
            raise ValueError(f"DACTCPE(variant='paper') needs dim >= 1 Gray-code bits, "
                             f"got dim={dim}")
        self.dim = dim
        self.variant = variant
        self.attr_name = attr_name
        self.scope = scope

    @property
    def width(self) -> int:
        return self.dim

    def code(self, inputs: EncodingInputs) -> Tensor:
        by = type(self).__name__
        if self.scope == "route":
            size = inputs.route_size(by)
            return dact_cpe(inputs.route_pos, size, self.dim, self.variant, dtype=inputs.dtype)
        m = inputs.cycle_size(f"{by}(scope='tour')")
        pos = inputs.cycle_pos
        if self.variant == "paper":                          # Gray(i mod M)
            return gray_code(pos, pos.new_full((), m), self.dim, dtype=inputs.dtype)
        # the original's closed tour of L + 1 = M positions
        return dact_cpe(pos, pos.new_full(pos.shape, m - 1), self.dim, dtype=inputs.dtype)

    def __repr__(self) -> str:
        scope = "" if self.scope == "route" else f", scope={self.scope!r}"
        return (f"{type(self).__name__}(dim={self.dim}, variant={self.variant!r}, "
                f"attr_name={self.attr_name!r}{scope})")
