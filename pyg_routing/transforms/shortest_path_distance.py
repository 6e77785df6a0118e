"""The ``ShortestPathDistance`` transform: route-graph hop distances (SPD's input)."""

from __future__ import annotations

import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from pyg_routing.functional.index_pe import MAX_BIAS_NODES, dense_route_inputs
from pyg_routing.functional.pair_pe import hop_distance
from pyg_routing.transforms._base import require_solution


class ShortestPathDistance(BaseTransform):
    r"""All-pairs hop distances on the undirected route graph, stored sparsely so
    they batch like any PyG edge attribute.

    Adds ``data[attr_name + "_index"]`` (``[2, N * N]``, every ordered node pair,
    shifted by PyG batching like ``edge_index``) and ``data[attr_name]``
    (``[N * N]`` long hop counts; ``-1`` for unreachable pairs, i.e. unvisited
    customers). Densify with ``torch_geometric.utils.to_dense_adj(index, batch,
    values)``; the SPD attention bias (:class:`~pyg_routing.models.pe.ShortestPathBias`)
    embeds them. Distances come in closed form (a route of ``L`` customers is a
    cycle of ``L + 1`` nodes through the depot; an open route the path of its
    ``L + 1`` nodes from the depot), not by BFS.

    Args:
        max_distance: cap (larger distances are clipped), or ``None``.
        attr_name: base attribute name.
        max_nodes: refuse instances above this many nodes (``N * N`` pairs).
    """

    def __init__(self, max_distance: int | None = None, attr_name: str = "spd",
                 max_nodes: int = MAX_BIAS_NODES) -> None:
        self.max_distance = max_distance
        self.attr_name = attr_name
        self.max_nodes = max_nodes

    def forward(self, data: Data) -> Data:
        require_solution(data, type(self).__name__)
        if "batch" in data and data.batch is not None:
            raise ValueError("ShortestPathDistance applies to single instances (dataset "
                             "transforms); batch them afterwards")
        route_pos, route_id, mask = dense_route_inputs(data)
        opened = data.open_routes if "open_routes" in data else None
        hops = hop_distance(route_pos, route_id, mask, self.max_nodes, opened)[0]
        if self.max_distance is not None:
            hops = torch.where(hops > self.max_distance, self.max_distance, hops)
        n = data.num_nodes
        rows = torch.arange(n, device=hops.device)
        index = torch.stack([rows.repeat_interleave(n), rows.repeat(n)])
        data[f"{self.attr_name}_index"] = index
        data[self.attr_name] = hops.reshape(-1)
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_distance={self.max_distance})"
