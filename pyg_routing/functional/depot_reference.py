r"""The reference points of the cross-route encoding (XPE) on multi-depot solutions.

XPE codes a customer by its angle θ about the depot (paper Sec. 3.2). With ``K``
depots (nodes ``0 .. K-1``) an angle needs a reference, and three are offered
(:data:`~pyg_routing.options.XPE_REFERENCES`):

* ``"first"``: node 0 for every customer, the paper's one depot (single reference);
* ``"route"``: the depot of the customer's route, the point its route leaves from,
  as IPE's d_i is measured from it;
* ``"route_code"``: the route's depot, plus a code of *which* depot: the angle φ of
  that depot about the centroid of the instance's depots, coded with the same bands.
  Two routes of different depots that leave in the same direction then differ in φ.

With one depot the three give the same θ, and the depot code is zero (there is no
depot to tell apart), so a single-depot instance gets the paper's XPE from each.
Unvisited customers (no solution yet) take node 0 as their depot. The angle about each
node's depot is :func:`~pyg_routing.data.route_quantities.depot_angle` with the depots of
:func:`node_depots`.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.utils import scatter

from pyg_routing.options import XPE_REFERENCES


def check_reference(reference: str) -> None:
    if reference not in XPE_REFERENCES:
        raise ValueError(f"unknown XPE reference {reference!r}; choose from {XPE_REFERENCES}")


def node_depots(first_node: Tensor, route_id: Tensor | None,
                route_depot: Tensor | None) -> Tensor:
    """``[N]`` the depot node of each node: its route's depot (``route_depot [R]``,
    local ids, indexed by the global ``route_id [N]``) for visited customers, else the
    graph's first node ``first_node [N]``."""
    if route_id is None or route_depot is None:
        return first_node
    visited = route_id >= 0
    local = route_depot.index_select(0, route_id.clamp(min=0))
    return torch.where(visited, first_node + local, first_node)


def depot_code_angle(pos: Tensor, home: Tensor, depot_mask: Tensor,
                     batch: Tensor | None = None, centre: Tensor | None = None,
                     count: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``(φ, coded)``, each ``[N]``: the angle of each node's depot ``home`` about the
    centroid of its graph's depots, and whether it carries a code (customers of graphs
    with several depots; depots and single-depot graphs get none).

    ``centre [G, 2]`` and ``count [G]`` (the depots' centroid and number) are given by a
    search state whose depot copies repeat a depot; by default they are read from the
    ``depot_mask`` nodes (each a distinct depot)."""
    graph = batch if batch is not None else torch.zeros(pos.size(0), dtype=torch.long,
                                                        device=pos.device)
    g = int(graph.max()) + 1 if graph.numel() else 0
    if centre is None or count is None:
        weight = depot_mask.to(pos.dtype)
        count = scatter(weight, graph, 0, dim_size=g, reduce="sum")
        centre = scatter(pos * weight.unsqueeze(-1), graph, 0, dim_size=g, reduce="sum")
        centre = centre / count.clamp(min=1).unsqueeze(-1)
    rel = pos.index_select(0, home) - centre.index_select(0, graph)
    phi = torch.atan2(rel[:, 1], rel[:, 0])
    coded = (count.index_select(0, graph) > 1) & ~depot_mask
    return torch.where(coded, phi, torch.zeros_like(phi)), coded
