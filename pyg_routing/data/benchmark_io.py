"""Readers for benchmark files: CVRPLib X (VRPLIB), Solomon and Li & Lim.

VRPLIB/TSPLIB files with an explicit matrix (``EDGE_WEIGHT_TYPE: EXPLICIT``, CVRP,
TSP or ATSP) are read too; the matrix is checked by :mod:`.explicit_io`.

Every reader returns a validated :class:`RoutingData` (node 0 = depot) whose
``pos`` is normalized with ONE scale for both axes,
``pos = (xy - xy.min(0)) / max(range_x, range_y)``, so the aspect ratio of the
original coordinates is kept. Time windows and service times are divided by the
same scale (speed 1: a time unit equals a distance unit). The original
coordinates, windows and service times are kept as ``raw_*`` (float64) together
with the benchmark's distance ``rounding``, so :meth:`RoutingData.cost` and
:meth:`RoutingData.check` report the benchmark's own numbers.

A file that cannot be read raises :class:`InstanceFormatError` naming the file
and what is wrong with it: empty, unreadable (e.g. no permission), not text, not
parseable. A time-window instance with a customer that even the direct trip from
the depot cannot serve in time is refused too, naming the file, instance and
customer (:func:`~pyg_routing.data.feasibility.check_servable_alone`).
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import numpy as np
import vrplib

from pyg_routing.data.explicit_io import (
    COORD_SECTIONS,
    classical_mds,
    explain_failure,
    explicit_matrix,
    parse_vrplib_text,
)
from pyg_routing.data.feasibility import check_servable_alone
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.errors import InstanceFormatError, InvalidInstanceError, InvalidSolutionError

#: Instance file formats :func:`sniff_format` tells apart (this module reads the first
#: three; :mod:`.cordeau_io` the last)
FORMATS = ("vrplib", "solomon", "lilim", "cordeau")
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


class UnrecognizedFormatError(InstanceFormatError):
    """A readable, non-empty text file in none of :data:`FORMATS` (e.g. a solution
    or notes file next to the instances): the one :func:`sniff_format` error a
    folder listing may pass over, whereas empty and unreadable files are reported."""


def read_text(path: Path) -> str:
    """The file's text; :class:`InstanceFormatError` naming it when it is unreadable
    or not text (every instance reader starts here)."""
    try:
        return path.read_text()
    except UnicodeDecodeError as exc:
        raise InstanceFormatError(f"{path}: not a text file ({exc.reason})") from None
    except OSError as exc:
        raise InstanceFormatError(f"{path}: cannot be read ({exc})") from None


def _lines(path: Path) -> list[str]:
    """Non-empty stripped lines (handles CRLF, tabs, a missing final newline);
    :class:`InstanceFormatError` for a file that is unreadable, not text, or empty."""
    text = read_text(path)
    lines = [s for line in text.splitlines() if (s := line.strip())]
    if not lines:
        raise InstanceFormatError(f"{path}: the file is empty" if not text else
                                  f"{path}: the file is empty (only blank lines)")
    return lines


def sniff_format(path: str | os.PathLike) -> str:
    """``"vrplib"``, ``"solomon"``, ``"lilim"`` or ``"cordeau"`` (Cordeau's
    multi-depot files, read by :mod:`.cordeau_io`), from the file's extension and
    first lines; :class:`InstanceFormatError` when it is none of them."""
    path = Path(path)
    lines = _lines(path)
    first = lines[0].split()
    if path.suffix.lower() == ".vrp" or "_SECTION" in "".join(lines[:30]):
        return "vrplib"
    if len(first) == 3 and all(_NUMBER.match(t) for t in first):
        return "lilim"
    if len(first) == 4 and all(t.isdigit() for t in first):     # type m n t
        return "cordeau"
    if any(line.startswith("VEHICLE") for line in lines[1:4]):
        return "solomon"
    raise UnrecognizedFormatError(
        f"{path}: unrecognized instance format (expected a VRPLIB .vrp file, a Solomon "
        f".txt file with a VEHICLE section, a Li & Lim .txt file whose first line is "
        f"'<vehicles> <capacity> <speed>', or a Cordeau file whose first line is "
        f"'<type> <vehicles> <customers> <depots>')")


def normalize_coords(coords: np.ndarray) -> tuple[np.ndarray, float]:
    """``(pos, scale)`` with ``pos = (coords - coords.min(0)) / scale`` and ``scale``
    the larger of the two coordinate ranges (1 when all points coincide)."""
    lo = coords.min(axis=0)
    scale = float((coords.max(axis=0) - lo).max())
    scale = scale if scale > 0 else 1.0
    return (coords - lo) / scale, scale


def _array(value, shape: tuple[int, ...], what: str, path: Path) -> np.ndarray:
    """``value`` as a float64 array of exactly ``shape``, else InstanceFormatError."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InstanceFormatError(f"{path}: {what} has rows of different lengths or "
                                  f"non-numeric entries") from None
    if arr.shape != shape:
        got = arr.shape[0] if arr.ndim else 0
        detail = (f"{got} rows, expected {shape[0]}" if arr.ndim and got != shape[0]
                  else f"shape {arr.shape}, expected {shape}")
        raise InstanceFormatError(f"{path}: {what} has {detail}")
    return arr


