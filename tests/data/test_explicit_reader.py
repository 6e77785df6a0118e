"""VRPLIB/TSPLIB files with explicit edge weights (``EDGE_WEIGHT_TYPE: EXPLICIT``).

The bundled files in ``tests/data/explicit/`` are small hand-made instances whose
matrices are written out below, so every expectation is checked against numbers
typed by hand, not against the reader's own output.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from pyg_routing.data.benchmark_io import read_vrplib, sniff_format
from pyg_routing.data.benchmarks import BenchmarkDataset, load_instance
from pyg_routing.data.explicit_io import (
    SUPPORTED_FORMATS,
    TRIANGULAR_FORMATS,
    VRPLIB_FORMATS,
    classical_mds,
)
from pyg_routing.data.instance_files import read_instance_file
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.errors import InstanceFormatError, InvalidInstanceError

HERE = Path(__file__).resolve().parent / "explicit"

# The matrices of the bundled files, in the FILE's node order (1-based in the file).
ASYM6 = np.array([[0, 12, 7.5, 11, 15, 6],
                  [10, 0, 8, 16, 11, 4],
                  [6, 9, 0, 7, 8, 5.5],
                  [13, 17, 9, 0, 12, 14],
                  [16, 10, 7, 11, 0, 13],
                  [5, 3, 6.5, 15, 12, 0]])
ASYM6_ORDER = [2, 0, 1, 3, 4, 5]   # its depot is file node 3: node i is file node ORDER[i]+1
SYM6 = np.array([[0, 4, 3, 7, 5, 2],
                 [4, 0, 5.5, 2, 8, 6],
                 [3, 5.5, 0, 6, 3, 9],
                 [7, 2, 6, 0, 4, 7.25],
                 [5, 8, 3, 4, 0, 1],
                 [2, 6, 9, 7.25, 1, 0]])
RECT5 = np.array([[0, 5, 5, 5, 5],
                  [5, 0, 6, 8, 10],
                  [5, 6, 0, 10, 8],
                  [5, 8, 10, 0, 6],
                  [5, 10, 8, 6, 0]])
ATSP5 = np.array([[0, 3, 8, 2, 7],          # the file has 9999 on the diagonal
                  [5, 0, 4, 9, 6],
                  [1, 7, 0, 3, 8],
                  [6, 2, 5, 0, 4],
                  [9, 8, 2, 6, 0]])


def _raw(data: RoutingData) -> np.ndarray:
    n = data.num_nodes
    return data.raw_travel_cost.view(n, n).numpy()


# --------------------------------------------------------------------------- formats
@pytest.mark.parametrize("name,problem,matrix,order,scale", [
    ("asym6-full.vrp", "cvrp", ASYM6, ASYM6_ORDER, 10.0),   # NODE_COORD_SECTION: 0..10
    ("sym6-lower-row.vrp", "cvrp", SYM6, None, 4.0),        # DISPLAY_DATA_SECTION: 0..4
    ("rect5-full.vrp", "cvrp", RECT5, None, None),          # no coordinates: MDS
    ("asym5.atsp", "tsp", ATSP5, None, None),
])
def test_each_format_gives_the_files_matrix(name, problem, matrix, order, scale):
    data = load_instance(HERE / name)
    want = matrix if order is None else matrix[np.ix_(order, order)]
    assert data.problem == problem
    assert data.raw_travel_cost.dtype == torch.float64
    np.testing.assert_array_equal(_raw(data), want)          # exactly the file's numbers
    assert bool(data.explicit_cost) and int(data.rounding) == 0
    if scale is not None:
        assert float(data.scale) == scale
    expected = torch.tensor(want / float(data.scale), dtype=data.pos.dtype)
    torch.testing.assert_close(data.cost_matrix, expected)
    assert data.pos.min() == 0 and data.pos.max() == 1       # normalized like coordinates


def test_both_vrplib_formats_are_bundled():
    formats = {line.split(":")[1].strip() for f in HERE.iterdir() if f.suffix != ".sol"
               for line in f.read_text().splitlines() if line.startswith("EDGE_WEIGHT_FORMAT")}
    assert formats == set(VRPLIB_FORMATS)     # the triangular ones are written by the tests
    assert set(SUPPORTED_FORMATS) == set(VRPLIB_FORMATS) | set(TRIANGULAR_FORMATS)
    assert len(SUPPORTED_FORMATS) == 9         # TSPLIB's explicit formats but FUNCTION


def test_coordinates_come_from_the_file_when_it_has_them():
    asym = load_instance(HERE / "asym6-full.vrp")
    assert asym.raw_pos.tolist() == [[5, 5], [0, 0], [10, 0], [0, 10], [10, 10], [5, 0]]
    sym = load_instance(HERE / "sym6-lower-row.vrp")
    assert sym.raw_pos.tolist() == [[1, 1], [3, 1], [1, 4], [2, 2], [4, 4], [0, 0]]
    assert sym.depot_angle[0] == 0 and torch.isfinite(sym.depot_angle).all()


def test_atsp_diagonal_is_ignored_and_sniffed_as_vrplib():
    path = HERE / "asym5.atsp"
    assert sniff_format(path) == "vrplib"
    data = read_instance_file(path)
    assert "demand" not in data and "capacity" not in data
    assert (torch.diagonal(data.cost_matrix) == 0).all()


# --------------------------------------------------------------------------- costs
def test_asymmetric_cvrp_cost_is_the_hand_sum_and_depends_on_direction():
    inst = load_instance(HERE / "asym6-full.vrp")
    # node -> file node: 0->3, 1->1, 2->2, 3->4, 4->5, 5->6
    forward = RoutingData.from_routes(inst, [[1, 5, 2], [4, 3]])
    # 3->1->6->2->3: 6 + 6 + 3 + 8 = 23;  3->5->4->3: 8 + 11 + 9 = 28
    assert float(forward.cost()) == 51.0
    backward = RoutingData.from_routes(inst, [[2, 5, 1], [3, 4]])
    # 3->2->6->1->3: 9 + 4 + 5 + 7.5 = 25.5;  3->4->5->3: 7 + 12 + 7 = 26
    assert float(backward.cost()) == 51.5
    forward.check()
    torch.testing.assert_close(forward.arc_lengths(),
                               torch.tensor([6, 6, 3, 8, 8, 11, 9], dtype=torch.float64))


def test_solution_file_of_an_explicit_instance():
    data = load_instance(HERE / "asym6-full.vrp", solution=True)
    assert data.routes() == [[1, 5, 2], [4, 3]]
    assert float(data.cost()) == 51.0


def test_atsp_tour_cost_both_directions():
    inst = load_instance(HERE / "asym5.atsp")
    # 1->2->3->4->5->1: 3 + 4 + 3 + 4 + 9 = 23;  reversed 7 + 6 + 5 + 7 + 5 = 30
    assert float(RoutingData.from_routes(inst, [[1, 2, 3, 4]]).cost()) == 23.0
    assert float(RoutingData.from_routes(inst, [[4, 3, 2, 1]]).cost()) == 30.0


def test_lower_row_no_rounding():
    inst = load_instance(HERE / "sym6-lower-row.vrp")
    # 1->4->6->1: 7 + 7.25 + 2 ;  1->2->3->5->1: 4 + 5.5 + 3 + 5
    data = RoutingData.from_routes(inst, [[3, 5], [1, 2, 4]])
    assert float(data.cost()) == 16.25 + 17.5


@pytest.mark.parametrize("routes", [[[1, 2], [3, 4]], [[4, 2, 1], [3]], [[1], [2], [3], [4]]])
def test_coordinates_and_matrix_of_the_same_instance_cost_the_same(routes):
    euc = load_instance(HERE / "rect5-euc.vrp")
    full = load_instance(HERE / "rect5-full.vrp")
    assert "travel_cost" not in euc and "travel_cost" in full
    a = RoutingData.from_routes(euc, routes).cost()
    b = RoutingData.from_routes(full, routes).cost()
    assert float(a) == float(b)
    assert float(euc.scale) == 8.0
    # MDS keeps the 6 x 8 extent, up to LAPACK's rounding (8.000000000000002 with SciPy 1.10)
    assert float(full.scale) == pytest.approx(8.0, rel=1e-12)


# --------------------------------------------------------------------------- MDS
def _pairwise(x: np.ndarray) -> np.ndarray:
    return np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))


def test_mds_fallback_reproduces_a_euclidean_matrix():
    data = load_instance(HERE / "rect5-full.vrp")
    assert torch.isfinite(data.raw_pos).all() and torch.isfinite(data.pos).all()
    np.testing.assert_allclose(_pairwise(data.raw_pos.numpy()), RECT5, atol=1e-9)


def test_classical_mds_up_to_rotation_and_reflection():
    rng = np.random.default_rng(0)
    pts = rng.uniform(-50, 50, size=(12, 2))
    coords = classical_mds(_pairwise(pts))
    np.testing.assert_allclose(_pairwise(coords), _pairwise(pts), atol=1e-8)
    # centred points are an orthogonal transform of the centred original
    centred = pts - pts.mean(0)
    q, *_ = np.linalg.lstsq(coords, centred, rcond=None)
    np.testing.assert_allclose(q @ q.T, np.eye(2), atol=1e-8)
    np.testing.assert_array_equal(coords, classical_mds(_pairwise(pts)))   # deterministic
    # sign convention: each axis's largest-magnitude entry is positive
    assert (coords[np.abs(coords).argmax(0), [0, 1]] > 0).all()


def test_classical_mds_of_degenerate_and_non_euclidean_matrices():
    line = classical_mds(_pairwise(np.array([[0.0, 0], [3, 0], [7, 0]])))
    assert line.shape == (3, 2) and np.allclose(line[:, 1], 0)
    np.testing.assert_allclose(_pairwise(line), [[0, 3, 7], [3, 0, 4], [7, 4, 0]], atol=1e-9)
    two = classical_mds(np.array([[0.0, 4], [2, 0]]))          # symmetrized: 3 apart
    assert two.shape == (2, 2) and np.isclose(np.linalg.norm(two[0] - two[1]), 3)
    zero = classical_mds(np.zeros((4, 4)))
    assert (zero == 0).all() and not np.signbit(zero).any()     # no -0.0 either
    coords = classical_mds(ATSP5 * 1.0)                         # not Euclidean at all
    assert coords.shape == (5, 2) and np.isfinite(coords).all()


# --------------------------------------------------------------------------- loaders
def test_benchmark_dataset_reads_explicit_files(tmp_path):
    for name in ("asym6-full.vrp", "asym6-full.sol", "sym6-lower-row.vrp"):
        shutil.copy(HERE / name, tmp_path / name)
    ds = BenchmarkDataset(tmp_path, "x", with_solutions=False)
    assert ds.instance_names == ["asym6-full", "sym6-lower-row"]
    np.testing.assert_array_equal(_raw(ds[1]), SYM6)
    with_sol = BenchmarkDataset(tmp_path, "x", names=["asym6-full"])
    assert float(with_sol[0].cost()) == 51.0


# --------------------------------------------------------------------------- errors
HEAD = ("NAME: t\nTYPE: {kind}\nDIMENSION: {n}\nEDGE_WEIGHT_TYPE: EXPLICIT\n"
        "EDGE_WEIGHT_FORMAT: {fmt}\nEDGE_WEIGHT_SECTION\n")
CVRP_TAIL = ("DEMAND_SECTION\n1 0\n2 1\n3 1\n4 1\nDEPOT_SECTION\n1\n-1\nEOF\n")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _tsp(fmt: str, n: int, body: str, kind: str = "ATSP") -> str:
    return HEAD.format(kind=kind, n=n, fmt=fmt) + body + "EOF\n"


FULL4 = "0 1 2 3\n4 0 5 6\n7 8 0 9\n1 2 3 0\n"


def test_full_matrix_wrapped_in_any_lines(tmp_path):
    """TSPLIB reads a section as one stream: 25 numbers on one line, 16 as two lines
    of 8, or in lines of different lengths, are still the matrix row by row."""
    numbers = [f"{v:g}" for v in ATSP5.ravel()]
    one_line = read_vrplib(_write(tmp_path, "a.atsp", _tsp("FULL_MATRIX", 5,
                                                           " ".join(numbers) + "\n")))
    np.testing.assert_array_equal(_raw(one_line), ATSP5)
    ragged = "0 1 2 3 4 0\n5 6 7 8\n0 9 1 2 3 0\n"           # br17's kind of wrapping
    np.testing.assert_array_equal(_raw(read_vrplib(_write(tmp_path, "c.atsp", _tsp(
        "FULL_MATRIX", 4, ragged)))), [[0, 1, 2, 3], [4, 0, 5, 6], [7, 8, 0, 9], [1, 2, 3, 0]])
    two_lines = "0 1 2 3 4 0 5 6\n7 8 0 9 1 2 3 0\n"
    data = read_vrplib(_write(tmp_path, "b.atsp", _tsp("FULL_MATRIX", 4, two_lines)))
    np.testing.assert_array_equal(_raw(data), [[0, 1, 2, 3], [4, 0, 5, 6], [7, 8, 0, 9],
                                               [1, 2, 3, 0]])


@pytest.mark.parametrize("text,fragment", [
    (_tsp("UPPER_MATRIX", 4, "1 2 3\n4 5\n6\n"),
     r"EDGE_WEIGHT_FORMAT UPPER_MATRIX is not supported \(supported: FULL_MATRIX, "
     r"LOWER_ROW, UPPER_ROW, LOWER_COL, UPPER_DIAG_ROW"),
    (_tsp("LOWER_DIAG_ROW", 3, "0\n1 0\n2 3\n", kind="TSP"),
     r"\(LOWER_DIAG_ROW\) has 5 entries, expected 6 for DIMENSION 3"),
    (_tsp("UPPER_COL", 3, "1 2 x\n", kind="TSP"), r"\(UPPER_COL\) has a non-numeric entry 'x'"),
    (_tsp("UPPER_ROW", 3, "1 -2 3\n", kind="TSP"),
     r"\(UPPER_ROW\): the weight -2 of the arc 1 -> 3 .* is negative"),
    ("NAME: t\nTYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: EXPLICIT\n"
     "EDGE_WEIGHT_FORMAT: UPPER_ROW\nEOF\n", "needs an EDGE_WEIGHT_SECTION"),
    (HEAD.replace("EDGE_WEIGHT_FORMAT: {fmt}\n", "").format(kind="ATSP", n=4) + FULL4 + "EOF\n",
     "a missing EDGE_WEIGHT_FORMAT is not supported"),
    (_tsp("FULL_MATRIX", 4, "0 1 2 3\n4 0 5 6\n7 8 0 9\n1 2 0\n"),
     r"EDGE_WEIGHT_SECTION \(FULL_MATRIX\) has 15 entries, expected 16 for DIMENSION 4"),
    (_tsp("FULL_MATRIX", 4, FULL4 + "5 5 5 5\n"),
     r"has 20 entries, expected 16 for DIMENSION 4"),
    (_tsp("FULL_MATRIX", 4, "0 1 2 3 4 0\n5 6 7 8\n0 9 1 2 3\n"),
     r"\(FULL_MATRIX\) has 15 entries, expected 16 for DIMENSION 4"),
    (_tsp("FULL_MATRIX", 5, FULL4),
     r"\(FULL_MATRIX\) has 16 entries, a 4 x 4 matrix, but DIMENSION is 5 \(expected 25"),
    (_tsp("LOWER_ROW", 4, "1\n2 3\n4 5\n", kind="TSP"),
     r"\(LOWER_ROW\) has 5 entries, expected 6 for DIMENSION 4"),
    (_tsp("LOWER_ROW", 5, "1\n2 3\n4 5 6\n", kind="TSP"),
     r"\(LOWER_ROW\) has 6 entries, a 4 x 4 matrix, but DIMENSION is 5 \(expected 10"),
    (_tsp("FULL_MATRIX", 4, FULL4.replace("5 6", "-5 6")),
     r"the weight -5 of the arc 2 -> 3 \(file node ids\) is negative"),
    (_tsp("LOWER_ROW", 4, "1\n2 3\n4 -1 6\n", kind="TSP"),
     r"the weight -1 of the arc 2 -> 4 .* is negative"),
    (_tsp("FULL_MATRIX", 4, FULL4.replace("8", "nan")), r"weight nan of the arc 3 -> 2 .*"
     r"is not finite; weights must be finite and >= 0"),
    (_tsp("FULL_MATRIX", 4, FULL4.replace("9", "inf")), r"weight inf of the arc 3 -> 4"),
    (_tsp("FULL_MATRIX", 4, FULL4.replace("9", "x")),
     r"\(FULL_MATRIX\) has a non-numeric entry 'x'"),
    (_tsp("LOWER_ROW", 4, "1\n2 x\n4 5 6\n", kind="TSP"),
     r"\(LOWER_ROW\) has a non-numeric entry 'x'"),
    ("NAME: t\nTYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: EXPLICIT\n"
     "EDGE_WEIGHT_FORMAT: FULL_MATRIX\nEOF\n", "needs an EDGE_WEIGHT_SECTION"),
    (_tsp("FULL_MATRIX", 4, ""), r"has 0 entries, expected 16"),
    (_tsp("LOWER_ROW", 4, "", kind="TSP"), r"has 0 entries, expected 6"),
    (_tsp("full_matrix", 4, FULL4), "only in capitals, got 'EXPLICIT' and 'full_matrix'"),
    (_tsp("FULL_MATRIX", 4, FULL4).replace("EXPLICIT", "explicit"), "only in capitals"),
    (_tsp("FULL_MATRIX", 4, FULL4 + "NODE_COORD_SECTION\n1 0 0\n2 1 1\n3 2 2\n"),
     "NODE_COORD_SECTION has 3 rows, expected 4"),
    ("NAME: t\nTYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n"
     "1 0 0\n2 1 1\n3 2 2\nEOF\n", "TYPE TSP is not supported .*EXPLICIT"),
    (HEAD.format(kind="CVRP", n=4, fmt="FULL_MATRIX") + FULL4 + CVRP_TAIL,
     "missing the CAPACITY field"),
    (HEAD.format(kind="CVRP", n=4, fmt="FULL_MATRIX").replace("EDGE_WEIGHT_SECTION",
     "CAPACITY: 1\nEDGE_WEIGHT_SECTION") + FULL4 + CVRP_TAIL.replace("4 1", "4 3"),
     "exceeds the vehicle capacity"),
])
def test_explicit_errors_name_the_file_and_the_problem(tmp_path, text, fragment):
    path = _write(tmp_path, "broken.vrp", text)
    with pytest.raises(InstanceFormatError, match=fragment) as info:
        load_instance(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, InvalidInstanceError)
    exc = info.value                                   # no vrplib traceback attached
    assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)


SYM4 = np.array([[0, 1, 2, 3], [1, 0, 4, 5], [2, 4, 0, 6], [3, 5, 6, 0]], dtype=float)


def _stream(fmt: str, matrix: np.ndarray) -> list[float]:
    """The numbers of ``matrix`` in TSPLIB's order for ``fmt``, written out entry by
    entry from the format's definition (the reader uses numpy's triangle indices)."""
    n = len(matrix)
    diag = "DIAG" in fmt
    upper = fmt.startswith("UPPER")
    by_row = fmt.endswith("ROW")
    out = []
    for a in range(n):
        for b in range(n):
            i, j = (a, b) if by_row else (b, a)          # column-wise: walk columns
            if i == j and not diag:
                continue
            if (i < j if upper else i > j) or i == j:
                out.append(matrix[i, j])
    return out


@pytest.mark.parametrize("fmt", ["UPPER_ROW", "LOWER_COL", "UPPER_DIAG_ROW", "LOWER_DIAG_ROW",
                                 "UPPER_COL", "UPPER_DIAG_COL", "LOWER_DIAG_COL", "LOWER_ROW"])
@pytest.mark.parametrize("wrap", [1, 4, 100])
def test_every_triangular_format_gives_the_symmetric_matrix(tmp_path, fmt, wrap):
    """TSPLIB's explicit formats but FULL_MATRIX (and FUNCTION): each stream fills the
    triangle it names (column-wise: walking the columns), wrapped in lines of any
    length; LOWER_ROW is vrplib's own, the others parse_vrplib_text's."""
    rng = np.random.default_rng(len(fmt) + wrap)
    upper = np.triu(rng.integers(1, 90, (6, 6)).astype(float), 1)
    matrix = upper + upper.T
    numbers = [f"{v:g}" for v in _stream(fmt, matrix)]
    body = "\n".join(" ".join(numbers[k:k + wrap]) for k in range(0, len(numbers), wrap)) + "\n"
    cvrp = HEAD.format(kind="CVRP", n=6, fmt=fmt).replace(
        "EDGE_WEIGHT_SECTION", "CAPACITY: 9\nEDGE_WEIGHT_SECTION") + body + \
        "DEMAND_SECTION\n1 0\n2 1\n3 1\n4 1\n5 1\n6 1\nDEPOT_SECTION\n1\n-1\nEOF\n"
    data = read_vrplib(_write(tmp_path, "t.vrp", cvrp))
    np.testing.assert_array_equal(_raw(data), matrix)
    assert data.problem == "cvrp" and int(data.demand.sum()) == 5
    tsp = read_vrplib(_write(tmp_path, "t.tsp", _tsp(fmt, 6, body, kind="TSP")))
    np.testing.assert_array_equal(_raw(tsp), matrix)


def test_the_stream_order_of_the_column_formats_by_hand():
    assert _stream("UPPER_ROW", SYM4) == [1, 2, 3, 4, 5, 6]
    assert _stream("LOWER_COL", SYM4) == [1, 2, 3, 4, 5, 6]
    assert _stream("UPPER_COL", SYM4) == [1, 2, 4, 3, 5, 6]
    assert _stream("LOWER_ROW", SYM4) == [1, 2, 4, 3, 5, 6]
    assert _stream("LOWER_DIAG_ROW", SYM4) == [0, 1, 0, 2, 4, 0, 3, 5, 6, 0]


@pytest.mark.parametrize("diagonal", ["-1", "inf", "nan", "100000000"])
def test_the_diagonal_is_ignored_whatever_it_holds(tmp_path, diagonal):
    body = "\n".join(" ".join(diagonal if i == j else f"{v:g}" for j, v in enumerate(row))
                     for i, row in enumerate(ATSP5)) + "\n"
    data = read_vrplib(_write(tmp_path, "d.atsp", _tsp("FULL_MATRIX", 5, body)))
    np.testing.assert_array_equal(_raw(data), ATSP5)
    assert torch.isfinite(data.pos).all()


def test_good_cvrp_template_reads(tmp_path):
    """The error templates above are one edit away from a valid file."""
    text = HEAD.format(kind="CVRP", n=4, fmt="FULL_MATRIX").replace(
        "EDGE_WEIGHT_SECTION", "CAPACITY: 3\nEDGE_WEIGHT_SECTION") + FULL4 + CVRP_TAIL
    data = read_vrplib(_write(tmp_path, "ok.vrp", text))
    np.testing.assert_array_equal(_raw(data), np.array([[0, 1, 2, 3], [4, 0, 5, 6],
                                                        [7, 8, 0, 9], [1, 2, 3, 0]]))
    assert float(RoutingData.from_routes(data, [[1, 2, 3]]).cost()) == 1 + 5 + 9 + 1
    assert read_vrplib(_write(tmp_path, "ok.atsp", _tsp("FULL_MATRIX", 4, FULL4))).problem \
        == "tsp"
