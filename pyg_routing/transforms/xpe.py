"""The ``XPE`` transform: depot-anchored angular encoding across routes."""

from __future__ import annotations

import torch
from torch import Tensor

from pyg_routing.data.route_quantities import depot_angle
from pyg_routing.functional.depot_reference import check_reference, depot_code_angle
from pyg_routing.functional.route_angle import check_aggregation, route_angle
from pyg_routing.functional.route_pe import xpe
from pyg_routing.transforms._base import EncodingInputs, NodeEncoding


class XPE(NodeEncoding):
    r"""Cross-route positional encoding (paper Sec. 3.2): the depot-relative angle
    ``θ_v = atan2(y_v - y_0, x_v - x_0)`` as ``[sin(2^k θ), cos(2^k θ)]``,
    interleaved for ``k = 0..num_bands-1`` and zero-padded to ``dim`` when given.

    Output ``data[attr_name]``: ``[num_nodes, dim or 2 * num_bands]``; the depot
    gets zeros, a customer exactly on the depot has θ = 0. Per-node XPE needs no
    solution (θ is a property of the instance).

    Args:
        num_bands: number of frequency bands ``K``.
        dim: output width (``>= 2K``), or ``None`` for ``2K``.
        aggregation: ``"node"`` (default: each customer's own θ) or a per-route
            aggregation of the paper's ablation (Tab. 9): ``"mean"``,
            ``"circular_mean"``, ``"demand_mean"``, ``"median"`` or ``"midpoint"`` — one
            angle per route, encoded the same way and given to all its nodes (needs a
            solution; :func:`~pyg_routing.functional.route_angle.route_angle`).
        attr_name: attribute name; ``None`` concatenates onto ``data.x``.
        reference: the point θ is measured about on a multi-depot solution
            (:mod:`~pyg_routing.functional.depot_reference`): ``"first"`` (node 0, the
            paper's), ``"route"`` (the route's own depot) or ``"route_code"`` (the
            route's depot, plus ``2K`` channels coding which depot: its angle about
            the depots' centroid). One depot: all three give the paper's code (plus
            zeros for ``"route_code"``).
    """

    def __init__(self, num_bands: int = 4, dim: int | None = None,
                 attr_name: str | None = "xpe", aggregation: str = "node",
                 reference: str = "first") -> None:
        xpe(torch.zeros(1), num_bands, dim)  # validates the arguments early
        check_aggregation(aggregation)
        check_reference(reference)
        self.aggregation = aggregation
        self.reference = reference
        self.num_bands = num_bands
        self.dim = dim
        self.attr_name = attr_name

    @property
    def width(self) -> int:
        base = 2 * self.num_bands if self.dim is None else self.dim
        return base + (2 * self.num_bands if self.reference == "route_code" else 0)

    def code(self, inputs: EncodingInputs) -> Tensor:
        theta = inputs.depot_angle
        own = self.reference != "first" and inputs.home is not None
        if own:
            theta = depot_angle(inputs.pos, inputs.home, inputs.depot_mask)
        if self.aggregation != "node":
            inputs.need(f"{type(self).__name__}(aggregation={self.aggregation!r})",
                        "route_id")
            theta = route_angle(theta, inputs.route_id, self.aggregation, inputs.batch,
                                inputs.demand, inputs.depot_mask)
        out = xpe(theta, self.num_bands, self.dim, inputs.depot_mask)
        if self.reference != "route_code":
            return out
        if own:
            phi, coded = depot_code_angle(inputs.pos, inputs.home, inputs.depot_mask,
                                          inputs.batch, inputs.depot_centre,
                                          inputs.depot_count)
            code = xpe(phi, self.num_bands, None, ~coded)
        else:                                       # no depots to tell apart
            code = out.new_zeros(out.size(0), 2 * self.num_bands)
        return torch.cat([out, code.to(out.dtype)], dim=-1)

    def __repr__(self) -> str:
        extra = f", aggregation={self.aggregation!r}" if self.aggregation != "node" else ""
        extra += f", reference={self.reference!r}" if self.reference != "first" else ""
        return f"{type(self).__name__}(num_bands={self.num_bands}, dim={self.dim}{extra})"