def _build(path: Path, problem: str, coords: np.ndarray, *, rounding: str, name: str,
           time_window: np.ndarray | None = None, service_time: np.ndarray | None = None,
           raw_cost_matrix: np.ndarray | None = None, **fields) -> RoutingData:
    """Normalize and validate; an invalid instance is reported against its file.

    An explicit ``raw_cost_matrix`` (original units) is divided by the scale of the
    coordinates, like time windows, so that ``cost_matrix`` is in ``pos``'s units."""
    bad = ~np.isfinite(coords).all(axis=1)
    if bad.any():  # before normalizing, which would report NaN for every node
        v = int(np.argmax(bad))
        raise InstanceFormatError(f"{path}: instance {name!r}, node {v}: coordinates "
                                  f"{coords[v].tolist()} are not finite")
    pos, scale = normalize_coords(coords)
    if time_window is not None:
        fields.update(time_window=time_window / scale, service_time=service_time / scale,
                      raw_time_window=time_window, raw_service_time=service_time)
    if raw_cost_matrix is not None:
        fields.update(cost_matrix=raw_cost_matrix / scale, raw_cost_matrix=raw_cost_matrix)
    try:
        data = RoutingData.from_instance(problem, pos, name=name, raw_pos=coords,
                                         scale=scale, rounding=rounding, **fields)
        check_servable_alone(data)
    except InvalidInstanceError as exc:
        raise InstanceFormatError(f"{path}: {exc}") from None
    return data


