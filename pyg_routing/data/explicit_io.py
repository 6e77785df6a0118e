"""Explicit edge weights in VRPLIB/TSPLIB files (``EDGE_WEIGHT_TYPE: EXPLICIT``).

:func:`~pyg_routing.data.benchmark_io.read_vrplib` lets ``vrplib`` parse the
``EDGE_WEIGHT_SECTION``; this module checks what it returns and turns it into the
instance's cost matrix (float64, the file's own units, used exactly as given: no
rounding), and finds the instance's coordinates.

``vrplib`` (2.2) parses two of TSPLIB's formats, :data:`VRPLIB_FORMATS`:
``FULL_MATRIX`` (``N x N``, row by row, possibly asymmetric: ATSP) and
``LOWER_ROW`` (the strict lower triangle row by row, symmetric). TSPLIB's seven
other triangular formats (:data:`TRIANGULAR_FORMATS`: ``UPPER_ROW``,
``LOWER_DIAG_ROW``, the column-wise ones, ...) make ``vrplib`` fail on the whole
file, and so does a ``FULL_MATRIX`` wrapped in lines of different lengths (br17);
for these :func:`parse_vrplib_text` lets ``vrplib`` parse every other section and
reads the ``EDGE_WEIGHT_SECTION`` as TSPLIB defines it: one stream of numbers
filling the matrix or the triangle. Any other format is refused with a message that lists the
supported ones.

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
from vrplib.parse import parse_vrplib

from pyg_routing.errors import InstanceFormatError

#: The ``EDGE_WEIGHT_FORMAT``s of explicit matrices that ``vrplib`` parses (its
#: ``parse_distances``).
VRPLIB_FORMATS = ("FULL_MATRIX", "LOWER_ROW")
#: TSPLIB's other triangular formats (symmetric matrices), read by
#: :func:`parse_vrplib_text`: the triangle the stream fills row by row, and whether the
#: diagonal is in it. A column-wise triangle is the other triangle read row-wise.
TRIANGULAR_FORMATS = {
    "UPPER_ROW": ("upper", False), "LOWER_COL": ("upper", False),
    "UPPER_DIAG_ROW": ("upper", True), "LOWER_DIAG_COL": ("upper", True),
    "UPPER_COL": ("lower", False),
    "LOWER_DIAG_ROW": ("lower", True), "UPPER_DIAG_COL": ("lower", True),
}
#: Every format read; any other is refused.
SUPPORTED_FORMATS = (*VRPLIB_FORMATS, *TRIANGULAR_FORMATS)

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
    if fmt == "FULL_MATRIX":
        return n * n
    with_diagonal = TRIANGULAR_FORMATS.get(fmt, ("", False))[1]
    return n * (n + 1) // 2 if with_diagonal else n * (n - 1) // 2


def _header(lines: list[str]) -> dict[str, str]:
    """The ``KEY: value`` specifications before the first section, keys in capitals."""
    start = next((i for i, s in enumerate(lines) if "_SECTION" in s), len(lines))
    return {m.group(1).upper(): m.group(2) for s in lines[:start] if (m := _SPEC.match(s))}


def _section_span(lines: list[str]) -> tuple[int, int] | None:
    """``(first, end)`` lines of the ``EDGE_WEIGHT_SECTION`` (its header line and the
    line after its last number), or ``None`` without one."""
    head = next((i for i, s in enumerate(lines)
                 if s.strip().startswith("EDGE_WEIGHT_SECTION")), None)
    if head is None:
        return None
    end = next((i for i in range(head + 1, len(lines))
                if "_SECTION" in lines[i] or lines[i].strip() == "EOF"), len(lines))
    return head, end


def parse_vrplib_text(text: str) -> dict[str, Any]:
    """``vrplib``'s parse of a VRPLIB file's ``text`` (what ``vrplib.read_instance``
    with ``compute_edge_weights=False`` returns), also for the explicit files ``vrplib``
    cannot read: one in :data:`TRIANGULAR_FORMATS` or a ``FULL_MATRIX`` in lines of
    different lengths. For those ``vrplib`` parses the text without its
    ``EDGE_WEIGHT_SECTION``, whose numbers come back as one stream of tokens under
    ``edge_weight_stream`` (checked and placed by :func:`explicit_matrix`).

    Raises:
        Exception: whatever ``vrplib`` raises on a malformed file.
    """
    lines = text.splitlines()
    specs = _header(lines)
    span = _section_span(lines) if specs.get("EDGE_WEIGHT_TYPE") == "EXPLICIT" else None
    if span is not None:
        head, end = span
        rows = [s.split() for s in lines[head + 1:end] if s.strip()]
        fmt = specs.get("EDGE_WEIGHT_FORMAT")
        if fmt in TRIANGULAR_FORMATS or (fmt == "FULL_MATRIX"
                                         and len({len(r) for r in rows}) > 1):
            inst = parse_vrplib("\n".join(lines[:head] + lines[end:]),
                                compute_edge_weights=False)
            inst["edge_weight_stream"] = [t for r in rows for t in r]
            return inst
    return parse_vrplib(text, compute_edge_weights=False)


def _triangle_matrix(values: np.ndarray, fmt: str, n: int) -> np.ndarray:
    """The symmetric ``[n, n]`` matrix whose triangle (:data:`TRIANGULAR_FORMATS`)
    the stream ``values`` fills row by row."""
    triangle, with_diagonal = TRIANGULAR_FORMATS[fmt]
    offset = 0 if with_diagonal else 1
    rows, cols = np.triu_indices(n, offset) if triangle == "upper" \
        else np.tril_indices(n, -offset)
    matrix = np.zeros((n, n))
    matrix[rows, cols] = values
    matrix[cols, rows] = values
    return matrix


def _unsupported(path: Path, fmt: str) -> InstanceFormatError:
    got = f"EDGE_WEIGHT_FORMAT {fmt}" if fmt else "a missing EDGE_WEIGHT_FORMAT"
    return InstanceFormatError(
        f"{path}: EDGE_WEIGHT_TYPE EXPLICIT with {got} is not supported (supported: "
        f"{', '.join(SUPPORTED_FORMATS)})")


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
    if "edge_weight" not in inst and "edge_weight_stream" not in inst:
        raise InstanceFormatError(f"{path}: EDGE_WEIGHT_TYPE EXPLICIT needs an "
                                  f"EDGE_WEIGHT_SECTION")
    section = f"EDGE_WEIGHT_SECTION ({fmt})"
    want = _expected_entries(fmt, n)
    if "edge_weight_stream" in inst:            # tokens (parse_vrplib_text)
        tokens = inst["edge_weight_stream"]
        bad = _first_non_number(tokens)
        if bad is not None:
            raise InstanceFormatError(f"{path}: {section} has a non-numeric entry {bad!r}")
        if len(tokens) != want:
            raise InstanceFormatError(f"{path}: {section} has {len(tokens)} entries, "
                                      f"expected {want} for DIMENSION {n}")
        values = np.asarray(tokens, dtype=np.float64)
        raw = values.reshape(n, n) if fmt == "FULL_MATRIX" else _triangle_matrix(values, fmt, n)
    else:
        raw = np.asarray(inst["edge_weight"])
    if raw.dtype.kind not in "biuf":
        raise InstanceFormatError(f"{path}: {section} has a non-numeric entry "
                                  f"{_first_non_number(raw.ravel().tolist())!r}")
    matrix = raw.astype(np.float64)
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
    specs = _header(lines)
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
