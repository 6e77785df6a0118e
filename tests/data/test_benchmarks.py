"""Benchmark loaders: CVRPLib X, Solomon and Li & Lim against their best-known values."""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.loader import DataLoader

from pyg_routing.data import RoutingData
from pyg_routing.data.benchmarks import (
    BUNDLED_DIR,
    ENV_VAR,
    BenchmarkDataset,
    load_instance,
    read_bks,
)
from pyg_routing.errors import InstanceFormatError, InvalidSolutionError, UnknownInstanceError

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
PAPER_TEX = SHARED.parent / "paper" / "routing-pe-paper.tex"
X_DIR, SOLOMON_DIR, LILIM_DIR = SHARED / "cvrplib" / "X", SHARED / "solomon", SHARED / "lilim"
needs_x = pytest.mark.skipif(not (X_DIR / "bks.csv").is_file(), reason=f"{X_DIR} missing")
needs_solomon = pytest.mark.skipif(not (SOLOMON_DIR / "bks.csv").is_file(),
                                   reason=f"{SOLOMON_DIR} missing")
needs_lilim = pytest.mark.skipif(not (LILIM_DIR / "bks.csv").is_file(),
                                 reason=f"{LILIM_DIR} missing")

X_HEADER = ("NAME : \tT\t\r\nTYPE : \tCVRP\t\r\nDIMENSION : \t4\t\r\n"
            "EDGE_WEIGHT_TYPE : \tEUC_2D\t\r\nCAPACITY : \t10\t\r\n")