# --------------------------------------------------------------------------- instances
def read_vrplib(path: str | os.PathLike) -> RoutingData:
    """A CVRP instance in VRPLIB format (CVRPLib X), or a CVRP, TSP or ATSP with an
    explicit cost matrix.

    ``EDGE_WEIGHT_TYPE: EUC_2D``: problem ``cvrp``, ``nint`` distances of
    ``NODE_COORD_SECTION``. ``EXPLICIT``: problem ``cvrp`` (``TYPE: CVRP``) or
    ``tsp`` (``TSP``, ``ATSP``); ``vrplib`` parses the ``EDGE_WEIGHT_SECTION``
    (formats :data:`~pyg_routing.data.explicit_io.SUPPORTED_FORMATS`), which becomes
    ``raw_cost_matrix`` (original units, used exactly as given: rounding ``none``)
    and, divided by the coordinates' scale, ``cost_matrix``. Its coordinates serve
    the encodings only, never the costs: ``NODE_COORD_SECTION``, else
    ``DISPLAY_DATA_SECTION``, else a classical MDS embedding of the symmetrized
    matrix (:func:`~pyg_routing.data.explicit_io.classical_mds`), all normalized
    alike (:func:`normalize_coords`).

    The depot (``DEPOT_SECTION``; a TSP without one: the first node) becomes node 0;
    the other nodes keep their file order.
    """
    path = Path(path)
    try:
        # one read; weight sections vrplib cannot read are read as TSPLIB's stream
        inst = parse_vrplib_text(path.read_text())
    except OSError as exc:
        raise InstanceFormatError(f"{path}: cannot be read ({exc})") from None
    except Exception as exc:  # vrplib reports format problems with assorted types
        reason = explain_failure(path)
        raise InstanceFormatError(reason or f"{path}: not a valid VRPLIB file ({exc})") \
            from None
    kind = str(inst.get("type", "CVRP")).upper()
    ewt = str(inst.get("edge_weight_type", "")).upper()
    explicit = ewt == "EXPLICIT"
    if kind != "CVRP" and not (explicit and kind in ("TSP", "ATSP")):
        raise InstanceFormatError(f"{path}: TYPE {kind} is not supported (only CVRP; TSP "
                                  f"and ATSP with EDGE_WEIGHT_TYPE EXPLICIT)")
    if ewt != "EUC_2D" and not explicit:
        raise InstanceFormatError(f"{path}: EDGE_WEIGHT_TYPE {ewt or '(missing)'} is not "
                                  f"supported (only EUC_2D and EXPLICIT)")
    problem = "cvrp" if kind == "CVRP" else "tsp"
    needed = ("dimension", "capacity", "node_coord", "demand", "depot") \
        if problem == "cvrp" else ("dimension",)
    for key in needed:
        if key not in inst and not (explicit and key == "node_coord"):
            what = (f"{key.upper()}_SECTION" if key in ("node_coord", "demand", "depot")
                    else f"the {key.upper()} field")
            raise InstanceFormatError(f"{path}: missing {what}")
    n = inst["dimension"]
    if not isinstance(n, int) or n < 2:
        raise InstanceFormatError(f"{path}: DIMENSION must be an integer >= 2, got {n!r}")
    matrix = explicit_matrix(inst, n, path) if explicit else None
    if matrix is None:
        coords = _array(inst["node_coord"], (n, 2), "NODE_COORD_SECTION", path)
    else:
        coords = next((_array(inst[key], (n, 2), what, path)
                       for key, what in COORD_SECTIONS if key in inst), None)
        coords = classical_mds(matrix) if coords is None else coords
    demand = _array(inst["demand"], (n,), "DEMAND_SECTION", path) if problem == "cvrp" \
        else None
    d = _depot(inst["depot"], n, path) if "depot" in inst else 0
    order = np.r_[d, np.delete(np.arange(n), d)]
    fields: dict[str, object] = {}
    if problem == "cvrp":
        capacity = inst["capacity"]
        if isinstance(capacity, str):
            raise InstanceFormatError(f"{path}: CAPACITY is not a number: {capacity!r}")
        fields.update(demand=demand[order], capacity=capacity)
    return _build(path, problem, coords[order], rounding="none" if explicit else "nint",
                  name=str(inst.get("name", path.stem)),
                  raw_cost_matrix=None if matrix is None else matrix[np.ix_(order, order)],
                  **fields)


def _depot(section, n: int, path: Path) -> int:
    """The 0-based depot of a parsed ``DEPOT_SECTION`` (exactly one, in range)."""
    depots = np.atleast_1d(np.asarray(section))
    if depots.size != 1 or not np.issubdtype(depots.dtype, np.integer) \
            or not 0 <= depots[0] < n:
        got = (depots + 1).tolist() if np.issubdtype(depots.dtype, np.integer) else "text"
        raise InstanceFormatError(f"{path}: DEPOT_SECTION must name exactly one depot "
                                  f"between 1 and {n} (then -1), got {got}")
    return int(depots[0])


