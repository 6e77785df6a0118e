"""Cordeau's MDVRP files: exact parsed values of the bundled p01, the depot-first node
mapping, every malformed-file class refused with its message, and the bundled
best-known solution's cost."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from pyg_routing.data.benchmark_io import read_bks
from pyg_routing.data.benchmarks import BUNDLED_DIR
from pyg_routing.data.cordeau_io import (
    customer_node,
    file_customer_id,
    parse_cordeau,
    read_cordeau,
    read_cordeau_solution,
)
from pyg_routing.data.evaluation import ROUNDING_CODES
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.errors import InfeasibleSolutionError, InstanceFormatError

CORDEAU = BUNDLED_DIR / "cordeau"
P01 = CORDEAU / "p01.txt"


def _write(tmp_path: Path, text: str, name: str = "bad.txt") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _p01_lines() -> list[str]:
    return P01.read_text().splitlines()


def _refused(path: Path, *fragments: str) -> str:
    with pytest.raises(InstanceFormatError) as err:
        read_cordeau(path)
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg
    for fragment in fragments:
        assert fragment in msg, msg
    return msg


# ------------------------------------------------------------------ parsed values
def test_p01_parsed_values():
    cf = parse_cordeau(P01)
    assert (cf.name, cf.vehicles_per_depot, cf.num_customers, cf.num_depots) == \
        ("p01", 4, 50, 4)
    np.testing.assert_array_equal(cf.capacity, [80, 80, 80, 80])
    np.testing.assert_array_equal(cf.max_duration, [0, 0, 0, 0])
    np.testing.assert_array_equal(cf.depot_xy, [[20, 20], [30, 40], [50, 30], [60, 50]])
    assert cf.customer_xy.shape == (50, 2) and cf.demand.shape == (50,)
    np.testing.assert_array_equal(cf.customer_xy[0], [37, 52])      # " 1 37 52 0   7 ..."
    np.testing.assert_array_equal(cf.customer_xy[-1], [56, 37])     # "50 56 37 0  10 ..."
    assert (cf.demand[0], cf.demand[1], cf.demand[-1]) == (7, 30, 10)
    assert cf.demand.sum() == 777 and not cf.service_time.any()


def test_parsed_arrays_are_read_only():
    cf = parse_cordeau(P01)
    with pytest.raises(ValueError):
        cf.demand[0] = 1


def test_bundled_files_and_bks_table():
    bks = read_bks(CORDEAU)
    assert len(bks) == 33 and bks["p01"] == 576.87 and bks["p12"] == 1318.95
    limits = {row.split(",")[0]: float(row.split(",")[2])
              for row in (CORDEAU / "bks.csv").read_text().splitlines()[1:]}
    for name in ("p01", "p05", "p12"):       # the bundled ones have no duration limit
        cf = parse_cordeau(CORDEAU / f"{name}.txt")
        assert limits[name] == 0 and not cf.max_duration.any()
    assert limits["p08"] == 310 and limits["pr01"] == 500


# ------------------------------------------------------------------ node mapping
def test_depot_first_mapping_round_trip():
    assert customer_node(1, 4) == 4 and customer_node(50, 4) == 53
    assert customer_node(1, 1) == 1                       # one depot: the usual numbering
    for t in (1, 2, 4, 9):
        for i in (1, 2, 17, 360):
            assert file_customer_id(customer_node(i, t), t) == i
    with pytest.raises(ValueError):
        customer_node(0, 4)
    with pytest.raises(ValueError):
        file_customer_id(3, 4)                            # node 3 is a depot


# ------------------------------------------------------------------ malformed files
def test_other_types_are_refused_by_name(tmp_path):
    lines = _p01_lines()
    for kind, name in ((0, "VRP"), (1, "PVRP"), (6, "MDVRPTW")):
        path = _write(tmp_path, "\n".join([f"{kind} 4 50 4", *lines[1:]]))
        _refused(path, "line 1", f"type {kind} ({name})", "only MDVRP (type 2) files are read")


@pytest.mark.parametrize(("header", "fragment"), [
    ("2 4 50", "'type m n t' (4 integers)"),
    ("2 4 50 4 1", "'type m n t' (4 integers)"),
    ("2 4 fifty 4", "n (customers) must be an integer, got 'fifty'"),
    ("2 4.5 50 4", "m (vehicles per depot) must be an integer, got '4.5'"),
    ("2 0 50 4", "m (vehicles per depot) must be at least 1, got 0"),
])
def test_bad_header(tmp_path, header, fragment):
    path = _write(tmp_path, "\n".join([header, *_p01_lines()[1:]]))
    _refused(path, "line 1", fragment)


def test_truncated_file(tmp_path):
    path = _write(tmp_path, "\n".join(_p01_lines()[:40]))
    _refused(path, "truncated", "promises 59 lines", "the file has 40")


def test_wrong_counts(tmp_path):
    lines = _p01_lines()
    # one customer fewer than the file holds: the 59th line is one too many
    _refused(_write(tmp_path, "\n".join(["2 4 49 4", *lines[1:]]), "n.txt"),
             "line 59", "unexpected line", "promises 49 customers and 4 depots")
    # the line count fits "t = 3", but customer 50 is missing: depot 51 comes too early
    short = ["2 4 50 3", *lines[1:4], *lines[5:54], *lines[55:59]]
    _refused(_write(tmp_path, "\n".join(short), "t.txt"),
             "line 54:", "customer id 51, expected 50")
    _refused(_write(tmp_path, "\n".join(["2 4 50 5", *lines[1:]]), "u.txt"),
             "truncated", "promises 61 lines (1 header, 5 'D Q' lines, 50 customers, "
             "5 depots), the file has 59")


def test_extra_line(tmp_path):
    path = _write(tmp_path, "\n".join([*_p01_lines(), "55 1 1 0 0 0 0"]))
    _refused(path, "line 60", "unexpected line")


def test_wrong_customer_count_in_header(tmp_path):
    lines = _p01_lines()
    path = _write(tmp_path, "\n".join(["2 4 51 4", *lines[1:]]))
    _refused(path, "truncated", "promises 60 lines")


def test_bad_limits_line(tmp_path):
    lines = _p01_lines()
    _refused(_write(tmp_path, "\n".join([lines[0], "0", *lines[2:]])),
             "line 2", "depot 1 limits must be 'D Q'")
    _refused(_write(tmp_path, "\n".join([lines[0], "0 eighty", *lines[2:]]), "q.txt"),
             "line 2", "Q (capacity) must be a number, got 'eighty'")


@pytest.mark.parametrize(("line_no", "new", "fragment"), [
    (6, " 1 37 52 0 seven 1 4 1 2 4 8", "demand q must be a number, got 'seven'"),
    (6, " 1 nan 52 0 7 1 4 1 2 4 8", "x must be a number, got 'nan'"),
    (6, " 1 37 1e400 0 7 1 4 1 2 4 8", "y '1e400' is too large to be a finite number"),
    (6, " 1 37 52 0 7 1 4 1 2 4", "customer 1 declares a=4 visit combinations but lists 3"),
    (6, " 1 37 52 0 7 1 4 1 2 4 8 9", "declares a=4 visit combinations but lists 5"),
    (6, " 1 37 52 0", "customer line needs at least 7 fields"),
    (7, " 3 49 49 0 30 1 4 1 2 4 8", "customer id 3, expected 2"),
    (59, "54 60 50 0 5 0 0", "depot 54 has demand 5"),
    (56, "51 20 20 0 0 0 0 0", "depot 51 declares a=0 visit combinations but lists 1"),
])
def test_bad_node_lines(tmp_path, line_no, new, fragment):
    lines = _p01_lines()
    lines[line_no - 1] = new
    _refused(_write(tmp_path, "\n".join(lines)), f"line {line_no}:", fragment)


def test_capacities_differing_between_depots_refused_by_name(tmp_path):
    lines = _p01_lines()
    lines[2] = "0 100"
    _refused(_write(tmp_path, "\n".join(lines)), "line 3", "Q=100 on depot 2",
             "one vehicle capacity per instance")


def test_empty_unreadable_and_binary_files(tmp_path):
    _refused(_write(tmp_path, ""), "the file is empty")
    _refused(_write(tmp_path, "\n \n", "blank.txt"), "the file is empty")
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe\x00\x81")
    _refused(binary, "not a text file")
    _refused(tmp_path / "missing.txt", "cannot be read")


def test_duration_limit_refused(tmp_path):
    lines = _p01_lines()
    lines[1:5] = ["310 80"] * 4            # as p08-p11: D = 310 on every depot
    path = _write(tmp_path, "\n".join(lines), "p08.txt")
    assert parse_cordeau(path).max_duration.tolist() == [310] * 4   # parsed, not lost
    msg = _refused(path)
    assert msg.endswith("p08: route duration limit D=310 on depot 1 is not supported "
                        "(pyg_routing models no duration limits)")
    lines[1:5] = ["0 80", "0 80", "200 80", "0 80"]
    _refused(_write(tmp_path, "\n".join(lines), "one.txt"), "D=200 on depot 3")


def test_service_times_without_duration_limit_are_left_out(tmp_path):
    lines = _p01_lines()
    lines[5] = " 1 37 52 9   7 1 4 1 2 4 8"
    path = _write(tmp_path, "\n".join(lines))
    assert parse_cordeau(path).service_time[0] == 9
    data = read_cordeau(path)
    assert "service_time" not in data and data.problem == "cvrp"


def test_instance_refused_by_routing_data_names_the_file(tmp_path):
    lines = _p01_lines()
    lines[5] = " 1 37 52 0  99 1 4 1 2 4 8"     # demand 99 > capacity 80
    _refused(_write(tmp_path, "\n".join(lines)), "demand")


# ------------------------------------------------------------------ RoutingData
def test_read_cordeau_builds_a_depot_first_instance():
    cf = parse_cordeau(P01)
    data = read_cordeau(P01)
    assert data.problem == "cvrp" and data.name == "p01" and data.num_nodes == 54
    assert int(data.num_depots) == 4
    assert data.depot_vehicles.tolist() == [4, 4, 4, 4]
    assert float(data.capacity) == 80
    assert data.demand[:4].tolist() == [0, 0, 0, 0]
    np.testing.assert_array_equal(data.demand[4:].numpy(), cf.demand)
    np.testing.assert_array_equal(data.raw_pos[:4].numpy(), cf.depot_xy)
    np.testing.assert_array_equal(data.raw_pos[customer_node(1, 4)].numpy(), [37, 52])
    np.testing.assert_array_equal(data.raw_pos[customer_node(50, 4)].numpy(), [56, 37])
    # normalized with one scale: range 0..1 on the wider axis, aspect ratio kept
    raw = data.raw_pos.numpy()
    scale = float(data.scale)
    assert scale == (raw.max(0) - raw.min(0)).max()
    torch.testing.assert_close(data.pos.double(),
                               torch.from_numpy((raw - raw.min(0)) / scale),
                               rtol=1e-6, atol=1e-6)
    assert int(data.rounding) == ROUNDING_CODES["none"]


@pytest.mark.parametrize("name", ["p05", "p12"])
def test_other_bundled_instances(name):
    cf = parse_cordeau(CORDEAU / f"{name}.txt")
    data = read_cordeau(CORDEAU / f"{name}.txt")
    t = cf.num_depots
    assert data.num_nodes == t + cf.num_customers and int(data.num_depots) == t
    np.testing.assert_array_equal(data.demand[t:].numpy(), cf.demand)


# ------------------------------------------------------------------ solutions
def test_read_p01_solution():
    routes, depots = read_cordeau_solution(CORDEAU / "p01.res", 4)
    assert len(routes) == 11 and depots == [0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3]
    # "1	1	66.55	79	1	42 19 40 41 13": depot 1, customers 42 19 40 41 13
    assert routes[0] == [customer_node(c, 4) for c in (42, 19, 40, 41, 13)]
    assert sorted(c for r in routes for c in r) == list(range(4, 54))
    # every route within capacity, each depot within its m = 4 vehicles
    demand = read_cordeau(P01).demand
    assert max(float(demand[r].sum()) for r in routes) <= 80
    assert max(depots.count(j) for j in range(4)) <= 4


def test_p01_solution_length_is_the_bks_in_double_precision():
    """The claim behind rounding "none": the routes add up to 576.8657 with
    unrounded distances (576 with nint, 574.4 truncated to one decimal)."""
    raw = read_cordeau(P01).raw_pos.numpy()
    routes, depots = read_cordeau_solution(CORDEAU / "p01.res", 4)
    total = sum(math.dist(raw[a], raw[b]) for r, d in zip(routes, depots)
                for a, b in zip([d, *r], [*r, d]))
    assert total == pytest.approx(read_bks(CORDEAU)["p01"], abs=1e-2)
    assert float((CORDEAU / "p01.res").read_text().split()[0]) == pytest.approx(total, abs=5e-3)


def test_p01_bks_solution_cost_via_routing_data():
    instance = read_cordeau(P01)
    routes, depots = read_cordeau_solution(CORDEAU / "p01.res", 4)
    solved = RoutingData.from_routes(instance, routes, depots=depots)
    assert float(solved.cost()) == pytest.approx(576.87, abs=1e-2)
    assert solved.route_depot.tolist() == depots
    solved.check()
    # depot_vehicles = [m] * t binds: all 11 routes from depot 0 exceed its m = 4
    with pytest.raises(InfeasibleSolutionError, match="4 vehicles"):
        RoutingData.from_routes(instance, routes, depots=[0] * len(routes)).check()


def test_solution_formats_and_errors(tmp_path):
    neo = _write(tmp_path, "10.0\n2 1 5.0 3 0 3 1 0\n1 1 0 0 0 0\n", "a.res")
    assert read_cordeau_solution(neo, 2) == ([[4, 2]], [1])      # empty route dropped
    course = _write(tmp_path, "10.0\n2\t1\t5.0\t3\t2\t3 1\n", "b.res")
    assert read_cordeau_solution(course, 2) == ([[4, 2]], [1])
    cases = [
        ("cost\n1 1 1 1 1 2\n", "line 1", "the solution's cost"),
        ("1.0\n3 1 1 1 3 2\n", "line 2", "depot 3 is outside 1..2"),
        ("1.0\n1 1 1 1 2 5\n", "line 2", "opens with 2, neither 0 nor this line's depot 1"),
        ("1.0\n1 1 1 1 0 5\n", "line 2", "must close with 0"),
        ("1.0\n1 1 1 x 1 5\n", "line 2", "load q must be a number, got 'x'"),
        ("1.0\n1 1 1\n", "line 2", "'l k d q list'"),
        ("1.0\n1 1 1 1 1 5 -2\n", "line 2", "customer ids start at 1"),
    ]
    for text, *fragments in cases:
        path = _write(tmp_path, text, "bad.res")
        with pytest.raises(InstanceFormatError) as err:
            read_cordeau_solution(path, 2)
        assert str(path) in str(err.value)
        for fragment in fragments:
            assert re.search(re.escape(fragment), str(err.value)), str(err.value)


#: git blob ids of the upstream files (vroom-scripts 0f5ee1eb, GA-MDVRP 5a016386; see
#: SOURCES.md): the bundled copies are byte for byte the upstream files
UPSTREAM_BLOBS = {"p01.txt": "7a382f166bd956dd7fec8ad0ab3340d66e7b1007",
                  "p05.txt": "fd7d96615613e166d2e3aa7c1d44762d183b7bb8",
                  "p12.txt": "894321dd184a378cb187e9e8f60e1e3afec85f47",
                  "p01.res": "6f56a473445b16c10bd940060f71d11bfd75125d"}


def test_bundled_files_are_the_upstream_blobs():
    import hashlib

    for name, blob in UPSTREAM_BLOBS.items():
        data = (BUNDLED_DIR / "cordeau" / name).read_bytes()
        assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob, name


def test_commands_read_cordeau_files_and_search_their_depots(
        capsys, tmp_path, monkeypatch):
    import json

    from pyg_routing.cli import main

    monkeypatch.chdir(tmp_path)
    p01 = str(BUNDLED_DIR / "cordeau" / "p01.txt")
    assert main(["solve", "--instance", p01, "--time-limit", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    bks = read_bks(BUNDLED_DIR / "cordeau" / "bks.csv")["p01"]
    assert out["feasible"] and out["instance"] == "p01"
    assert bks - 0.01 <= out["cost"] <= 1.05 * bks            # PyVRP, 1 s, four depots
    # NDS's destroy-and-repair with SISR: four depots, four vehicles each
    assert main(["search", "--instance", "p01", "--backbone", "nds", "--destroy", "sisr",
                 "--test.seconds", "1", "--no_progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    [row] = out["per_instance"] if "per_instance" in out else out["rows"]
    assert row["target"] == pytest.approx(bks) and row["objective"] >= bks - 0.01
    # DACT's 2-opt searches the four depots: random moves, checked against the BKS
    assert main(["evaluate", "--instance", "p01", "--backbone", "dact", "--policy", "random",
                 "--test.steps", "50", "--no_progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    [row] = out["per_instance"] if "per_instance" in out else out["rows"]
    assert row["target"] == pytest.approx(bks) and row["objective"] >= bks - 0.01
