"""Bad benchmark files are named as such (issue 28, class 6): an empty, unreadable or
non-text file, or a time-window instance a customer of which even the direct trip from
the depot cannot serve, is refused when it is loaded, naming the file, instance and
customer; nothing is passed over and then reported as missing."""

import pathlib
import re

import pytest
import torch

from pyg_routing.data import RoutingInstances, VRPTWGenerator
from pyg_routing.data.benchmark_io import read_bks
from pyg_routing.data.benchmarks import BUNDLED_DIR, BenchmarkDataset, load_instance
from pyg_routing.data.dataset import RoutingDataset
from pyg_routing.data.feasibility import check_servable_alone
from pyg_routing.errors import InstanceFormatError, InvalidInstanceError, UnknownInstanceError

X_NAME, SOLOMON_NAME, LILIM_NAME = "X-n101-k25", "C101", "lc101"


def _copy(folder: pathlib.Path, name: str) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    target.write_bytes((BUNDLED_DIR / name).read_bytes())
    return target


def _deny(monkeypatch, path: pathlib.Path) -> None:
    """Reading ``path`` fails as without read permission (chmod does not stop root)."""
    real = pathlib.Path.read_text

    def read_text(self, *args, **kwargs):
        if self.resolve() == path.resolve():
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)
    monkeypatch.setattr(pathlib.Path, "read_text", read_text)


# --------------------------------------------------------------- empty / unreadable files
@pytest.mark.parametrize("content, said", [
    (b"", "the file is empty"),
    (b"  \r\n\t\n", r"the file is empty \(only blank lines\)"),
    (bytes(range(256)) * 4, "not a text file"),
])
@pytest.mark.parametrize("benchmark, good, bad", [
    ("x", f"{X_NAME}.vrp", "X-n9-k1.vrp"),
    ("solomon", f"{SOLOMON_NAME}.txt", "R999.txt"),
    ("lilim", f"{LILIM_NAME}.txt", "lr999.txt"),
])
def test_a_damaged_benchmark_file_is_named_not_skipped(tmp_path, benchmark, good, bad,
                                                       content, said):
    _copy(tmp_path, good)
    broken = tmp_path / bad
    broken.write_bytes(content)
    stem = broken.stem
    for names in (None, [stem], [stem.upper()]):
        with pytest.raises(InstanceFormatError, match=rf"^{re.escape(str(broken))}: {said}"):
            BenchmarkDataset(tmp_path, benchmark=benchmark, names=names, with_solutions=False)
    with pytest.raises(InstanceFormatError, match=rf"^{re.escape(str(broken))}: {said}"):
        load_instance(broken)
    with pytest.raises(InstanceFormatError, match=rf"^{re.escape(str(broken))}: {said}"):
        load_instance(stem, data_dir=tmp_path)


def test_an_unreadable_benchmark_file_is_named(tmp_path, monkeypatch):
    _copy(tmp_path, f"{SOLOMON_NAME}.txt")
    locked = _copy(tmp_path / "other", f"{SOLOMON_NAME}.txt").rename(tmp_path / "R101.txt")
    _deny(monkeypatch, locked)
    with pytest.raises(InstanceFormatError,
                       match=rf"^{re.escape(str(locked))}: cannot be read \(.*Permission denied"):
        BenchmarkDataset(tmp_path, benchmark="solomon", names=["R101"], with_solutions=False)
    with pytest.raises(InstanceFormatError, match="cannot be read"):
        load_instance(locked)


