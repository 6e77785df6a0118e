"""Several depots in NDS's observation: each tour's depot as a node, XPE's references.

The search state links a tour's first and last customers to the sentinel 0, "this
tour's depot", and keeps the depot NUMBER of every tour slot (``ToursState.depot``).
The policy reads the depots as nodes of the kernel order of :mod:`.depots` (depot 0,
customers ``1..N``, depots ``1..K-1`` at ``N+1..M-1``): :func:`tour_depot_nodes` gives
each customer its tour's depot node, :func:`with_tour_depots` puts it where the links
hold the sentinel, so that the route arcs leave from and return to the right depot
(IPE's ``d_i``, ``d_L``) and NDS's neighbour layer reads that depot's embedding.
:func:`depot_inputs` gives XPE what the data layer gives it
(:meth:`EncodingInputs.from_data <pyg_routing.transforms.EncodingInputs.from_data>`):
every node's depot and the centroid and number of the instance's depots (the
``route`` and ``route_code`` references of :mod:`pyg_routing.functional.depot_reference`).

All of it is tensor operations over every slot at once; one depot never comes here
(the observation is then NDS's, unchanged).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from pyg_routing.errors import UnsupportedProblemError


def tour_depot_nodes(depot: Tensor, tour: Tensor) -> Tensor:
    """``[S, N+1]`` long: the kernel node of the depot of each customer's tour (0 for
    depot 0, ``N + d`` for depot ``d``); 0 for unvisited customers and at index 0.

    Args:
        depot: ``[S, N]`` long, the depot number of each tour slot (``ToursState.depot``).
        tour: ``[S, N+1]`` long, each customer's tour slot (-1 unvisited; index 0 unused).
    """
    n = depot.shape[1]
    cust = tour[:, 1:]
    number = depot.gather(1, cust.clamp(min=0))
    node = torch.where((number == 0) | (cust < 0), 0, n + number)
    return F.pad(node, (1, 0))


def with_tour_depots(link: Tensor, home: Tensor) -> Tensor:
    """``link [S, N+1]`` (predecessors or successors) with the sentinel 0 replaced by the
    tour's depot node ``home [S, N+1]`` (:func:`tour_depot_nodes`)."""
    return torch.where(link == 0, home, link)


def depot_inputs(pos: Tensor, home: Tensor) -> dict[str, Tensor]:
    """XPE's reference points of ``S`` solutions (fields of :class:`EncodingInputs`).

    Args:
        pos: ``[S, M, 2]`` the slots' coordinates in the kernel order.
        home: ``[S, N+1]`` :func:`tour_depot_nodes`.

    Returns:
        ``pos [S * M, 2]``; ``home [S * M]`` the flat depot node of every node (its
        tour's for customers; the slot's node 0 for depots and unvisited customers, as
        :func:`~pyg_routing.functional.depot_reference.node_depots` gives them);
        ``depot_centre [S, 2]`` and ``depot_count [S]``, the centroid and number of the
        slot's depots (read here, where they are known, not scattered from the mask).
    """
    s, m = pos.shape[:2]
    n = home.shape[1] - 1
    k = m - n
    node = F.pad(home, (0, k - 1))                              # depots 1..K-1: node 0
    off = (torch.arange(s, device=pos.device) * m).unsqueeze(1)
    depots = torch.cat([pos[:, :1], pos[:, n + 1:]], dim=1)     # [S, K, 2], depot order
    return {"pos": pos.reshape(s * m, 2), "home": (node + off).reshape(-1),
            "depot_centre": depots.sum(1) / k,
            "depot_count": torch.full((s,), float(k), dtype=pos.dtype, device=pos.device)}


def refused_graph_arcs(num_depots: int) -> Callable[[], Tensor]:
    """The route-graph arcs of solutions with several depots, for the graph encodings:
    refused by name (their closed forms are built around one depot, as the data
    layer's ``route_graph_from_data`` says)."""
    def arcs() -> Tensor:
        raise UnsupportedProblemError(
            f"the graph encodings are computed on the route graph around one depot; these "
            f"solutions have {num_depots} depots (several depots are not supported by the "
            f"graph encodings)")
    return arcs
