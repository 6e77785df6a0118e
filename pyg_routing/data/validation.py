"""Validation of user-given instances and routes, with errors that say where.

Most run once when data is built (not per search step), so they favour clear
messages over speed; the checks themselves are still tensor ops. The two guards
of the route-quantity functions, :func:`check_finite_pos` and
:func:`check_dense_route_inputs`, do run every search step: on valid input they
cost one reduction and one device synchronization.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from pyg_routing.data.problems import Problem
from pyg_routing.errors import InvalidInstanceError, InvalidSolutionError, where


def _first(mask: Tensor) -> int:
    return int(torch.nonzero(mask.flatten())[0])


def refuse_non_real(t: Tensor, name: str, instance: str | int | None = None) -> None:
    """Refuse a bool or complex tensor where real numbers are expected: casting would
    read ``True`` as 1 or drop an imaginary part without a word."""
    if t.dtype == torch.bool or t.is_complex():
        raise InvalidInstanceError(f"{where(instance)}`{name}` must hold real numbers, got "
                                   f"{t.dtype}")


def refuse_other_device(t: Tensor, name: str, device: torch.device,
                        instance: str | int | None = None) -> None:
    """Refuse a tensor that is not on ``pos``'s device, naming both devices (torch would
    fail later with an error from its internals)."""
    if t.device != device:
        raise InvalidInstanceError(f"{where(instance)}`{name}` is on {t.device} but `pos` is "
                                   f"on {device}")


def as_tensor(value, name: str, dtype: torch.dtype, instance: str | int | None,
              device: torch.device | None = None) -> Tensor:
    """A fresh tensor copy of ``value`` (never the caller's storage) in ``dtype`` on
    ``device`` (``None``: where it is).

    The one rule of instance inputs (:meth:`RoutingData.from_instance`; the batch's
    :meth:`RoutingInstances.check` applies the same): numbers, not bools or complex
    numbers; integer node ids (``dtype`` long), not floats, which would be truncated;
    a tensor on ``device`` already, not on another one. Lists and arrays are created
    on ``device``.

    Raises:
        InvalidInstanceError: naming ``name`` and the offending type or device.
    """
    try:
        t = torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise InvalidInstanceError(f"{where(instance)}`{name}` is not numeric: {exc}") from None
    refuse_non_real(t, name, instance)
    if not dtype.is_floating_point and t.is_floating_point():
        raise InvalidInstanceError(f"{where(instance)}`{name}` must hold integer node ids, "
                                   f"got {t.dtype}")
    if device is not None:
        if isinstance(value, Tensor):
            refuse_other_device(t, name, device, instance)
        t = t.to(device)
    return t.detach().to(dtype).clone()


def open_routes_flag(value: Any, device: torch.device,
                     instance: str | int | None = None) -> bool:
    """``open_routes`` of ONE instance as a Python bool: a ``bool`` (or NumPy bool), or a
    bool tensor holding one flag on ``device``; ``None`` (not given, as in
    ``RoutingInstances``) is closed routes. A string (``"false"`` is truthy), a number
    or a tensor of several flags is refused: nothing is read as a flag by its truth
    value.

    Raises:
        InvalidInstanceError: naming the value, its type or its shape.
    """
    if value is None:
        return False
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, Tensor) and value.dtype == torch.bool:
        if value.numel() != 1:
            raise InvalidInstanceError(
                f"{where(instance)}`open_routes` of one instance is one flag, got a bool "
                f"tensor of shape {tuple(value.shape)} (a batch's flags belong to "
                f"RoutingInstances.open_routes)")
        refuse_other_device(value, "open_routes", device, instance)
        return bool(value.reshape(-1)[0])
    kind = (f"a {value.dtype} tensor" if isinstance(value, Tensor)
            else type(value).__name__)
    raise InvalidInstanceError(f"{where(instance)}`open_routes` must be True or False (a "
                               f"bool), got {value!r} ({kind})")


def check_finite(t: Tensor, name: str, instance: str | int | None) -> None:
    bad = ~torch.isfinite(t)
    if bad.any():
        idx = torch.nonzero(bad)[0].tolist()
        node = idx[0] if t.dim() >= 1 else None
        raise InvalidInstanceError(
            f"{where(instance, node=node)}`{name}` has a non-finite value "
            f"({t[tuple(idx)].item()}) at index {tuple(idx)}")


def check_shape(t: Tensor, shape: Sequence[int], name: str,
                instance: str | int | None) -> None:
    if tuple(t.shape) != tuple(shape):
        raise InvalidInstanceError(
            f"{where(instance)}`{name}` must have shape {tuple(shape)}, got {tuple(t.shape)}")


def check_finite_pos(pos: Tensor, batch: Tensor | None = None,
                     total: float | None = None) -> None:
    """Raise :class:`InvalidInstanceError` naming the first node (and its graph,
    for a flat ``batch`` or a dense ``pos [B, N, 2]``) whose coordinates are not
    finite, instead of letting them turn into NaN distances.

    The fast path is one sum (``total``, when the caller already has it): only
    when it is not finite are the coordinates scanned (an overflowing sum of
    finite coordinates passes).
    """
    if total is None:
        total = float(pos.sum())
    if math.isfinite(total):
        return
    bad = ~torch.isfinite(pos).all(-1)
    if not bool(bad.any()):
        return
    if pos.dim() == 3:
        g, v = torch.nonzero(bad)[0].tolist()
        xy, graph, node = pos[g, v], g, v
    else:
        v = int(torch.nonzero(bad)[0])
        xy, graph, node = pos[v], None, v
        if batch is not None:
            graph = int(batch[v])
            node = v - int(torch.nonzero(batch == graph)[0])
    raise InvalidInstanceError(f"{where(graph, node=node)}`pos` has a non-finite value "
                               f"({xy.tolist()})")


def check_dense_route_inputs(pos: Tensor, tours: Tensor) -> None:
    """Inputs of :func:`~pyg_routing.data.route_quantities.dense_route_quantities`:
    shapes, dtypes, finite coordinates and node ids in range, with one sync."""
    if pos.dim() != 3 or pos.size(-1) != 2:
        raise InvalidInstanceError(f"`pos` must have shape [B, N, 2], got {tuple(pos.shape)}")
    b, n = pos.shape[:2]
    if tours.dim() != 2 or tours.size(0) != b:
        raise InvalidSolutionError(f"`tours` must have shape [B, L] with B = {b}, got "
                                   f"{tuple(tours.shape)}")
    if tours.dtype == torch.bool or tours.is_floating_point() or tours.is_complex():
        raise InvalidSolutionError(f"`tours` must hold integer node ids, got {tours.dtype}")
    stats = [pos.sum().double()]
    if tours.numel():
        stats += [tours.min().double(), tours.max().double()]
    total, *bounds = torch.stack(stats).tolist()
    check_finite_pos(pos, total=total)
    if bounds and (bounds[0] < 0 or bounds[1] >= n):
        g, k = torch.nonzero((tours < 0) | (tours >= n))[0].tolist()
        raise InvalidSolutionError(f"{where(g)}tour position {k}: node id {int(tours[g, k])} "
                                   f"out of range 0..{n - 1}")


def validate_instance(problem: Problem, pos: Tensor, demand: Tensor | None,
                      capacity: Tensor | None, time_window: Tensor | None,
                      service_time: Tensor | None, prize: Tensor | None,
                      pairs: Tensor | None, instance: str | int | None = None,
                      num_depots: int = 1) -> None:
    """Raise :class:`InvalidInstanceError` for anything malformed or trivially
    infeasible. All tensors are per-instance (nodes ``0 .. num_depots-1`` are the
    depots)."""
    if pos.dim() != 2 or pos.size(-1) != 2:
        raise InvalidInstanceError(
            f"{where(instance)}`pos` must have shape [num_nodes, 2], got {tuple(pos.shape)}")
    n = pos.size(0)
    if n < 2:
        raise InvalidInstanceError(f"{where(instance)}an instance needs a depot and at least "
                                   f"one customer, got {n} node(s)")
    check_finite(pos, "pos", instance)
    given = {"demand": demand, "capacity": capacity, "time_window": time_window,
             "service_time": service_time, "prize": prize, "pickup_delivery_index": pairs}
    for key in problem.instance_fields:
        if given[key] is None:
            raise InvalidInstanceError(f"{where(instance)}problem {problem.value!r} needs `{key}`")

    if demand is not None:
        check_shape(demand, (n,), "demand", instance)
        check_finite(demand, "demand", instance)
        if bool((demand[:num_depots] != 0).any()):
            d = _first(demand[:num_depots] != 0)
            raise InvalidInstanceError(f"{where(instance, node=d)}the depot must have demand 0, "
                                       f"got {demand[d].item()}")
        if not problem.has_pairs and (demand < 0).any():
            v = _first(demand < 0)
            raise InvalidInstanceError(
                f"{where(instance, node=v)}negative demand {demand[v].item()}")
    if capacity is not None:
        check_finite(capacity, "capacity", instance)
        cap = float(capacity.reshape(-1)[0]) if capacity.numel() == 1 else None
        if cap is None:
            raise InvalidInstanceError(f"{where(instance)}`capacity` must be a scalar, "
                                       f"got shape {tuple(capacity.shape)}")
        if cap <= 0:
            raise InvalidInstanceError(f"{where(instance)}capacity must be positive, got {cap}")
        if demand is not None and (demand.abs() > cap).any():
            v = _first(demand.abs() > cap)
            raise InvalidInstanceError(
                f"{where(instance, node=v)}demand {demand[v].item()} exceeds the vehicle "
                f"capacity {cap}: no solution can serve this customer")
    if time_window is not None:
        check_shape(time_window, (n, 2), "time_window", instance)
        check_finite(time_window, "time_window", instance)
        bad = time_window[:, 0] > time_window[:, 1]
        if bad.any():
            v = _first(bad)
            raise InvalidInstanceError(
                f"{where(instance, node=v)}time window opens at {time_window[v, 0].item()} "
                f"after it closes at {time_window[v, 1].item()}")
    if service_time is not None:
        check_shape(service_time, (n,), "service_time", instance)
        check_finite(service_time, "service_time", instance)
        if (service_time < 0).any():
            v = _first(service_time < 0)
            raise InvalidInstanceError(
                f"{where(instance, node=v)}negative service time {service_time[v].item()}")
    if prize is not None:
        check_shape(prize, (n,), "prize", instance)
        check_finite(prize, "prize", instance)
        if (prize < 0).any():
            v = _first(prize < 0)
            raise InvalidInstanceError(f"{where(instance, node=v)}negative prize "
                                       f"{prize[v].item()}")
    if pairs is not None:
        _validate_pairs(pairs, n, demand, instance)


def _validate_pairs(pairs: Tensor, n: int, demand: Tensor | None,
                    instance: str | int | None) -> None:
    if pairs.dim() != 2 or pairs.size(0) != 2:
        raise InvalidInstanceError(f"{where(instance)}`pickup_delivery_index` must have shape "
                                   f"[2, num_pairs], got {tuple(pairs.shape)}")
    if ((pairs < 1) | (pairs >= n)).any():
        v = int(pairs[(pairs < 1) | (pairs >= n)][0])
        raise InvalidInstanceError(f"{where(instance, node=v)}pickup/delivery node id out of "
                                   f"range 1..{n - 1}")
    flat = pairs.flatten()
    if torch.unique(flat).numel() != flat.numel():
        counts = torch.bincount(flat, minlength=n)
        v = _first(counts > 1)
        raise InvalidInstanceError(f"{where(instance, node=v)}node appears in more than one "
                                   f"pickup/delivery pair")
    if demand is not None and (demand[pairs[0]] + demand[pairs[1]] != 0).any():
        k = _first(demand[pairs[0]] + demand[pairs[1]] != 0)
        raise InvalidInstanceError(
            f"{where(instance, node=int(pairs[1, k]))}a delivery must carry minus its pickup's "
            f"demand (pickup {int(pairs[0, k])}: {demand[pairs[0, k]].item()}, delivery: "
            f"{demand[pairs[1, k]].item()})")


def _node_ids(route: Any, loc: str) -> list[int]:
    """The node ids of one route as Python ints; :class:`InvalidSolutionError`
    (prefixed with ``loc``) naming the first value that is not an integer."""
    def refuse(value: Any, kind: str, k: int | None = None) -> InvalidSolutionError:
        at = f" at position {k}" if k is not None else ""
        return InvalidSolutionError(f"{loc}a route must be a sequence of integer node ids, "
                                    f"got {value!r} ({kind}){at}")

    if isinstance(route, (Tensor, np.ndarray)):
        kind = f"{route.dtype} {type(route).__name__}"
        if route.ndim != 1:
            raise refuse(route.tolist(), f"{route.ndim}-d {kind}")
        integer = (route.dtype not in (torch.bool, np.bool_)
                   and not (route.dtype.is_floating_point or route.dtype.is_complex)
                   if isinstance(route, Tensor) else route.dtype.kind in "iu")
        values = route.tolist()
        if not integer:  # name the first fractional value, else the first one
            k = next((i for i, x in enumerate(values)
                      if isinstance(x, float) and not x.is_integer()), 0)
            raise refuse(values[k] if values else values, kind, k)
        return [int(v) for v in values]
    try:
        items = list(route)
    except TypeError:
        raise refuse(route, type(route).__name__) from None
    nodes = []
    for k, v in enumerate(items):
        is_bool = isinstance(v, (bool, np.bool_)) or (
            isinstance(v, (Tensor, np.ndarray)) and v.dtype in (torch.bool, np.bool_))
        try:
            if is_bool:
                raise TypeError
            nodes.append(operator.index(v))
        except TypeError:
            kind = (f"{v.dtype} {type(v).__name__}" if isinstance(v, (Tensor, np.ndarray))
                    else type(v).__name__)
            raise refuse(v.tolist() if isinstance(v, (Tensor, np.ndarray)) else v,
                         kind, k) from None
    return nodes


def normalize_routes(routes: Iterable[Iterable[int]], num_nodes: int, problem: Problem,
                     instance: str | int | None = None, num_depots: int = 1
                     ) -> list[list[int]]:
    """Check a list of routes (customer ids, depot omitted) and return a clean copy.

    Node ids must be integers: Python ints, NumPy integers, integer tensors or
    arrays. Floats are refused even when integral (``2.0``), and so are bools, so
    that a route of distances, coordinates or a mask passed by mistake is never
    read as node ids.

    Raises :class:`InvalidSolutionError` naming the route and node for: ids that
    are not integers, ids out of range, the depot inside a route, empty routes,
    customers visited twice, missing customers (except for prize-collecting
    problems) and more than one route for single-vehicle problems.
    """
    clean: list[list[int]] = []
    seen: dict[int, int] = {}
    for r, route in enumerate(routes):
        nodes = _node_ids(route, where(instance, route=r))
        if not nodes:
            raise InvalidSolutionError(f"{where(instance, route=r)}empty route (a route must "
                                       f"visit at least one customer)")
        for v in nodes:
            if 0 <= v < num_depots:
                raise InvalidSolutionError(f"{where(instance, route=r, node=v)}the depot must "
                                           f"not appear inside a route (routes omit it)")
            if not num_depots <= v < num_nodes:
                raise InvalidSolutionError(f"{where(instance, route=r, node=v)}node id out of "
                                           f"range: customers are {num_depots}.."
                                           f"{num_nodes - 1}")
            if v in seen:
                raise InvalidSolutionError(f"{where(instance, route=r, node=v)}customer visited "
                                           f"twice (already in route {seen[v]})")
            seen[v] = r
        clean.append(nodes)
    if problem.single_route and len(clean) != 1:
        raise InvalidSolutionError(f"{where(instance)}problem {problem.value!r} has a single "
                                   f"vehicle, got {len(clean)} routes")
    if not problem.has_prizes and len(seen) != num_nodes - num_depots:
        missing = sorted(set(range(num_depots, num_nodes)) - set(seen))
        shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        raise InvalidSolutionError(f"{where(instance)}{len(missing)} customer(s) not visited: "
                                   f"{shown}")
    return clean