def read_solomon(path: str | os.PathLike) -> RoutingData:
    """A Solomon VRPTW instance: problem ``vrptw``, DIMACS distances (truncated to
    one decimal, as in CVRPLib's best-known values), node 0 = depot."""
    path = Path(path)
    lines = _lines(path)
    try:
        inst, error = vrplib.read_instance(path, instance_format="solomon",
                                           compute_edge_weights=False), None
    except OSError as exc:
        raise InstanceFormatError(f"{path}: cannot be read ({exc})") from None
    except Exception as exc:  # checked below for a more precise message first
        inst, error = None, exc
    rows = [r.split() for r in lines[6:]] if len(lines) > 5 and "CUSTOMER" in lines[4] else []
    for i, row in enumerate(rows):
        if len(row) != 7 or not all(t.lstrip("+-").isdigit() for t in row):
            raise InstanceFormatError(
                f"{path}: customer row {i} must have 7 integers (CUST NO., XCOORD., YCOORD., "
                f"DEMAND, READY TIME, DUE DATE, SERVICE TIME), got {' '.join(row)!r}")
    if error is not None:
        raise InstanceFormatError(f"{path}: not a valid Solomon file ({error})") from None
    ids = [r[0] for r in rows]
    if ids != [str(i) for i in range(len(ids))]:
        bad = next(i for i, s in enumerate(ids) if s != str(i))
        raise InstanceFormatError(f"{path}: customer rows must be numbered 0, 1, 2, ... "
                                  f"(row {bad} is numbered {ids[bad]!r})")
    n = len(rows)
    if n < 2:
        raise InstanceFormatError(f"{path}: needs a depot row and at least one customer")
    coords = _array(inst["node_coord"], (n, 2), "XCOORD./YCOORD.", path)
    tw = _array(inst["time_window"], (n, 2), "READY TIME/DUE DATE", path)
    service = _array(inst["service_time"], (n,), "SERVICE TIME", path)
    demand = _array(inst["demand"], (n,), "DEMAND", path)
    return _build(path, "vrptw", coords, demand=demand, capacity=inst["capacity"],
                  time_window=tw, service_time=service, rounding="trunc1",
                  name=str(inst.get("name", path.stem)))


def read_lilim(path: str | os.PathLike) -> RoutingData:
    """A Li & Lim PDPTW instance: problem ``pdptw``, exact Euclidean distances.

    The first line is ``<vehicles> <capacity> <speed>``; the speed is ignored (it
    is 0 in some files; the benchmark's convention is travel time = distance).
    Then one row per node: ``id x y demand ready due service pickup delivery``.
    Pickups are the rows with ``delivery > 0``; demands stay signed.
    """
    path = Path(path)
    lines = _lines(path)
    header = lines[0].split()
    if len(header) != 3 or not all(_NUMBER.match(t) for t in header):
        raise InstanceFormatError(f"{path}: line 1 must be '<vehicles> <capacity> <speed>', "
                                  f"got {lines[0]!r}")
    rows = [line.split() for line in lines[1:]]
    for i, row in enumerate(rows):
        if len(row) != 9 or not all(_NUMBER.match(t) for t in row):
            raise InstanceFormatError(
                f"{path}: node row {i} must have 9 numbers (id x y demand ready due "
                f"service pickup delivery), got {' '.join(row)!r}")
    if len(rows) < 3:
        raise InstanceFormatError(f"{path}: needs a depot row and at least one pickup "
                                  f"and delivery, got {len(rows)} node rows")
    data = np.array(rows, dtype=np.float64)
    n = len(rows)
    ids = data[:, 0]
    if not np.array_equal(ids, np.arange(n)):
        bad = int(np.argmax(ids != np.arange(n)))
        raise InstanceFormatError(f"{path}: node rows must be numbered 0, 1, 2, ... "
                                  f"(row {bad} is numbered {ids[bad]:g})")
    pick_of, deliv_of = data[:, 7].astype(np.int64), data[:, 8].astype(np.int64)
    if pick_of[0] != 0 or deliv_of[0] != 0:
        raise InstanceFormatError(f"{path}: the depot (node 0) cannot be in a pickup/"
                                  f"delivery pair")
    outside = (pick_of < 0) | (pick_of >= n) | (deliv_of < 0) | (deliv_of >= n)
    if outside.any():
        bad = int(np.argmax(outside))
        raise InstanceFormatError(f"{path}: node {bad} refers to a node outside 0..{n - 1}")
    pickups = np.nonzero(deliv_of > 0)[0]
    for p in pickups:
        d = deliv_of[p]
        if pick_of[p] != 0 or pick_of[d] != p:
            raise InstanceFormatError(f"{path}: pickup {p} names delivery {d}, but node {d} "
                                      f"names pickup {pick_of[d]}")
    for d in np.nonzero(pick_of > 0)[0]:
        if deliv_of[pick_of[d]] != d:
            raise InstanceFormatError(f"{path}: delivery {d} names pickup {pick_of[d]}, "
                                      f"which names delivery {deliv_of[pick_of[d]]}")
    return _build(path, "pdptw", data[:, 1:3], demand=data[:, 3], capacity=float(header[1]),
                  time_window=data[:, 4:6], service_time=data[:, 6],
                  pickup_delivery_index=np.stack([pickups, deliv_of[pickups]]),
                  rounding="none", name=path.stem)


