"""Node features of the 2-opt environment: what DACT's actor reads of a solution.

VRP-DACT (``nets/actor_network.py``, the CVRP block; ``node_dim = 7``) gives every node,
besides its coordinates and loads, the lengths of its two arcs on the CURRENT solution:
to its predecessor and to its successor. Those are the arcs a 2-opt move can remove,
and without them the network reads the solution only through its positional aspect
(VRP-DACT with the two columns zeroed learns nothing on CVRP-20: docs/experiments.md).
The columns here follow VRP-DACT's order and values exactly on CVRP, so an imported
VRP-DACT model reads what it was trained on; TSP keeps VRP-DACT's coordinates-only
input (``node_dim = 2``); VRPTW and PDTSP, our extensions, carry the same two arc
lengths.

Arc lengths are the instance's travel costs: Euclidean distances of ``pos`` (so they
follow an augmentation of the coordinates), or the state's cost matrix for explicit
and open-route instances (an open route's return arc then costs 0).
"""

from __future__ import annotations

import torch
from torch import Tensor

from pyg_routing.data.problems import Problem
from pyg_routing.envs.two_opt.moves import route_loads
from pyg_routing.envs.two_opt.precedence import pdtsp_features
from pyg_routing.envs.two_opt.state import TwoOptState

#: node-feature width per problem (:func:`node_features`)
FEATURE_WIDTHS: dict[Problem, int] = {
    Problem.TSP: 2, Problem.CVRP: 7, Problem.VRPTW: 10, Problem.PDTSP: 9}


def predecessors(succ: Tensor) -> Tensor:
    """``[B, M]`` predecessor array of the successor arrays ``succ [B, M]``."""
    node = torch.arange(succ.size(1), device=succ.device).expand_as(succ)
    return torch.empty_like(succ).scatter_(1, succ, node)


def arc_lengths(state: TwoOptState) -> Tensor:
    """``[B, M, 2]``: the cost of the arc from each node's predecessor into it, and of
    the arc from it to its successor, on the current solution (``pos.dtype``)."""
    succ = state.succ
    pred = predecessors(succ)
    if state.costs is None:
        xy = state.pos
        arcs = []
        for other in (pred, succ):
            d = xy.gather(1, other.unsqueeze(-1).expand_as(xy)) - xy
            arcs.append(torch.hypot(d[..., 0], d[..., 1]))
        return torch.stack(arcs, -1)
    b, m = succ.shape
    node = torch.arange(m, device=succ.device).expand(b, m)
    flat = state.costs.reshape(b, m * m)
    into = flat.gather(1, pred * m + node)
    out = flat.gather(1, node * m + succ)
    return torch.stack([into, out], -1).to(state.pos.dtype)


def route_load_features(state: TwoOptState) -> Tensor:
    """``[B, M, 3]`` VRP-DACT's load columns, in units of the capacity: the load
    collected before the node on its route, its demand, and the load from the node to
    the end of its route. A depot copy reads, as in VRP-DACT, the load of the route
    that arrives at it (before) and of the route it opens (after)."""
    _, upto, after = route_loads(state)
    demand = state.demand.double()
    before = upto - demand
    # depot copies: upto = 0, so "before" is the load of the route ending at the copy,
    # i.e. ``upto`` of its predecessor (0 after an empty route)
    pred = predecessors(state.succ)
    before = torch.where(state.depot_mask, upto.gather(1, pred), before)
    cap = state.capacity.double().unsqueeze(1)
    loads = torch.stack([before / cap, demand / cap, (after + demand) / cap], -1)
    return loads.to(state.pos.dtype)


def node_features(state: TwoOptState) -> Tensor:
    """Node features ``[B, M, F]`` (``F`` from :data:`FEATURE_WIDTHS`):

    * TSP: ``x, y`` (VRP-DACT's TSP input);
    * CVRP: ``x, y, d_pred, d_succ, before / C, demand / C, after / C`` (VRP-DACT's
      seven, in its order: :func:`arc_lengths`, :func:`route_load_features`);
    * VRPTW: the CVRP seven, then the window's start and end and the service time
      divided by the depot's closing time;
    * PDTSP: :func:`~pyg_routing.envs.two_opt.precedence.pdtsp_features` (``x, y, role,
      load, partner x, partner y, is_depot``), then ``d_pred, d_succ``.
    """
    if state.problem is Problem.TSP:
        return state.pos
    arcs = arc_lengths(state)
    if state.problem is Problem.PDTSP:
        return torch.cat([pdtsp_features(state), arcs], -1)
    feat = [state.pos, arcs, route_load_features(state)]
    if state.problem is Problem.VRPTW:
        # Window start, end and service time, scaled by the depot's closing time.
        horizon = state.time_window[:, :1, 1:].clamp(min=1e-9)
        feat += [state.time_window / horizon, (state.service_time.unsqueeze(-1) / horizon)]
    return torch.cat(feat, -1)
