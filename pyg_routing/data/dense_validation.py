"""Validation of a dense batch of instances (:class:`RoutingInstances`).

The same rules as :func:`~pyg_routing.data.validation.validate_instance` applies
to one instance, checked for all ``B`` instances at once with tensor ops (no
Python loop over instances), plus one: with time windows, every customer can be
served by the direct trip from the depot
(:func:`~pyg_routing.data.feasibility.unservable_alone`). The error names the first
offending instance and node; on valid input the check costs one device
synchronization.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import torch
from torch import Tensor

from pyg_routing.data.depots import check_depot_vehicles, depot_count
from pyg_routing.data.feasibility import describe_unservable, unservable_alone
from pyg_routing.data.problems import OPEN_ROUTE_PROBLEMS, Problem
from pyg_routing.data.validation import (
    _validate_pairs,
    refuse_non_real,
    refuse_other_device,
)
from pyg_routing.errors import InvalidInstanceError, where

#: Per-instance fields and their shapes (``B`` instances, ``N`` nodes).
DENSE_SHAPES = {"demand": "[B, N]", "capacity": "[B]", "time_window": "[B, N, 2]",
                "service_time": "[B, N]", "prize": "[B, N]", "cost_matrix": "[B, N, N]"}


class DenseInstances(Protocol):
    """What the checks read: the fields of
    :class:`~pyg_routing.data.instances.RoutingInstances`.

    A structural type, so that this module does not import ``instances`` back:
    ``RoutingInstances.check`` calls :func:`check_instances`, and the import points
    one way (``instances -> dense_validation``).
    """

    problem: Problem
    pos: Tensor
    demand: Tensor | None
    capacity: Tensor | None
    time_window: Tensor | None
    service_time: Tensor | None
    prize: Tensor | None
    pickup_delivery_index: Tensor | None
    cost_matrix: Tensor | None
    open_routes: Tensor | None
    num_depots: int
    depot_vehicles: Tensor | None


class _Check(NamedTuple):
    """``mask`` ``[B, N]`` (per node) or ``[B, 1]`` (per instance) marks offenders;
    ``describe(instance, node)`` says what is wrong."""

    mask: Tensor
    per_node: bool
    describe: Callable[[int, int | None], str]


def _tensor(value: Any, key: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise InvalidInstanceError(f"`{key}` must be a torch.Tensor, got "
                                   f"{type(value).__name__}")
    return value


def _fields(inst: DenseInstances, prob: Problem, pos: Tensor) -> dict[str, Tensor]:
    """The per-instance fields that are given, after shape, dtype and device checks."""
    b, n = pos.shape[:2]
    for key in prob.instance_fields:
        if getattr(inst, key) is None:
            raise InvalidInstanceError(f"problem {prob.value!r} needs `{key}`")
    shapes = {"demand": (b, n), "capacity": (b,), "time_window": (b, n, 2),
              "service_time": (b, n), "prize": (b, n), "cost_matrix": (b, n, n)}
    out = {}
    for key, shape in shapes.items():
        value = getattr(inst, key)
        if value is None:
            continue
        t = _tensor(value, key)
        if tuple(t.shape) != shape:
            raise InvalidInstanceError(f"`{key}` must have shape {DENSE_SHAPES[key]} = "
                                       f"{shape}, got {tuple(t.shape)}")
        refuse_non_real(t, key)            # the rule of the single instance (validation.py)
        refuse_other_device(t, key, pos.device)
        out[key] = t
    opened = getattr(inst, "open_routes", None)
    if opened is not None:
        t = _tensor(opened, "open_routes")
        if tuple(t.shape) != (b,) or t.dtype != torch.bool:
            raise InvalidInstanceError(f"`open_routes` must be a bool tensor of shape [B] = "
                                       f"({b},), got {t.dtype} {tuple(t.shape)}")
        refuse_other_device(t, "open_routes", pos.device)
        if bool(t.any()) and prob not in OPEN_ROUTE_PROBLEMS:
            raise InvalidInstanceError(
                f"open routes are an option of "
                f"{' and '.join(repr(p.value) for p in OPEN_ROUTE_PROBLEMS)}, not {prob.value!r}")
    return out


def _pairs(inst: DenseInstances, n: int, device: torch.device) -> Tensor | None:
    """``pickup_delivery_index`` (shared by all instances) after structural checks."""
    if inst.pickup_delivery_index is None:
        return None
    pairs = _tensor(inst.pickup_delivery_index, "pickup_delivery_index")
    if pairs.dtype == torch.bool or pairs.is_floating_point() or pairs.is_complex():
        raise InvalidInstanceError(f"`pickup_delivery_index` must hold integer node ids, "
                                   f"got {pairs.dtype}")
    if pairs.device != device:
        raise InvalidInstanceError(f"`pickup_delivery_index` is on {pairs.device} but "
                                   f"`pos` is on {device}")
    _validate_pairs(pairs, n, None, None)
    return pairs


def _finite(t: Tensor, key: str, b: int) -> _Check:
    if t.dim() == 1:
        return _Check(~torch.isfinite(t).view(b, 1), False,
                      lambda g, v: f"`{key}` has a non-finite value ({t[g].item()})")
    bad = ~torch.isfinite(t)
    if key == "cost_matrix":                    # its diagonal is ignored (costs.py)
        bad = bad & ~torch.eye(t.size(-1), dtype=torch.bool, device=t.device)
        return _Check(bad.any(-1), True, lambda g, v: (
            f"`cost_matrix` has a non-finite cost on the arc {v} -> "
            f"{int(torch.nonzero(bad[g, v])[0])}"))
    if t.dim() == 3:
        bad = bad.any(-1)
    return _Check(bad, True,
                  lambda g, v: f"`{key}` has a non-finite value ({t[g, v].tolist()})")


def _value_checks(prob: Problem, pos: Tensor, f: dict[str, Tensor],
                  pairs: Tensor | None, opened: Tensor | None = None,
                  num_depots: int = 1) -> list[_Check]:
    """Every rule as a mask, in the order the errors are reported within an instance
    (non-finite values first, so later comparisons never see NaN)."""
    b = pos.size(0)
    checks = [_finite(pos, "pos", b)] + [_finite(t, k, b) for k, t in f.items()]
    demand, cap = f.get("demand"), f.get("capacity")
    if demand is not None:
        depot = torch.zeros_like(demand, dtype=torch.bool)
        depot[:, :num_depots] = demand[:, :num_depots] != 0
        checks.append(_Check(depot, True, lambda g, v: f"the depot must have demand 0, got "
                                                       f"{demand[g, v].item()}"))
        if not prob.has_pairs:
            checks.append(_Check(demand < 0, True,
                                 lambda g, v: f"negative demand {demand[g, v].item()}"))
    if cap is not None:
        checks.append(_Check((cap <= 0).view(b, 1), False,
                             lambda g, v: f"capacity must be positive, got {cap[g].item()}"))
    if cap is not None and demand is not None:
        checks.append(_Check(demand.abs() > cap.view(b, 1), True, lambda g, v: (
            f"demand {demand[g, v].item()} exceeds the vehicle capacity {cap[g].item()}: "
            f"no solution can serve this customer")))
    if "time_window" in f:
        tw = f["time_window"]
        checks.append(_Check(tw[..., 0] > tw[..., 1], True, lambda g, v: (
            f"time window opens at {tw[g, v, 0].item()} after it closes at "
            f"{tw[g, v, 1].item()}")))
    for key, what in (("service_time", "service time"), ("prize", "prize")):
        if key in f:
            t = f[key]
            checks.append(_Check(t < 0, True, lambda g, v, t=t, what=what:
                                 f"negative {what} {t[g, v].item()}"))
    matrix = f.get("cost_matrix")
    if matrix is not None:
        negative = (matrix < 0) & ~torch.eye(matrix.size(-1), dtype=torch.bool,
                                             device=matrix.device)
        checks.append(_Check(negative.any(-1), True, lambda g, v: (
            f"`cost_matrix` has a negative cost "
            f"{matrix[g, v, int(torch.nonzero(negative[g, v])[0])].item()} on the arc {v} -> "
            f"{int(torch.nonzero(negative[g, v])[0])}")))
    if "time_window" in f and "service_time" in f:
        checks.append(_servable_check(pos, f["time_window"], f["service_time"], matrix,
                                      opened))
    if pairs is not None and demand is not None:
        checks.append(_pair_demand_check(demand, pairs))
    return checks


def _servable_check(pos: Tensor, tw: Tensor, st: Tensor, matrix: Tensor | None = None,
                    opened: Tensor | None = None) -> _Check:
    """Every customer can be served by the direct trip ``0 -> c -> 0`` (the rule of
    :func:`~pyg_routing.data.feasibility.unservable_alone`; Euclidean distances in
    float64, or the cost matrix's row and column of the depot)."""
    if matrix is None:
        p = pos.to(torch.float64)
        dx, dy = p[:, :1, 0] - p[..., 0], p[:, :1, 1] - p[..., 1]
        d0, d_back = torch.sqrt(dx * dx + dy * dy), None
    else:
        d0, d_back = matrix[:, 0, :], matrix[:, :, 0]
    late, back_late, arrive, back = unservable_alone(d0, tw, st, d_back, opened)
    return _Check(late | back_late, True, lambda g, v: describe_unservable(
        bool(late[g, v]), float(arrive[g, v]), float(back[g, v]), float(tw[g, v, 1]),
        float(tw[g, 0, 1])))


def _pair_demand_check(demand: Tensor, pairs: Tensor) -> _Check:
    """A delivery must carry minus its pickup's demand (flagged at the delivery)."""
    bad = torch.zeros_like(demand, dtype=torch.bool)
    bad[:, pairs[1]] = demand[:, pairs[0]] + demand[:, pairs[1]] != 0

    def describe(g: int, v: int | None) -> str:
        p = int(pairs[0, int(torch.nonzero(pairs[1] == v)[0])])
        return (f"a delivery must carry minus its pickup's demand (pickup {p}: "
                f"{demand[g, p].item()}, delivery: {demand[g, v].item()})")
    return _Check(bad, True, describe)


def check_instances(inst: DenseInstances) -> None:
    """Raise :class:`InvalidInstanceError` for anything malformed or trivially
    infeasible in ``inst``, naming the first offending instance (and node); see
    :meth:`RoutingInstances.check`. Reads only: nothing is modified."""
    prob = Problem.parse(inst.problem)
    pos = _tensor(inst.pos, "pos")
    if pos.dim() != 3 or pos.size(-1) != 2:
        raise InvalidInstanceError(f"`pos` must have shape [B, N, 2], got {tuple(pos.shape)}")
    b, n = pos.shape[:2]
    if b == 0:
        raise InvalidInstanceError(f"no instances: `pos` has shape {tuple(pos.shape)}; a "
                                   f"batch needs at least one instance")
    if n < 2:
        raise InvalidInstanceError(f"an instance needs a depot and at least one customer, "
                                   f"got {n} node(s)")
    if not pos.is_floating_point():
        raise InvalidInstanceError(f"`pos` must be a floating-point tensor, got {pos.dtype}")
    fields = _fields(inst, prob, pos)
    k = depot_count(getattr(inst, "num_depots", 1), n, prob)
    vehicles = getattr(inst, "depot_vehicles", None)
    if vehicles is not None:
        vehicles = _tensor(vehicles, "depot_vehicles")
        if tuple(vehicles.shape) != (b, k):
            raise InvalidInstanceError(f"`depot_vehicles` must have shape [B, K] = ({b}, {k}), "
                                       f"got {tuple(vehicles.shape)}")
        refuse_other_device(vehicles, "depot_vehicles", pos.device)
        check_depot_vehicles(vehicles, k)
    checks = _value_checks(prob, pos, fields, _pairs(inst, n, pos.device),
                           getattr(inst, "open_routes", None), k)
    failed = torch.stack([c.mask.any(1) for c in checks])          # [checks, B]
    bad = failed.any(0)
    if not bool(bad.any()):
        return
    g = int(torch.nonzero(bad)[0])
    check = checks[int(torch.nonzero(failed[:, g])[0])]
    v = int(torch.nonzero(check.mask[g])[0]) if check.per_node else None
    raise InvalidInstanceError(f"{where(g, node=v)}{check.describe(g, v)}")