def test_a_text_file_of_no_format_is_passed_over_unless_it_is_asked_for(tmp_path):
    _copy(tmp_path, f"{LILIM_NAME}.txt")
    notes = tmp_path / "lc102.txt"
    notes.write_text("Instance name : lc102\nSolution\nRoute 1 : 1 2 3\n")
    ds = BenchmarkDataset(tmp_path, benchmark="lilim", with_solutions=False)
    assert ds.instance_names == [LILIM_NAME]
    with pytest.raises(InstanceFormatError,
                       match=rf"^lilim instance 'lc102': {re.escape(str(notes))}: "
                             rf"unrecognized instance format"):
        BenchmarkDataset(tmp_path, benchmark="lilim", names=["lc102"], with_solutions=False)
    # a name with no file at all is still "not in <folder>"
    with pytest.raises(UnknownInstanceError, match=r"'lc999' not in"):
        BenchmarkDataset(tmp_path, benchmark="lilim", names=["lc999"], with_solutions=False)


def test_an_instance_of_another_benchmark_is_named_as_such(tmp_path):
    _copy(tmp_path, f"{SOLOMON_NAME}.txt")
    lilim = _copy(tmp_path, f"{LILIM_NAME}.txt")
    with pytest.raises(InstanceFormatError, match=rf"^solomon instance 'lc101': "
                                                  rf"{re.escape(str(lilim))}: a lilim file, "
                                                  rf"not a solomon instance"):
        BenchmarkDataset(tmp_path, benchmark="solomon", names=["lc101"], with_solutions=False)
    # without names, the other benchmark's file is simply not one of its instances
    ds = BenchmarkDataset(tmp_path, benchmark="solomon", with_solutions=False)
    assert ds.instance_names == [SOLOMON_NAME]


def test_empty_or_unreadable_bks_and_solution_files(tmp_path, monkeypatch):
    _copy(tmp_path, f"{LILIM_NAME}.txt")
    bks = tmp_path / "bks.csv"
    bks.write_text("")
    with pytest.raises(InstanceFormatError, match=rf"^{re.escape(str(bks))}: the file is empty"):
        read_bks(bks)
    with pytest.raises(InstanceFormatError, match="bks.csv: the file is empty"):
        BenchmarkDataset(tmp_path, benchmark="lilim", with_solutions=False)
    bks.write_text("instance,bks\n")
    assert read_bks(bks) == {}
    bks.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InstanceFormatError, match=rf"{re.escape(str(bks))}: "):
        load_instance(tmp_path / f"{LILIM_NAME}.txt", solution=True)
    bks.unlink()
    sol = tmp_path / f"{LILIM_NAME}.sol"
    sol.write_text("")
    with pytest.raises(InstanceFormatError, match=rf"^{re.escape(str(sol))}: the file is empty"):
        load_instance(tmp_path / f"{LILIM_NAME}.txt", solution=True)
    _deny(monkeypatch, sol)
    with pytest.raises(InstanceFormatError, match=rf"^{re.escape(str(sol))}: cannot be read"):
        load_instance(tmp_path / f"{LILIM_NAME}.txt", solution=True)


# --------------------------------------------------------------- unreachable time windows
def _solomon_with(tmp_path, edit) -> pathlib.Path:
    """``C101.txt`` with ``edit(rows)`` applied to its 7-integer rows (depot = row 0)."""
    lines = (BUNDLED_DIR / "C101.txt").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["0"])
    rows = [line.split() for line in lines[start:] if line.strip()]
    edit(rows)
    path = tmp_path / "C101.txt"
    path.write_text("\n".join(lines[:start] + ["  ".join(r) for r in rows]) + "\n")
    return path


def test_a_window_closing_before_the_vehicle_can_arrive_is_refused_at_load(tmp_path):
    def closes_at_1(rows):                   # customer 5: window [0, 1], far from the depot
        rows[5][4], rows[5][5] = "0", "1"
    path = _solomon_with(tmp_path, closes_at_1)
    with pytest.raises(InstanceFormatError,
                       match=rf"^{re.escape(str(path))}: instance 'C101', node 5: the customer "
                             rf"cannot be served even alone: the vehicle arrives at .*, after "
                             rf"its window closes at 1$"):
        load_instance(path)
    with pytest.raises(InstanceFormatError, match="node 5: the customer cannot be served"):
        BenchmarkDataset(tmp_path, benchmark="solomon", with_solutions=False)


