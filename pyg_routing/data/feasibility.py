"""Constraint checks of ``RoutingData`` solutions, batched.

Every check is a vectorized mask over nodes or routes; only the *reporting* of
the first few violations (building their messages) touches Python scalars.

The tolerances of the feasibility tests on floats are stated here, once:
:data:`TIME_RTOL` (time windows, relative to each instance's time scale, see
:func:`time_tolerance`) and :data:`CAPACITY_RTOL` (loads, :func:`capacity_limit`).
So is the rule that every customer can be served by the direct trip ``0 -> c -> 0``
(:func:`unservable_alone`), which the benchmark readers and
:meth:`RoutingInstances.check` apply when instances are loaded.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.utils import scatter

from pyg_routing.data.evaluation import arc_lengths, route_loads, service_start_times
from pyg_routing.data.problems import Problem
from pyg_routing.errors import (
    InfeasibleSolutionError,
    InvalidInstanceError,
    InvalidSolutionError,
    RoutingError,
    ZeroLengthRouteError,
    where,
)

#: Time windows: a service may start (and a vehicle may return to the depot) up to
#: ``TIME_RTOL * max(1, max |time window| of the instance)`` after the window closes,
#: so float rounding (float32 schedules such as NDS's start solutions, late by ~5e-8
#: on windows of size ~1) is not a violation. 1e-3 late on such windows is one.
TIME_RTOL = 1e-6
#: Capacity: a load is feasible up to ``capacity * (1 + CAPACITY_RTOL)``.
CAPACITY_RTOL = 1e-9


def time_tolerance(max_abs_time_window: Tensor) -> Tensor:
    """The slack of the time-window tests of instances whose largest ``|time
    window|`` entry is ``max_abs_time_window`` (any shape, one entry per instance):
    ``TIME_RTOL * max(1, max_abs_time_window)``, float64."""
    return TIME_RTOL * max_abs_time_window.to(torch.float64).clamp(min=1.0)


def capacity_limit(capacity: Tensor) -> Tensor:
    """``capacity * (1 + CAPACITY_RTOL)`` (float64): the largest feasible load."""
    return capacity.to(torch.float64) * (1 + CAPACITY_RTOL)


def unservable_alone(d0: Tensor, time_window: Tensor, service_time: Tensor,
                     d_back: Tensor | None = None, open_routes: Tensor | None = None
                     ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Customers that even the direct trip ``0 -> c -> 0`` cannot serve in time.

    The schedule of :meth:`RoutingData.check`: the vehicle leaves the depot at
    ``e_0 + s_0``, arrives at ``c`` at ``a_c = e_0 + s_0 + d(0, c)`` (late when
    ``a_c > l_c + tol``), starts service at ``max(a_c, e_c)`` and is back at
    ``r_c = max(a_c, e_c) + s_c + d(c, 0)`` (late when ``r_c > l_0 + tol``), with
    ``tol`` = :func:`time_tolerance` of the instance.

    Args:
        d0: ``[B, N]`` travel time from the depot to each node (column 0 ignored).
        time_window: ``[B, N, 2]``; service_time: ``[B, N]``.
        d_back: ``[B, N]`` travel time from each node back to the depot (an
            asymmetric cost matrix); ``None``: ``d0`` serves both ways.
        open_routes: ``[B]`` bool; where True the vehicle does not return, so
            ``back_late`` is False.

    Returns:
        ``(late, back_late, arrive, back)``, each ``[B, N]`` (float64 times); the
        masks are ``False`` at the depot.
    """
    tw = time_window.to(torch.float64)
    st = service_time.to(torch.float64)
    tol = time_tolerance(tw.abs().amax(dim=(1, 2))).unsqueeze(1)          # [B, 1]
    arrive = (tw[:, :1, 0] + st[:, :1]) + d0.to(torch.float64)
    back = torch.maximum(arrive, tw[..., 0]) + st + (d0 if d_back is None else d_back).to(
        torch.float64)
    customer = torch.ones_like(st, dtype=torch.bool)
    customer[:, 0] = False
    late = (arrive > tw[..., 1] + tol) & customer
    returns = customer if open_routes is None else customer & ~open_routes.view(-1, 1)
    back_late = (back > tw[:, :1, 1] + tol) & returns
    return late, back_late, arrive, back


