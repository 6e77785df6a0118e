"""The ``XPE`` transform: depot-anchored angular encoding across routes."""

from __future__ import annotations

import torch
from torch import Tensor

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
    """

    def __init__(self, num_bands: int = 4, dim: int | None = None,
                 attr_name: str | None = "xpe", aggregation: str = "node") -> None:
        xpe(torch.zeros(1), num_bands, dim)  # validates the arguments early
        check_aggregation(aggregation)
        self.aggregation = aggregation
        self.num_bands = num_bands
        self.dim = dim
        self.attr_name = attr_name

    @property
    def width(self) -> int:
        return 2 * self.num_bands if self.dim is None else self.dim

    def code(self, inputs: EncodingInputs) -> Tensor:
        theta = inputs.depot_angle
        if self.aggregation != "node":
            inputs.need(f"{type(self).__name__}(aggregation={self.aggregation!r})",
                        "route_id")
            theta = route_angle(theta, inputs.route_id, self.aggregation, inputs.batch,
                                inputs.demand, inputs.depot_mask)
        return xpe(theta, self.num_bands, self.dim, inputs.depot_mask)

    def __repr__(self) -> str:
        extra = f", aggregation={self.aggregation!r}" if self.aggregation != "node" else ""
        return f"{type(self).__name__}(num_bands={self.num_bands}, dim={self.dim}{extra})"