def test_a_window_closing_before_the_depot_opens_is_refused_at_load(tmp_path):
    def depot_opens_late(rows):              # the depot opens at 500: customer 3 closes at 146
        rows[0][4] = "500"
    path = _solomon_with(tmp_path, depot_opens_late)
    with pytest.raises(InstanceFormatError,
                       match=r"'C101', node 3: the customer cannot be served even alone: the "
                             r"vehicle arrives at 516.1, after its window closes at 146$"):
        load_instance(path)


def test_a_customer_that_keeps_the_vehicle_out_past_the_depot_closing_is_refused(tmp_path):
    def long_service(rows):                  # service of customer 3 longer than the horizon
        rows[3][6] = "5000"
    path = _solomon_with(tmp_path, long_service)
    with pytest.raises(InstanceFormatError,
                       match=r"node 3: the customer cannot be served even alone: serving it "
                             r"brings the vehicle back at .*, after the depot closes at 1236"):
        load_instance(path)


def test_a_li_lim_delivery_that_cannot_be_reached_is_refused(tmp_path):
    lines = (BUNDLED_DIR / "lc101.txt").read_text().splitlines()
    row = lines[3].split("\t")               # node 2
    row[4], row[5] = "0", "2"
    path = tmp_path / "lc101.txt"
    path.write_text("\n".join(lines[:3] + ["\t".join(row)] + lines[4:]) + "\n")
    with pytest.raises(InstanceFormatError, match=rf"^{re.escape(str(path))}: instance 'lc101', "
                                                  rf"node 2: the customer cannot be served"):
        load_instance(path)


SHARED = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data"


def test_every_bundled_and_shared_time_window_instance_still_loads():
    files = [BUNDLED_DIR / "C101.txt", BUNDLED_DIR / "lc101.txt",
             *sorted((SHARED / "solomon").glob("*.txt")), *sorted((SHARED / "lilim").glob("*.txt"))]
    for path in files:
        check_servable_alone(load_instance(path))   # load_instance checks it; so does this


def test_routing_instances_check_refuses_an_unreachable_customer():
    inst = VRPTWGenerator(6, seed=0).sample(3)
    inst.check()                             # generated windows are always reachable
    tw = inst.time_window.clone()
    tw[1, 4] = torch.tensor([0.0, 1e-3])     # instance 1, customer 4: closes at once
    with pytest.raises(InvalidInstanceError,
                       match=r"^instance 1, node 4: the customer cannot be served even alone: "
                             r"the vehicle arrives at .*, after its window closes at 0.001$"):
        RoutingInstances(inst.problem, inst.pos, demand=inst.demand, capacity=inst.capacity,
                         time_window=tw, service_time=inst.service_time).check()
    st = inst.service_time.clone()
    st[2, 3] = 100.0                         # instance 2, customer 3: back far too late
    with pytest.raises(InvalidInstanceError,
                       match=r"^instance 2, node 3: the customer cannot be served even alone: "
                             r"serving it brings the vehicle back at"):
        RoutingInstances(inst.problem, inst.pos, demand=inst.demand, capacity=inst.capacity,
                         time_window=inst.time_window, service_time=st).check()


# --------------------------------------------------------------- RoutingDataset(0)
@pytest.mark.parametrize("count, said", [
    (0, "num_instances must be >= 1, got 0"),
    (2.5, "num_instances must be a whole number, got 2.5"),
    (True, "num_instances must be a number, got True"),
])
def test_routing_dataset_refuses_a_bad_instance_count(tmp_path, count, said):
    with pytest.raises(InvalidInstanceError, match=re.escape(said)):
        RoutingDataset(str(tmp_path), "cvrp", 5, count, progress=False)
    assert not (tmp_path / "processed").exists()       # refused before any file is written
    with pytest.raises(InvalidInstanceError, match="num_customers must be a whole number"):
        RoutingDataset(str(tmp_path), "cvrp", 5.5, 2, progress=False)
