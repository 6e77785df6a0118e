"""Validation of user-given instances and routes, with errors that say where.

These run once when data is built (not per search step), so they favour clear
messages over speed; the checks themselves are still tensor ops.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from torch import Tensor

from pyg_routing.data.problems import Problem
from pyg_routing.errors import InvalidInstanceError, InvalidSolutionError, where


def _first(mask: Tensor) -> int:
    return int(torch.nonzero(mask.flatten())[0])


def as_tensor(value, name: str, dtype: torch.dtype, instance: str | int | None) -> Tensor:
    """A fresh tensor copy of ``value`` (never the caller's storage)."""
    try:
        t = torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise InvalidInstanceError(f"{where(instance)}`{name}` is not numeric: {exc}") from None
    return t.detach().to(dtype).clone()


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


def validate_instance(problem: Problem, pos: Tensor, demand: Tensor | None,
                      capacity: Tensor | None, time_window: Tensor | None,
                      service_time: Tensor | None, prize: Tensor | None,
                      pairs: Tensor | None, instance: str | int | None = None) -> None:
    """Raise :class:`InvalidInstanceError` for anything malformed or trivially
    infeasible. All tensors are per-instance (node 0 = depot)."""
    if pos.dim() != 2 or pos.size(-1) != 2:
        raise InvalidInstanceError(
            f"{where(instance)}`pos` must have shape [num_nodes, 2], got {tuple(pos.shape)}")
    n = pos.size(0)
    if n < 2:
        raise InvalidInstanceError(f"{where(instance)}an instance needs a depot and at least "
                                   f"one customer, got {n} node(s)")
    check_finite(pos, "pos", instance)
    required = {"demand": problem.has_capacity, "capacity": problem.has_capacity,
                "time_window": problem.has_time_windows,
                "service_time": problem.has_time_windows,
                "prize": problem.has_prizes, "pickup_delivery_index": problem.has_pairs}
    given = {"demand": demand, "capacity": capacity, "time_window": time_window,
             "service_time": service_time, "prize": prize, "pickup_delivery_index": pairs}
    for key, needed in required.items():
        if needed and given[key] is None:
            raise InvalidInstanceError(f"{where(instance)}problem {problem.value!r} needs `{key}`")

    if demand is not None:
        check_shape(demand, (n,), "demand", instance)
        check_finite(demand, "demand", instance)
        if demand[0] != 0:
            raise InvalidInstanceError(f"{where(instance, node=0)}the depot must have demand 0, "
                                       f"got {demand[0].item()}")
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


def normalize_routes(routes: Iterable[Iterable[int]], num_nodes: int, problem: Problem,
                     instance: str | int | None = None) -> list[list[int]]:
    """Check a list of routes (customer ids, depot omitted) and return a clean copy.

    Raises :class:`InvalidSolutionError` naming the route and node for: ids out of
    range, the depot inside a route, empty routes, customers visited twice, missing
    customers (except for prize-collecting problems) and more than one route for
    single-vehicle problems.
    """
    clean: list[list[int]] = []
    seen: dict[int, int] = {}
    for r, route in enumerate(routes):
        try:
            nodes = [int(v) for v in (route.tolist() if isinstance(route, Tensor) else route)]
        except (TypeError, ValueError):
            raise InvalidSolutionError(f"{where(instance, route=r)}a route must be a sequence "
                                       f"of integer node ids, got {route!r}") from None
        if not nodes:
            raise InvalidSolutionError(f"{where(instance, route=r)}empty route (a route must "
                                       f"visit at least one customer)")
        for v in nodes:
            if v == 0:
                raise InvalidSolutionError(f"{where(instance, route=r, node=0)}the depot must "
                                           f"not appear inside a route (routes omit it)")
            if not 0 < v < num_nodes:
                raise InvalidSolutionError(f"{where(instance, route=r, node=v)}node id out of "
                                           f"range: customers are 1..{num_nodes - 1}")
            if v in seen:
                raise InvalidSolutionError(f"{where(instance, route=r, node=v)}customer visited "
                                           f"twice (already in route {seen[v]})")
            seen[v] = r
        clean.append(nodes)
    if problem.single_route and len(clean) != 1:
        raise InvalidSolutionError(f"{where(instance)}problem {problem.value!r} has a single "
                                   f"vehicle, got {len(clean)} routes")
    if not problem.has_prizes and len(seen) != num_nodes - 1:
        missing = sorted(set(range(1, num_nodes)) - set(seen))
        shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        raise InvalidSolutionError(f"{where(instance)}{len(missing)} customer(s) not visited: "
                                   f"{shown}")
    return clean
