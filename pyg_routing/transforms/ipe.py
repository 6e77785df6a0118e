"""The ``IPE`` transform: distance-indexed, circular in-route encoding."""

from __future__ import annotations

import torch
from torch import Tensor

from pyg_routing.functional.route_pe import check_ipe_dim, index_ipe, ipe
from pyg_routing.options import AMPLITUDES, FREQUENCIES, PHASES
from pyg_routing.transforms._base import EncodingInputs, NodeEncoding


class IPE(NodeEncoding):
    r"""In-route positional encoding (paper Sec. 3.1): a multi-frequency sinusoid
    of the node's distance along its route, rescaled to one period,
    ``d̂_i = 2π d_i / d_L``.

    Output ``data[attr_name]``: ``[num_nodes, dim]``. The depot has phase 0,
    unvisited customers (PCVRP) an all-zero code, and a route of length 0 phase 0.

    Args:
        dim: encoding width (even for the direction-aware variant).
        direction: ``"aware"`` (interleaved sin/cos, distinguishes a route from its
            reversal), ``"invariant"`` (cosines only, reversal-invariant) or
            ``"auto"`` (the paper's choice: invariant for TSP/CVRP, aware for
            VRPTW, PCVRP, PDTSP and PDPTW; and aware for any instance with an
            asymmetric cost matrix or open routes, where a reversal costs
            differently; decided per graph of a batch).
        frequencies: ``"harmonic"`` (default, ``ω_k = k + 1``: exactly circular and
            reversal-invariant) or ``"geometric"`` (``ω_k = base^(-2k/dim)`` as
            printed in the paper, which breaks both properties).
        base: λ of the geometric frequencies.
        amplitude: ``"inverse_square"`` (default: the ``k``-th frequency scaled by
            ``(k + 1)^-2``, so that code distances follow route distance),
            ``"inverse"`` (``(k + 1)^-1``) or ``"flat"`` (the paper's equal amplitudes).
        phase: ``"distance"`` (default, ``2π d_i / d_L``) or ``"index"`` (``2π i / L``
            with ``L`` the route's arcs: the paper's index-based ablation, Tab. 8;
            :func:`~pyg_routing.functional.route_pe.index_ipe`).
        attr_name: attribute to store the encoding in; ``None`` concatenates it
            onto ``data.x``.
    """

    def __init__(self, dim: int = 64, direction: str = "auto", frequencies: str = "harmonic",
                 base: float = 10000.0, attr_name: str | None = "ipe",
                 amplitude: str = "inverse_square", phase: str = "distance") -> None:
        if direction != "auto":
            check_ipe_dim(dim, direction)
        elif dim < 2 or dim % 2:
            raise ValueError(f"IPE(direction='auto') needs an even dim >= 2, got dim={dim}")
        if frequencies not in FREQUENCIES:
            raise ValueError(f"unknown frequencies {frequencies!r}; choose from {FREQUENCIES}")
        if amplitude not in AMPLITUDES:
            raise ValueError(f"unknown amplitude {amplitude!r}; choose from "
                             f"{tuple(AMPLITUDES)}")
        if phase not in PHASES:
            raise ValueError(f"unknown IPE phase {phase!r}; choose from {PHASES}")
        self.amplitude = amplitude
        self.phase = phase
        self.dim = dim
        self.direction = direction
        self.frequencies = frequencies
        self.base = base
        self.attr_name = attr_name

    @property
    def width(self) -> int:
        return self.dim

    def code(self, inputs: EncodingInputs) -> Tensor:
        by = type(self).__name__
        kwargs = dict(frequencies=self.frequencies, base=self.base, amplitude=self.amplitude,
                      open_route=inputs.node_open_routes())
        if self.phase == "index":
            sizes = inputs.route_size(by)

            def encode(direction: str) -> Tensor:
                return index_ipe(inputs.route_pos, sizes, self.dim, direction,
                                 dtype=inputs.dtype, **kwargs)
        else:
            inputs.need(by, "cum_dist", "route_length", "route_pos")

            def encode(direction: str) -> Tensor:
                return ipe(inputs.cum_dist, inputs.route_length, self.dim, direction,
                           route_pos=inputs.route_pos, **kwargs)
        if self.direction != "auto":
            return encode(self.direction)
        # "auto", resolved here only: per graph, from its problem and costs.
        aware = inputs.direction_sensitive
        if bool(aware.all()) or not bool(aware.any()):
            return encode("aware" if bool(aware.all()) else "invariant")
        per_node = aware[inputs.batch].unsqueeze(-1)
        return torch.where(per_node, encode("aware"), encode("invariant"))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, direction={self.direction!r}, "
                f"frequencies={self.frequencies!r}, amplitude={self.amplitude!r}"
                + (f", phase={self.phase!r})" if self.phase != "distance" else ")"))
