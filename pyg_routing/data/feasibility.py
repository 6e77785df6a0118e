"""Constraint checks of ``RoutingData`` solutions, batched.

Every check is a vectorized mask over nodes or routes; only the *reporting* of
the first few violations (building their messages) touches Python scalars.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.utils import scatter

from pyg_routing.data.evaluation import route_loads, service_start_times
from pyg_routing.data.problems import Problem
from pyg_routing.errors import (
    InfeasibleSolutionError,
    InvalidSolutionError,
    RoutingError,
    ZeroLengthRouteError,
)


def _problems(data) -> list[Problem]:
    probs = data.problem if isinstance(data.problem, list) else [data.problem]
    return [Problem.parse(p) for p in probs]


def _masks(data, allow_zero_length: bool) -> list[tuple[str, Tensor, Tensor]]:
    """(kind, offending node/route/pair/graph mask, graph of each entry) triples."""
    probs = _problems(data)
    graph = data._graph_of_node()
    depot = data.depot_mask
    n = data.num_nodes
    src, dst = data.edge_index
    rid, pos_in_route = data.route_id, data.route_pos
    num_graphs = len(probs)
    out: list[tuple[str, Tensor, Tensor]] = []

    indeg = torch.bincount(dst[~depot[dst]], minlength=n)
    prize_problem = torch.tensor([p.has_prizes for p in probs], device=depot.device)
    out.append(("twice", (indeg > 1) & ~depot, graph))
    out.append(("missing", (indeg == 0) & ~depot & ~prize_problem[graph], graph))

    route_graph = torch.zeros(int(data.num_routes.sum()), dtype=torch.long,
                              device=depot.device)
    route_graph[data.route_index[1]] = graph[data.route_index[0]]
    single = torch.tensor([p.single_route for p in probs], device=depot.device)
    too_many = single & (data.num_routes.reshape(-1) > 1)
    out.append(("routes", too_many, torch.arange(num_graphs, device=depot.device)))
    if not allow_zero_length:
        out.append(("zero", (data.route_length == 0) & (rid >= 0), graph))

    if "capacity" in data and "demand" in data:
        pairs = any(p.has_pairs for p in probs)
        load = route_loads(data.demand, rid, pos_in_route, route_graph.numel(), prefix=pairs)
        cap = data.capacity.reshape(-1).to(torch.float64)[route_graph]
        out.append(("capacity", load > cap * (1 + 1e-9), route_graph))

    if "time_window" in data:
        raw = "raw_time_window" in data
        tw = data.raw_time_window if raw else data.time_window
        st = data.raw_service_time if raw else data.service_time
        length = data.arc_lengths()
        start = service_start_times(data.edge_index, depot, length, tw, st)
        tol = 1e-6 * max(1.0, float(tw.abs().max()))
        late = (start > tw[:, 1].to(torch.float64) + tol) & (rid >= 0)
        out.append(("window", late, graph))
        closing = ~depot[src] & depot[dst]
        back = (start[src] + st[src].to(torch.float64) + length.to(torch.float64)
                > tw[dst, 1].to(torch.float64) + tol) & closing
        ret = torch.zeros(n, dtype=torch.bool, device=depot.device)
        ret[src[back]] = True
        out.append(("return", ret, graph))

    if "pickup_delivery_index" in data:
        p, d = data.pickup_delivery_index
        bad = (rid[p] != rid[d]) | (pos_in_route[p] >= pos_in_route[d])
        out.append(("precedence", bad, graph[p]))
    return out


def _describe(data, kind: str, idx: int, graph: int) -> RoutingError:
    label = data._label(graph)
    ptr = int(data.ptr[graph]) if "ptr" in data else 0
    rid = data.route_id
    if kind == "routes":
        return InvalidSolutionError(f"{label}a single-vehicle problem has "
                                    f"{int(data.num_routes.reshape(-1)[graph])} routes")
    if kind == "capacity":
        first = int(torch.nonzero((rid == idx) & (data.route_pos == 1))[0])
        local = _local_route(data, idx, graph)
        cap = float(data.capacity.reshape(-1)[graph])
        pairs = "pickup_delivery_index" in data
        load = float(route_loads(data.demand, rid, data.route_pos, int(data.num_routes.sum()),
                                 prefix=pairs)[idx])
        what = "largest load" if pairs else "route demand"
        return InfeasibleSolutionError(
            f"{label}route {local} exceeds the capacity {cap:g} ({what} {load:g}, "
            f"first node {first - ptr})")
    node = idx if kind != "precedence" else int(data.pickup_delivery_index[1, idx])
    local_node = node - ptr
    route = _local_route(data, int(rid[node]), graph) if rid[node] >= 0 else None
    loc = f"{label}" + (f"route {route}, " if route is not None else "") + f"node {local_node}: "
    if kind == "twice":
        return InvalidSolutionError(f"{loc}customer visited more than once")
    if kind == "missing":
        return InvalidSolutionError(f"{loc}customer not visited")
    if kind == "zero":
        return ZeroLengthRouteError(f"{loc}the route has length 0 (its customers sit on the "
                                    f"depot); pass allow_zero_length=True to accept it")
    if kind == "window":
        return InfeasibleSolutionError(f"{loc}service cannot start before the time window "
                                       f"closes at {float(_tw(data)[node, 1]):g}")
    if kind == "return":
        return InfeasibleSolutionError(f"{loc}the vehicle returns to the depot after it "
                                       f"closes at {float(_tw(data)[ptr, 1]):g}")
    pickup = int(data.pickup_delivery_index[0, idx]) - ptr
    return InfeasibleSolutionError(f"{loc}delivery is not visited after its pickup "
                                   f"{pickup} on the same route")


def _tw(data) -> Tensor:
    return data.raw_time_window if "raw_time_window" in data else data.time_window


def _local_route(data, route: int, graph: int) -> int:
    """Route index within its own instance (route ids are global in a batch)."""
    offset = int(data.num_routes.reshape(-1)[:graph].sum())
    return route - offset


def find_violations(data, allow_zero_length: bool = False,
                    limit: int | None = None) -> list[RoutingError]:
    """Typed errors for violated constraints, first by kind, at most ``limit``."""
    errors: list[RoutingError] = []
    for kind, mask, owner in _masks(data, allow_zero_length):
        for idx in torch.nonzero(mask).flatten().tolist():
            errors.append(_describe(data, kind, idx, int(owner[idx])))
            if limit is not None and len(errors) >= limit:
                return errors
    return errors


def feasible_mask(data, allow_zero_length: bool = False) -> Tensor:
    """``[num_graphs]`` bool: True where no constraint is violated."""
    num_graphs = data.num_graphs
    bad = torch.zeros(num_graphs, dtype=torch.long, device=data.pos.device)
    for _, mask, owner in _masks(data, allow_zero_length):
        bad = bad + scatter(mask.long(), owner, 0, dim_size=num_graphs, reduce="sum")
    return bad == 0
