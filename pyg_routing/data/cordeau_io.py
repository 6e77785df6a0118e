"""Reader for Cordeau's multi-depot VRP (MDVRP) benchmark files.

The MDVRP instances p01-p23 and pr01-pr10 of Cordeau, Gendreau & Laporte (1997,
Networks 30:105-119) share one plain-text format (type ``2``):

* line 1: ``type m n t``: ``m`` vehicles per depot, ``n`` customers, ``t`` depots;
* ``t`` lines ``D Q``: each depot's maximum route duration (0: none) and capacity;
* ``n`` customer lines ``i x y d q f a list``: id ``1..n``, coordinates, service
  duration, demand, visit frequency, and ``a`` visit combinations;
* ``t`` depot lines in the same layout, ids ``n+1..n+t``, with no demand.

Node numbering. Our multi-depot instances put the depots first (nodes
``0..t-1``), so the file's depot ``n+j`` becomes node ``j-1`` and its customer ``i``
becomes node ``t-1+i`` (:func:`customer_node`, inverse :func:`file_customer_id`).

Costs are double-precision Euclidean distances (rounding ``none``): the published
best-known values are sums of unrounded distances (the bundled p01 solution adds
up to 576.8657, reported as 576.87; rounded to integers it would be 576).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pyg_routing.data.benchmark_io import InstanceFormatError, normalize_coords, read_text
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.errors import InvalidInstanceError

#: ``type`` codes of Cordeau's file family; only :data:`MDVRP_TYPE` is read.
TYPE_NAMES = {0: "VRP", 1: "PVRP", 2: "MDVRP", 3: "SDVRP", 4: "VRPTW", 5: "PVRPTW",
              6: "MDVRPTW", 7: "SDVRPTW"}
MDVRP_TYPE = 2
# decimal numbers only: float() would also take "nan", "inf" and "1_0"
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_INTEGER = re.compile(r"^[+-]?\d+$")


@dataclass(frozen=True)
class CordeauFile:
    """The contents of one MDVRP file, in file order, arrays read-only.

    Kept separate from :class:`RoutingData` so that fields the library does not
    model (duration limits, service times) stay inspectable instead of being lost
    silently; :func:`read_cordeau` decides what to do with them.
    """

    name: str
    vehicles_per_depot: int
    num_customers: int
    num_depots: int
    max_duration: np.ndarray  # [t], 0 = no limit
    capacity: np.ndarray  # [t]
    depot_xy: np.ndarray  # [t, 2]
    customer_xy: np.ndarray  # [n, 2]
    demand: np.ndarray  # [n]
    service_time: np.ndarray  # [n]


class _Lines:
    """The file's non-blank lines as token lists, each with its 1-based line
    number, so every error names the line a reader opens in an editor."""

    def __init__(self, path: Path) -> None:
        text = read_text(path)
        self.path = path
        self.rows = [(i, line.split()) for i, line in enumerate(text.splitlines(), 1)
                     if line.strip()]
        if not self.rows:
            raise InstanceFormatError(f"{path}: the file is empty")

    def fail(self, lineno: int, what: str) -> InstanceFormatError:
        return InstanceFormatError(f"{self.path}: line {lineno}: {what}")

    def numbers(self, k: int, names: list[str], integer: set[int]) -> tuple[int, list[float]]:
        """Line ``k``'s tokens as numbers, each checked against its ``names`` entry
        (the tokens at positions in ``integer`` must be integers)."""
        lineno, tokens = self.rows[k]
        for j, tok in enumerate(tokens):
            pattern = _INTEGER if j in integer else _NUMBER
            name = names[min(j, len(names) - 1)]
            if not pattern.match(tok):
                kind = "an integer" if j in integer else "a number"
                raise self.fail(lineno, f"{name} must be {kind}, got {tok!r}")
            if not math.isfinite(float(tok)):  # e.g. 1e400
                raise self.fail(lineno, f"{name} {tok!r} is too large to be a finite number")
        return lineno, [float(t) for t in tokens]


def _node_line(lines: _Lines, k: int, expected_id: int, kind: str) -> list[float]:
    """A customer or depot line ``i x y d q f a list``: exactly ``7 + a`` numbers
    and the id the file order implies (ids are how solutions name nodes)."""
    names = ["id", "x", "y", "service duration d", "demand q", "frequency f",
             "combination count a", "visit combination"]
    lineno, tokens = lines.rows[k]
    if len(tokens) < 7:
        raise lines.fail(lineno, f"{kind} line needs at least 7 fields 'i x y d q f a', "
                                 f"got {len(tokens)}: {' '.join(tokens)!r}")
    _, row = lines.numbers(k, names, {0, 5, 6} | set(range(7, len(tokens))))
    if int(row[0]) != expected_id:
        raise lines.fail(lineno, f"{kind} id {int(row[0])}, expected {expected_id} "
                                 f"(ids run 1..n for customers, then n+1..n+t for depots)")
    if len(row) != 7 + int(row[6]):
        raise lines.fail(lineno, f"{kind} {expected_id} declares a={int(row[6])} visit "
                                 f"combinations but lists {len(row) - 7}")
    return row


def parse_cordeau(path: str | os.PathLike) -> CordeauFile:
    """Parse an MDVRP (type 2) file of Cordeau's format, checking every count.

    Raises:
        InstanceFormatError: naming the path and line: unreadable or empty file,
            another type than MDVRP, non-numeric or missing fields, a count that
            does not match the lines, a truncated file or extra lines, ids out of
            order, a depot with demand, or capacities that differ between depots
            (:class:`RoutingData` holds one vehicle capacity per instance).
    """
    path = Path(path)
    lines = _Lines(path)
    lineno, head = lines.rows[0]
    if len(head) != 4:
        raise lines.fail(lineno, f"the header must be 'type m n t' (4 integers), got "
                                 f"{' '.join(head)!r}")
    _, values = lines.numbers(0, ["type", "m (vehicles per depot)", "n (customers)",
                                  "t (depots)"], {0, 1, 2, 3})
    kind, m, n, t = (int(v) for v in values)
    if kind != MDVRP_TYPE:
        raise lines.fail(lineno, f"type {kind} ({TYPE_NAMES.get(kind, 'unknown')}) is not "
                                 f"supported: only MDVRP (type 2) files are read")
    for name, value in (("m (vehicles per depot)", m), ("n (customers)", n),
                        ("t (depots)", t)):
        if value < 1:
            raise lines.fail(lineno, f"{name} must be at least 1, got {value}")
    expected = 1 + t + n + t
    if len(lines.rows) < expected:
        raise InstanceFormatError(
            f"{path}: truncated: the header promises {expected} lines (1 header, {t} "
            f"'D Q' lines, {n} customers, {t} depots), the file has {len(lines.rows)}")
    if len(lines.rows) > expected:
        extra = lines.rows[expected][0]
        raise lines.fail(extra, f"unexpected line after the {t} depot lines (the header "
                                f"promises {n} customers and {t} depots)")
    limits = []
    for k in range(1, 1 + t):
        lineno, tokens = lines.rows[k]
        if len(tokens) != 2:
            raise lines.fail(lineno, f"depot {k} limits must be 'D Q' (2 numbers), got "
                                     f"{' '.join(tokens)!r}")
        limits.append(lines.numbers(k, ["D (max route duration)", "Q (capacity)"], set())[1])
    customers = np.array([_node_line(lines, 1 + t + i, i + 1, "customer")[:5]
                          for i in range(n)], dtype=np.float64)
    depots = np.array([_node_line(lines, 1 + t + n + j, n + j + 1, "depot")[:5]
                       for j in range(t)], dtype=np.float64)
    with_demand = np.nonzero(depots[:, 4] != 0)[0]
    if with_demand.size:
        j = int(with_demand[0])
        raise lines.fail(lines.rows[1 + t + n + j][0],
                         f"depot {n + j + 1} has demand {depots[j, 4]:g} (depots have none)")
    duration, capacity = np.array(limits, dtype=np.float64).T
    if (capacity != capacity[0]).any():
        j = int(np.argmax(capacity != capacity[0]))
        raise lines.fail(lines.rows[1 + j][0],
                         f"capacity Q={capacity[j]:g} on depot {j + 1} differs from "
                         f"Q={capacity[0]:g} on depot 1; pyg_routing models one vehicle "
                         f"capacity per instance")
    arrays = dict(max_duration=duration, capacity=capacity, depot_xy=depots[:, 1:3],
                  customer_xy=customers[:, 1:3], demand=customers[:, 4],
                  service_time=customers[:, 3])
    for arr in arrays.values():
        arr.flags.writeable = False  # frozen means frozen, arrays included
    return CordeauFile(name=path.stem, vehicles_per_depot=m, num_customers=n,
                       num_depots=t, **arrays)


def read_cordeau(path: str | os.PathLike) -> RoutingData:
    """A multi-depot CVRP instance (problem ``cvrp``) from an MDVRP file.

    Nodes ``0..t-1`` are the depots in file order, then the customers in file order
    (:func:`customer_node`); ``num_depots=t`` and ``depot_vehicles=[m]*t``.
    ``pos`` is normalized as by the other readers
    (:func:`~pyg_routing.data.benchmark_io.normalize_coords`), with ``raw_pos``,
    ``scale`` and rounding ``none`` so :meth:`RoutingData.cost` gives the
    benchmark's numbers.

    A route duration limit (any ``D > 0``: p08-p11, p13, p14, p16, p17, p19, p20,
    p22, p23, pr01-pr10) is refused: pyg_routing models none, and dropping it
    would silently turn the instance into an easier one, whose costs could fall
    below the published best-known values. Service times only count towards that
    duration, so
    without a limit they do not change the cost and are left out of the instance
    (they remain in :func:`parse_cordeau`'s result).

    Raises:
        InstanceFormatError: the file's problems (:func:`parse_cordeau`), a
            duration limit, or an instance :meth:`RoutingData.from_instance`
            refuses (e.g. a demand above capacity), naming the path.
    """
    path = Path(path)
    cf = parse_cordeau(path)
    limited = np.nonzero(cf.max_duration > 0)[0]
    if limited.size:
        j = int(limited[0])
        raise InstanceFormatError(
            f"{path}: {cf.name}: route duration limit D={cf.max_duration[j]:g} on depot "
            f"{j + 1} is not supported (pyg_routing models no duration limits)")
    coords = np.concatenate([cf.depot_xy, cf.customer_xy])
    demand = np.concatenate([np.zeros(cf.num_depots), cf.demand])
    pos, scale = normalize_coords(coords)
    try:
        return RoutingData.from_instance(
            "cvrp", pos, demand=demand, capacity=float(cf.capacity[0]), name=cf.name,
            raw_pos=coords, scale=scale, rounding="none", num_depots=cf.num_depots,
            depot_vehicles=[cf.vehicles_per_depot] * cf.num_depots)
    except InvalidInstanceError as exc:
        raise InstanceFormatError(f"{path}: {exc}") from None


def customer_node(file_id: int, num_depots: int) -> int:
    """Our node id of the file's customer ``file_id`` (1-based): ``num_depots - 1 +
    file_id``, since the depots come first."""
    if int(num_depots) < 1 or int(file_id) < 1:
        raise ValueError(f"customer ids start at 1 and num_depots at 1, got customer "
                         f"{file_id} with {num_depots} depots")
    return int(num_depots) - 1 + int(file_id)


def file_customer_id(node: int, num_depots: int) -> int:
    """The file's customer id of our node ``node`` (inverse of :func:`customer_node`)."""
    if int(num_depots) < 1 or int(node) < int(num_depots):
        raise ValueError(f"node {node} is a depot or out of range with {num_depots} "
                         f"depots (customers are nodes {num_depots} and up)")
    return int(node) - int(num_depots) + 1


def read_cordeau_solution(path: str | os.PathLike,
                          num_depots: int) -> tuple[list[list[int]], list[int]]:
    """Routes of an MDVRP solution file: ``(routes, depots)``.

    The first line is the cost; then one line per route, ``l k d q list``: depot
    ``l`` (1-based), vehicle ``k``, duration, load, then the customers either as
    ``0 c1 .. ck 0`` (the format's description) or ``l c1 .. ck`` (the copies
    distributed with the NTNU course material, e.g. the bundled ``p01.res``).
    ``routes`` holds our node ids (:func:`customer_node`), depot omitted;
    ``depots[r]`` is route ``r``'s depot index ``0..t-1``, for
    :meth:`RoutingData.from_routes`. Routes without customers are dropped.

    Raises:
        InstanceFormatError: naming the path and line: a non-numeric cost or
            field, a depot outside ``1..num_depots``, a customer list that opens
            with another depot than its line's.
    """
    path = Path(path)
    lines = _Lines(path)
    if len(lines.rows[0][1]) != 1 or not _NUMBER.match(lines.rows[0][1][0]):
        raise lines.fail(lines.rows[0][0], f"the first line must be the solution's cost "
                                           f"(one number), got {' '.join(lines.rows[0][1])!r}")
    routes: list[list[int]] = []
    depots: list[int] = []
    names = ["depot l", "vehicle k", "duration d", "load q", "customer"]
    for k in range(1, len(lines.rows)):
        lineno, tokens = lines.rows[k]
        if len(tokens) < 5:
            raise lines.fail(lineno, f"a route line is 'l k d q list', got {' '.join(tokens)!r}")
        _, row = lines.numbers(k, names, {0, 1} | set(range(4, len(tokens))))
        depot, seq = int(row[0]), [int(v) for v in row[4:]]
        if not 1 <= depot <= num_depots:
            raise lines.fail(lineno, f"depot {depot} is outside 1..{num_depots}")
        if seq[0] == 0:
            if len(seq) < 2 or seq[-1] != 0:
                raise lines.fail(lineno, "a customer list opening with depot 0 must close "
                                         "with 0")
            seq = seq[1:-1]
        elif seq[0] == depot:
            seq = seq[1:]
        else:
            raise lines.fail(lineno, f"the customer list opens with {seq[0]}, neither 0 nor "
                                     f"this line's depot {depot}")
        if any(c < 1 for c in seq):
            raise lines.fail(lineno, f"customer ids start at 1, got {min(seq)} inside the "
                                     f"route")
        if seq:
            routes.append([customer_node(c, num_depots) for c in seq])
            depots.append(depot - 1)
    return routes, depots