def describe_unservable(late: bool, arrive: float, back: float, close: float,
                        depot_close: float) -> str:
    """What :func:`unservable_alone` found wrong with one customer."""
    if late:
        return (f"the customer cannot be served even alone: the vehicle arrives at "
                f"{arrive:g}, after its window closes at {close:g}")
    return (f"the customer cannot be served even alone: serving it brings the vehicle "
            f"back at {back:g}, after the depot closes at {depot_close:g}")


def check_servable_alone(data) -> None:
    """Refuse a time-window instance (one ``RoutingData``) with a customer that even
    the direct trip from the depot cannot serve (:func:`unservable_alone`), in the
    instance's own units and distances (benchmarks: original units and rounding, as
    :meth:`RoutingData.check`). Instances without time windows pass.

    Raises:
        InvalidInstanceError: naming the instance and the first such customer.
    """
    if "time_window" not in data:
        return
    raw = "raw_pos" in data
    pos = data.raw_pos if raw else data.pos
    n = pos.size(0)
    depot = torch.zeros(n, dtype=torch.long, device=pos.device)
    nodes = torch.arange(n, device=pos.device)
    if "travel_cost" in data:
        flat = data.raw_travel_cost if "raw_travel_cost" in data else data.travel_cost
        d0, d_back = flat[:n], flat.view(n, n)[:, 0]
    else:
        d0 = arc_lengths(pos.to(torch.float64), depot, nodes,
                         data.rounding.reshape(-1)[:1].expand(n) if raw else None)
        d_back = None
    tw = data.raw_time_window if "raw_time_window" in data else data.time_window
    st = data.raw_service_time if "raw_time_window" in data else data.service_time
    opened = data.travel.open_routes
    late, back_late, arrive, back = unservable_alone(
        d0[None], tw[None], st[None], None if d_back is None else d_back[None], opened)
    bad = (late | back_late)[0]
    if not bool(bad.any()):
        return
    c = int(torch.nonzero(bad)[0])
    name = getattr(data, "name", None)
    raise InvalidInstanceError(f"{where(name, node=c)}" + describe_unservable(
        bool(late[0, c]), float(arrive[0, c]), float(back[0, c]), float(tw[c, 1]),
        float(tw[0, 1])))


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
        limit = capacity_limit(data.capacity.reshape(-1))[route_graph]
        out.append(("capacity", load > limit, route_graph))

    if "time_window" in data:
        raw = "raw_time_window" in data
        tw = data.raw_time_window if raw else data.time_window
        st = data.raw_service_time if raw else data.service_time
        length = data.arc_lengths()
        start = service_start_times(data.edge_index, depot, length, tw, st)
        # one tolerance per instance: its verdict never depends on its batch-mates
        tol = time_tolerance(scatter(tw.abs().amax(dim=1), graph, 0, dim_size=num_graphs,
                                     reduce="max"))[graph]                  # [N]
        late = (start > tw[:, 1].to(torch.float64) + tol) & (rid >= 0)
        out.append(("window", late, graph))
        closing = ~depot[src] & depot[dst]
        if "open_routes" in data:       # an open route never returns: no deadline
            closing = closing & ~data.open_routes.reshape(-1)[graph[dst]]
        back = (start[src] + st[src].to(torch.float64) + length.to(torch.float64)
                > tw[dst, 1].to(torch.float64) + tol[dst]) & closing
        ret = torch.zeros(n, dtype=torch.bool, device=depot.device)
        ret[src[back]] = True
        out.append(("return", ret, graph))

    if "depot_vehicles" in data:
        k = data.num_depots.reshape(-1)
        first = torch.cumsum(k, 0) - k                          # each graph's first depot
        used = torch.bincount(first[route_graph] + data.route_depot, minlength=int(k.sum()))
        out.append(("vehicles", used > data.depot_vehicles,
                    torch.repeat_interleave(torch.arange(num_graphs, device=k.device), k)))

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
    if kind == "vehicles":
        k = data.num_depots.reshape(-1)
        depot = idx - int(k[:graph].sum())
        used = int((data.route_depot[_graph_routes(data, graph)] == depot).sum())
        have = int(data.depot_vehicles[idx])
        return InfeasibleSolutionError(f"{label}depot {depot} sends out {used} routes; it has "
                                       f"{have} vehicle{'s' if have != 1 else ''}")
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


def _graph_routes(data, graph: int) -> slice:
    """The route ids of one graph (route ids are global and graph by graph)."""
    offset = int(data.num_routes.reshape(-1)[:graph].sum())
    return slice(offset, offset + int(data.num_routes.reshape(-1)[graph]))


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