# --------------------------------------------------------------------------- solutions
def read_routes(path: str | os.PathLike) -> list[list[int]]:
    """Routes (node ids, depot omitted) of a solution file.

    Reads VRPLIB ``.sol`` files (``Route #r: ...`` lines, through
    ``vrplib.read_solution``) and SINTEF files (a header, ``Solution``, then
    ``Route k : ...`` lines). Customer ``c`` in the file is node ``c``. Empty
    routes (unused vehicles) are dropped.
    """
    path = Path(path)
    lines = _lines(path)
    route_lines = [line for line in lines if line.startswith("Route")]
    if not route_lines:
        raise InstanceFormatError(f"{path}: no 'Route ...' lines; not a solution file")
    sintef = any(line == "Solution" or line.startswith("Instance name") for line in lines)
    if sintef:
        routes = []
        for line in route_lines:
            head, sep, body = line.partition(":")
            if not sep or not all(_NUMBER.match(t) and "." not in t for t in body.split()):
                raise InstanceFormatError(f"{path}: bad route line {line!r} (expected "
                                          f"'Route k : id id ...')")
            routes.append([int(t) for t in body.split()])
    else:
        try:
            routes = vrplib.read_solution(path)["routes"]
        except Exception as exc:  # e.g. int() of a non-numeric id
            raise InstanceFormatError(f"{path}: not a valid solution file ({exc})") from None
    return [r for r in routes if r]


def attach_solution(instance: RoutingData, path: str | os.PathLike) -> RoutingData:
    """``RoutingData.from_routes(instance, read_routes(path))``, with any error in
    the routes reported against the solution file."""
    routes = read_routes(path)
    try:
        return RoutingData.from_routes(instance, routes)
    except InvalidSolutionError as exc:
        raise type(exc)(f"{path}: {exc}") from None


def read_bks(path: str | os.PathLike) -> dict[str, float]:
    """Best-known values from a ``bks.csv`` file (or a folder holding one).

    The first column names the instance; the value is the ``bks`` column (CVRPLib
    X, Solomon) or else the ``distance`` column (Li & Lim).
    """
    path = Path(path)
    if path.is_dir():
        path = path / "bks.csv"
    try:
        with path.open(newline="") as fh:
            reader = csv.DictReader(fh)
            rows = list(reader)
            header = reader.fieldnames
    except OSError as exc:
        raise InstanceFormatError(f"{path}: cannot be read ({exc})") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise InstanceFormatError(f"{path}: not a readable CSV file ({exc})") from None
    if header is None:
        raise InstanceFormatError(f"{path}: the file is empty")
    fields = list(rows[0]) if rows else list(header)
    column = next((c for c in ("bks", "distance", "cost") if c in fields), None)
    if column is None:
        raise InstanceFormatError(f"{path}: needs a 'bks' or 'distance' column, "
                                  f"got columns {fields}")
    out = {}
    for i, row in enumerate(rows, start=2):
        try:
            out[row[fields[0]].strip()] = float(row[column])
        except (TypeError, ValueError):
            raise InstanceFormatError(f"{path}: line {i}: {column} {row[column]!r} is not "
                                      f"a number") from None
    return out