X_COORDS = "NODE_COORD_SECTION\t\t\r\n1\t0\t0\r\n2\t3\t4\r\n3\t6\t0\r\n4\t0\t2\r\n"
X_DEMAND = "DEMAND_SECTION\t\t\r\n1\t0\r\n2\t5\r\n3\t5\r\n4\t5\r\n"
X_DEPOT = "DEPOT_SECTION\t\t\r\n\t1\t\r\n\t-1\t\r\nEOF\t"
X_GOOD = X_HEADER + X_COORDS + X_DEMAND + X_DEPOT


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """An empty data_dir, no PYG_ROUTING_DATA and a cwd with no shared/data nearby."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    cwd = tmp_path / "a" / "b" / "c"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    empty = tmp_path / "empty"
    empty.mkdir()
    return empty


def _csv(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as fh:
        return {row["instance"]: row for row in csv.DictReader(fh)}


def _write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_bytes(text.encode())
    return path


# --------------------------------------------------------------------------- bundled
def test_x_n101_k25_cost_is_the_bks():
    data = load_instance("X-n101-k25.vrp", solution="X-n101-k25.sol")
    assert data.problem == "cvrp" and data.name == "X-n101-k25"
    assert data.cost().item() == 27591
    data.check()


@pytest.mark.parametrize("name,problem,nodes", [
    ("X-n101-k25.vrp", "cvrp", 101), ("X-n101-k25", "cvrp", 101), ("C101", "vrptw", 101),
    ("c101", "vrptw", 101), ("C101.txt", "vrptw", 101), ("lc101", "pdptw", 107)])
def test_bundled_names_resolve_without_shared_data(isolated, name, problem, nodes):
    data = load_instance(name, solution=True, data_dir=isolated)
    assert data.problem == problem and data.num_nodes == nodes
    data.check()


def test_bundled_costs_and_files(isolated):
    assert load_instance("C101", solution=True).cost().item() == pytest.approx(827.3, abs=1e-9)
    lc = load_instance("lc101", solution=True)
    assert abs(lc.cost().item() - 828.9369) < 0.01 and int(lc.num_routes) == 10
    names = {p.name for p in BUNDLED_DIR.rglob("*") if p.is_file()}
    assert {"X-n101-k25.vrp", "X-n101-k25.sol", "C101.txt", "C101.sol", "lc101.txt",
            "lc101.10_828.9369.txt", "SOURCES.md"} <= names


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared data missing")
def test_bundled_files_are_byte_copies():
    for path in BUNDLED_DIR.rglob("*"):
        # paper/ holds tables read from the paper's LaTeX source: checked row by row below;
        # cordeau/ has no copy in the shared data: tests/test_cordeau_io.py checks its
        # files' git blob ids against the upstream commits SOURCES.md names
        if path.is_file() and path.name != "SOURCES.md" \
                and path.parent.name not in ("paper", "cordeau"):
            upstream = next(SHARED.rglob(path.name), None)
            assert upstream is not None, f"{path.name}: no file of that name under {SHARED}"
            assert path.read_bytes() == upstream.read_bytes(), path.name


@pytest.mark.skipif(not PAPER_TEX.is_file(), reason="paper source missing")
def test_bundled_paper_table_rows_are_the_papers():
    # the table is set in two columns: a row may start a source line or follow "&"
    tex = {",".join(re.split(r"\s*&\s*", match))
           for match in re.findall(r"X-n\d+-k\d+(?:\s*&\s*[\d.]+){5}", PAPER_TEX.read_text())}
    rows = (BUNDLED_DIR / "paper" / "tab_cvrplib_x.csv").read_text().splitlines()[1:]
    assert len(rows) == 84
    for row in rows:
        assert row in tex, row


# --------------------------------------------------------------------------- full sets
@needs_x
def test_all_x_solutions_match_bks_and_are_feasible():
    bks = read_bks(X_DIR)
    assert len(bks) == 100
    wrong = []
    for name, value in bks.items():
        data = load_instance(X_DIR / f"{name}.vrp", solution=X_DIR / f"{name}.sol")
        data.check()
        if data.cost().item() != value:
            wrong.append((name, data.cost().item(), value))
    assert not wrong


@needs_solomon
def test_all_solomon_solutions_match_bks_and_are_feasible():
    table = _csv(SOLOMON_DIR / "bks.csv")
    assert len(table) == 56
    for name, row in table.items():
        data = load_instance(name, solution=True, data_dir=SOLOMON_DIR)
        assert data.problem == "vrptw"
        data.check()  # capacity and time windows, DIMACS travel times
        assert data.cost().item() == pytest.approx(float(row["bks"]), abs=1e-6), name
        assert int(data.num_routes) == int(row["vehicles"]), name


@needs_solomon
def test_solomon_feasibility_needs_dimacs_travel_times():
    """Some CVRPLib VRPTW best-known solutions are only feasible with distances
    truncated to one decimal; exact distances make them late."""
    late = []
    for path in sorted(SOLOMON_DIR.glob("*.txt")):
        data = load_instance(path, solution=True)
        data.rounding = torch.tensor([0])  # exact Euclidean distances
        if not bool(data.is_feasible()):
            late.append(path.stem)
    assert late  # (8 of the 56 in the July 2023 snapshot)


@needs_lilim
def test_all_lilim_solutions_match_bks_and_are_feasible():
    table = _csv(LILIM_DIR / "bks.csv")
    assert len(table) == 56
    for name, row in table.items():
        data = load_instance(name, solution=True, data_dir=LILIM_DIR)
        assert data.problem == "pdptw"
        data.check()  # capacity, time windows, precedence
        assert abs(data.cost().item() - float(row["distance"])) < 0.01, name
        assert int(data.num_routes) == int(row["vehicles"]), name
        p, d = data.pickup_delivery_index
        assert (data.demand[p] > 0).all() and (data.demand[p] == -data.demand[d]).all()


def test_reversed_routes_are_caught():
    for name in ("C101", "lc101"):
        data = load_instance(name, solution=True)
        routes = data.routes()
        routes[0] = routes[0][::-1]
        assert not bool(RoutingData.from_routes(data, routes).is_feasible())


# --------------------------------------------------------------------------- normalization
@pytest.mark.parametrize("name", ["X-n101-k25", "C101", "lc101"])
def test_one_scale_keeps_aspect_ratio(name):
    data = load_instance(name)
    raw = data.raw_pos
    assert raw.dtype == torch.float64
    span = raw.max(0).values - raw.min(0).values
    scale = float(data.scale)
    assert scale == float(span.max())
    expected = (raw - raw.min(0).values) / scale
    torch.testing.assert_close(data.pos.double(), expected, rtol=0, atol=1e-6)
    pos_span = data.pos.max(0).values - data.pos.min(0).values
    assert float(pos_span.max()) == pytest.approx(1.0)
    assert float(pos_span[0] / pos_span[1]) == pytest.approx(float(span[0] / span[1]), rel=1e-5)
    if "raw_time_window" in data:
        torch.testing.assert_close(data.time_window.double() * scale, data.raw_time_window,
                                   rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(data.service_time.double() * scale, data.raw_service_time,
                                   rtol=1e-6, atol=1e-6)


def test_x_fields_are_in_original_units():
    data = load_instance("X-n101-k25")
    assert data.raw_pos[0].tolist() == [365.0, 689.0]  # DEPOT_SECTION: node 1
    assert data.demand[0] == 0 and float(data.capacity) == 206
    assert int(data.rounding) == 1 and data.demand.sum() > float(data.capacity)


def test_depot_becomes_node_zero(tmp_path):
    text = X_GOOD.replace("\t1\t\r\n\t-1", "\t3\t\r\n\t-1").replace("3\t5\r\n", "3\t0\r\n")
    text = text.replace("1\t0\r\n2\t5", "1\t5\r\n2\t5")
    data = load_instance(_write(tmp_path, "t.vrp", text))
    assert data.raw_pos.tolist() == [[6, 0], [0, 0], [3, 4], [0, 2]]
    assert data.demand.tolist() == [0, 5, 5, 5]


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize("text,fragment", [
    (X_HEADER + X_DEMAND + X_DEPOT, "NODE_COORD_SECTION"),
    (X_HEADER + X_COORDS + X_DEPOT, "DEMAND_SECTION"),
    (X_HEADER + X_COORDS + X_DEMAND + "EOF", "DEPOT_SECTION"),
    (X_GOOD.replace("CAPACITY : \t10\t\r\n", ""), "CAPACITY"),
    (X_GOOD.replace("4\t0\t2\r\n", ""), "3 rows, expected 4"),
    (X_GOOD.replace("4\t5\r\n", ""), "DEMAND_SECTION has 3 rows"),
    (X_GOOD.replace("2\t3\t4", "2\t3"), "NODE_COORD_SECTION"),
    (X_GOOD.replace("2\t3\t4", "2\tx\t4"), "NODE_COORD_SECTION"),
    (X_GOOD.replace("DIMENSION : \t4", "DIMENSION : \tfour"), "DIMENSION"),
    (X_GOOD.replace("EUC_2D", "GEO"), "EDGE_WEIGHT_TYPE"),
    (X_GOOD.replace("\t-1\t", "\t2\t\r\n\t-1\t"), "exactly one depot"),
    (X_GOOD.replace("2\t5\r\n", "2\t50\r\n"), "exceeds the vehicle capacity"),
    ("this is not\r\na vrp file\r\n", "not a valid VRPLIB file"),
    ("", "empty"),
])
def test_malformed_vrp(tmp_path, text, fragment):
    path = _write(tmp_path, "broken.vrp", text)
    with pytest.raises(InstanceFormatError, match=fragment) as info:
        load_instance(path)
    assert str(path) in str(info.value)


def test_binary_file(tmp_path):
    path = _write(tmp_path, "bin.vrp", bytes(range(256)) * 4)
    with pytest.raises(InstanceFormatError, match="bin.vrp"):
        load_instance(path)


def test_malformed_solomon_and_lilim(tmp_path):
    lines = (BUNDLED_DIR / "C101.txt").read_bytes().decode().splitlines(keepends=True)
    bad = _write(tmp_path, "C1.txt", "".join(lines[:20] + lines[21:]))  # a row missing
    with pytest.raises(InstanceFormatError, match="numbered"):
        load_instance(bad)
    frac = _write(tmp_path, "C2.txt", "".join(lines[:12] + ["  3  1.5  2  3  4  5  6\r\n"]
                                             + lines[13:]))
    with pytest.raises(InstanceFormatError, match="C2.txt: customer row 3 must have 7 int"):
        load_instance(frac)
    header = _write(tmp_path, "C3.txt", "".join(lines[:7] + ["CUST NO.  X  Y\r\n"] + lines[8:]))
    with pytest.raises(InstanceFormatError, match="C3.txt: not a valid Solomon file"):
        load_instance(header)
    lines = (BUNDLED_DIR / "lc101.txt").read_bytes().decode().splitlines(keepends=True)
    short = _write(tmp_path, "l1.txt", "".join(lines[:5] + ["5\t1\t2\n"] + lines[6:]))
    with pytest.raises(InstanceFormatError, match="9 numbers"):
        load_instance(short)
    row = lines[3].split("\t")  # node 2: a delivery of pickup 6
    row[7] = "7"
    wrong = _write(tmp_path, "l2.txt", "".join(lines[:3] + ["\t".join(row)] + lines[4:]))
    with pytest.raises(InstanceFormatError, match="l2.txt.*pickup"):
        load_instance(wrong)
    with pytest.raises(InstanceFormatError, match="unrecognized"):
        load_instance(_write(tmp_path, "x.txt", "hello\nworld\n"))


def test_malformed_solution(tmp_path):
    vrp = _write(tmp_path, "t.vrp", X_GOOD)
    assert load_instance(vrp, solution=_write(tmp_path, "ok.sol", "Route #1: 1 2\r\n"
                                              "Route #2: 3\r\nCost 20")).cost().item() == 20
    with pytest.raises(InstanceFormatError, match="bad.sol"):
        load_instance(vrp, solution=_write(tmp_path, "bad.sol", "Route #1: 1 x 3\nCost 3"))
    with pytest.raises(InstanceFormatError, match="no 'Route"):
        load_instance(vrp, solution=_write(tmp_path, "none.sol", "Cost 3"))
    with pytest.raises(InvalidSolutionError, match="range.sol"):
        load_instance(vrp, solution=_write(tmp_path, "range.sol", "Route #1: 1 2 3 9\n"))
    with pytest.raises(InvalidSolutionError, match="not visited"):
        load_instance(vrp, solution=_write(tmp_path, "miss.sol", "Route #1: 1 2\n"))
    with pytest.raises(UnknownInstanceError, match="no solution file"):
        load_instance(vrp, solution=True)


def test_unknown_names(isolated):
    with pytest.raises(UnknownInstanceError) as info:
        load_instance("X-n9999-k1", data_dir=isolated)
    message = str(info.value)
    assert "X-n9999-k1" in message and str(isolated) in message and str(BUNDLED_DIR) in message
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(UnknownInstanceError, match="nope.sol"):
        load_instance("C101", solution="nope.sol", data_dir=isolated)
    with pytest.raises(UnknownInstanceError, match="does not exist"):
        load_instance(isolated / "missing.vrp")


def test_data_dir_and_env_var(isolated, tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    mine.mkdir()
    _write(mine, "tiny.vrp", X_GOOD)
    _write(mine, "tiny.sol", "Route #1: 1 2 3\n")
    assert load_instance("tiny", solution=True, data_dir=mine).num_nodes == 4
    with pytest.raises(UnknownInstanceError):
        load_instance("tiny", data_dir=isolated)
    monkeypatch.setenv(ENV_VAR, str(mine))
    assert load_instance("tiny.vrp", solution="tiny.sol").cost().item() == 5 + 5 + 6 + 2
    # a shared/data folder next to the working directory is NOT searched: the package
    # reads only folders the user names (data_dir, $PYG_ROUTING_DATA) and its own files
    shared = Path.cwd().parent / "shared" / "data" / "solomon"
    shared.mkdir(parents=True)
    shutil.copy(mine / "tiny.vrp", shared / "other.vrp")
    with pytest.raises(UnknownInstanceError):
        load_instance("other")


# --------------------------------------------------------------------------- dataset
def test_dataset_over_bundled_instances(isolated):
    for benchmark, problem in (("x", "cvrp"), ("solomon", "vrptw"), ("lilim", "pdptw")):
        ds = BenchmarkDataset(BUNDLED_DIR, benchmark=benchmark)
        assert len(ds) == 1 and ds[0].problem == problem and ds[0].has_solution
        ds[0].check()
    bare = BenchmarkDataset(benchmark="solomon", with_solutions=False)  # finds the bundled copy
    assert bare.folder == BUNDLED_DIR and not bare[0].has_solution
    with pytest.raises(ValueError, match="benchmark"):
        BenchmarkDataset(BUNDLED_DIR, benchmark="tsplib")
    with pytest.raises(UnknownInstanceError, match="R101"):
        BenchmarkDataset(BUNDLED_DIR, benchmark="solomon", names=["R101"])


@needs_solomon
def test_dataset_dataloader_costs():
    ds = BenchmarkDataset(SHARED, benchmark="solomon")
    assert len(ds) == 56 and ds.folder == SOLOMON_DIR and ds.instance_names[:2] == ["C101",
                                                                                    "C102"]
    costs = {}
    for batch in DataLoader(ds, batch_size=16):
        assert bool(batch.is_feasible().all())
        costs.update(zip(batch.name, batch.cost().tolist(), strict=True))
    assert costs.keys() == ds.bks.keys()
    assert all(abs(costs[k] - ds.bks[k]) < 1e-6 for k in costs)


@needs_x
def test_dataset_names_and_transform():
    def add_marker(data):
        data = data.clone()
        data.marker = torch.ones(1)
        return data

    names = ["X-n106-k14.vrp", "x-n101-k25", "X-n157-k13"]
    ds = BenchmarkDataset(SHARED / "cvrplib" / "X", benchmark="x", names=names,
                          transform=add_marker)
    assert ds.instance_names == ["X-n106-k14", "X-n101-k25", "X-n157-k13"]
    assert "marker" in ds[0]
    batch = next(iter(DataLoader(ds, batch_size=3)))
    assert batch.cost().tolist() == [ds.bks[n] for n in ds.instance_names]


@needs_lilim
def test_read_bks_columns():
    assert read_bks(LILIM_DIR)["lc103"] == pytest.approx(1035.3499)
    assert read_bks(LILIM_DIR / "bks.csv").keys() == _csv(LILIM_DIR / "bks.csv").keys()


def test_read_bks_errors(tmp_path):
    with pytest.raises(InstanceFormatError, match="column"):
        read_bks(_write(tmp_path, "a.csv", "instance,foo\nA,1\n"))
    with pytest.raises(InstanceFormatError, match="not a number"):
        read_bks(_write(tmp_path, "b.csv", "instance,bks\nA,x\n"))
    assert read_bks(_write(tmp_path, "c.csv", "instance,bks\nA,3\n")) == {"A": 3.0}
    assert np.isclose(read_bks(_write(tmp_path, "bks.csv", "instance,bks\nB,2.5\n")
                               .parent)["B"], 2.5)
