"""Explicit edge weights in VRPLIB/TSPLIB files (``EDGE_WEIGHT_TYPE: EXPLICIT``).

:func:`~pyg_routing.data.benchmark_io.read_vrplib` lets ``vrplib`` parse the
``EDGE_WEIGHT_SECTION``; this module checks what it returns and turns it into the
instance's cost matrix (float64, the file's own units, used exactly as given: no
rounding), and finds the instance's coordinates.

``vrplib`` (2.2) parses two of TSPLIB's formats, :data:`SUPPORTED_FORMATS`:
``FULL_MATRIX`` (``N x N``, row by row, possibly asymmetric: ATSP) and
``LOWER_ROW`` (the strict lower triangle row by row, symmetric). Other formats
(``UPPER_ROW``, ``LOWER_DIAG_ROW``, ...) are refused with a message that lists
these two, rather than read by a parser of our own that ``vrplib`` would disagree
with.

Coordinates are needed by the encodings only (the depot angle, the positional
encodings), never for costs: ``NODE_COORD_SECTION`` when the file has one, else
``DISPLAY_DATA_SECTION``, else a 2-D embedding of the symmetrized matrix by
classical multidimensional scaling (:func:`classical_mds`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
from scipy.linalg import eigh

from pyg_routing.errors import InstanceFormatError

#: The ``EDGE_WEIGHT_FORMAT``s of explicit matrices that ``vrplib`` parses (its
#: ``parse_distances``); any other is refused.
SUPPORTED_FORMATS = ("FULL_MATRIX", "LOWER_ROW")

#: Where an explicit instance's coordinates come from, in order of preference (the
#: parsed ``vrplib`` key and the file's section); none: :func:`classical_mds`.
COORD_SECTIONS = (("node_coord", "NODE_COORD_SECTION"),
                  ("display_data", "DISPLAY_DATA_SECTION"))

_SPEC = re.compile(r"^\s*([A-Za-z_]+)\s*:\s*(.*?)\s*$")


def _first_non_number(values: list[Any]) -> Any:
    """The first of ``values`` that is not a number (``vrplib`` keeps such a token
    as a string, and numpy then turns the whole section into strings)."""
    for v in values:
        try:
            float(v)
        except (TypeError, ValueError):
            return v
    return None


def _expected_entries(fmt: str, n: int) -> int:
    """How many numbers the section of format ``fmt`` holds for ``n`` nodes."""
    return n * n if fmt == "FULL_MATRIX" else n * (n - 1) // 2


def _unsupported(path: Path, fmt: str) -> InstanceFormatError:
    got = f"EDGE_WEIGHT_FORMAT {fmt}" if fmt else "a missing EDGE_WEIGHT_FORMAT"
    return InstanceFormatError(
        f"{path}: EDGE_WEIGHT_TYPE EXPLICIT with {got} is not supported (vrplib "
        f"reads only {', '.join(SUPPORTED_FORMATS)})")


def explicit_matrix(inst: dict[str, Any], n: int, path: Path) -> np.ndarray:
    """The ``[n, n]`` float64 cost matrix of a parsed explicit instance, in the
    file's node order and units; its diagonal is set to 0 (staying put costs
    nothing, whatever the file puts there: TSPLIB ATSP files often write 9999).

    Raises:
        InstanceFormatError: an unsupported or missing ``EDGE_WEIGHT_FORMAT``, no
            ``EDGE_WEIGHT_SECTION``, non-numeric entries, a wrong number of entries
            or a size other than ``DIMENSION``, a negative or non-finite weight
            (naming the arc with the file's 1-based node ids).
    """
    fmt = str(inst.get("edge_weight_format", "")).upper()
    if fmt not in SUPPORTED_FORMATS:
        raise _unsupported(path, fmt)
    if "edge_weight" not in inst:
        raise InstanceFormatError(f"{path}: EDGE_WEIGHT_TYPE EXPLICIT needs an "
                                  f"EDGE_WEIGHT_SECTION")
    section = f"EDGE_WEIGHT_SECTION ({fmt})"
    raw = np.asarray(inst["edge_weight"])
    if raw.dtype.kind not in "biuf":
        raise InstanceFormatError(f"{path}: {section} has a non-numeric entry "
                                  f"{_first_non_number(raw.ravel().tolist())!r}")
    matrix = raw.astype(np.float64)
    want = _expected_entries(fmt, n)
    if matrix.shape != (n, n):
        if fmt == "FULL_MATRIX" and matrix.size == n * n:
            # TSPLIB reads a section as one stream of numbers: lines of equal length
            # that do not each hold a matrix row are still the matrix, row by row.
            matrix = matrix.reshape(n, n)
        elif matrix.ndim == 2 and matrix.shape[0] == matrix.shape[1]:
            k = matrix.shape[0]
            got = _expected_entries(fmt, k)
            raise InstanceFormatError(
                f"{path}: {section} has {got} entries, a {k} x {k} matrix, but DIMENSION "
                f"is {n} (expected {want} entries)")
        else:
            raise InstanceFormatError(f"{path}: {section} has {matrix.size} entries, "
                                      f"expected {want} for DIMENSION {n}")
    np.fill_diagonal(matrix, 0.0)
    for bad, what in ((~np.isfinite(matrix), "not finite"), (matrix < 0, "negative")):
        if bad.any():
            i, j = (int(v) for v in np.argwhere(bad)[0])
            raise InstanceFormatError(
                f"{path}: {section}: the weight {matrix[i, j]:g} of the arc {i + 1} -> "
                f"{j + 1} (file node ids) is {what}; weights must be finite and >= 0")
    return matrix


def explain_failure(path: Path) -> str | None:
    """Why ``vrplib`` could not parse the explicit matrix of ``path``, or ``None``
    when the file does not declare one or the cause is elsewhere.

    ``vrplib`` fails on these files with bare ``ValueError``s ("Edge weight type or
    format unknown.", a numpy broadcasting message); this reads the header fields
    and counts the section's numbers to say what is wrong in the file's terms.
    """
    try:
        lines = [s for line in path.read_text().splitlines() if (s := line.strip())]
    except (OSError, UnicodeDecodeError):
        return None
    start = next((i for i, s in enumerate(lines) if "_SECTION" in s), len(lines))
    specs = {m.group(1).upper(): m.group(2) for s in lines[:start] if (m := _SPEC.match(s))}
    ewt, fmt = specs.get("EDGE_WEIGHT_TYPE", ""), specs.get("EDGE_WEIGHT_FORMAT", "")
    if ewt.upper() != "EXPLICIT":
        return None
    if fmt.upper() not in SUPPORTED_FORMATS:
        return str(_unsupported(path, fmt.upper()))
    if ewt != "EXPLICIT" or fmt != fmt.upper():
        return (f"{path}: vrplib reads EDGE_WEIGHT_TYPE and EDGE_WEIGHT_FORMAT only in "
                f"capitals, got {ewt!r} and {fmt!r}")
    fmt = fmt.upper()
    head = next((i for i, s in enumerate(lines) if s.startswith("EDGE_WEIGHT_SECTION")), None)
    if head is None:
        return None
    rows = []
    for s in lines[head + 1:]:
        if "_SECTION" in s or "EOF" in s:
            break
        rows.append(s.split())
    section = f"EDGE_WEIGHT_SECTION ({fmt})"
    tokens = [t for row in rows for t in row]
    bad = _first_non_number(tokens)
    if bad is not None:
        return f"{path}: {section} has a non-numeric entry {bad!r}"
    dim = specs.get("DIMENSION", "")
    if not dim.isdigit():
        return None
    n = int(dim)
    want = _expected_entries(fmt, n)
    if len(tokens) != want:
        return (f"{path}: {section} has {len(tokens)} entries, expected {want} for "
                f"DIMENSION {n}")
    if fmt == "FULL_MATRIX" and len({len(row) for row in rows}) > 1:
        return (f"{path}: {section} has lines of different lengths; vrplib reads a "
                f"FULL_MATRIX only with every line the same length (e.g. one matrix row "
                f"per line)")
    return None


def classical_mds(matrix: np.ndarray) -> np.ndarray:
    """``[N, 2]`` coordinates whose Euclidean distances best match the symmetrized
    ``matrix`` (classical multidimensional scaling, Torgerson's method).

    Only for the encodings of an instance that has no coordinates: the costs stay
    the matrix's. ``(M + M^T) / 2`` is embedded by the two largest eigenpairs of the
    double-centred squared distances; negative eigenvalues (a non-Euclidean matrix)
    and those at rounding-error level count as 0. A Euclidean matrix is reproduced
    up to rotation, reflection and translation. Deterministic: each axis is flipped
    so that its entry of largest magnitude is positive.
    """
    sym = (matrix + matrix.T) / 2.0
    np.fill_diagonal(sym, 0.0)
    n = sym.shape[0]
    centred = sym ** 2
    centred -= centred.mean(axis=0, keepdims=True)
    centred -= centred.mean(axis=1, keepdims=True)
    gram = -0.5 * centred
    gram = (gram + gram.T) / 2.0                       # exactly symmetric for eigh
    k = min(2, n)
    values, vectors = eigh(gram, subset_by_index=[n - k, n - 1])
    values, vectors = values[::-1], vectors[:, ::-1]   # largest first
    # Eigenvalues at rounding-error level are 0 (a collinear set stays on a line,
    # not sqrt(noise) off it), and so are negative ones.
    noise = 100 * n * np.finfo(np.float64).eps * max(float(np.abs(values).max()), 0.0)
    coords = vectors * np.sqrt(np.where(values > noise, values, 0.0))
    signs = np.sign(coords[np.argmax(np.abs(coords), axis=0), np.arange(k)])
    coords = coords * np.where(signs == 0, 1.0, signs) + 0.0   # + 0.0: no -0.0 entries
    if k < 2:
        coords = np.hstack([coords, np.zeros((n, 2 - k))])
    return np.ascontiguousarray(coords)
