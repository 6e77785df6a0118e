"""Guarded file reads, and dataset caches that heal after an interrupted run."""

import json
import os
import re
import warnings

import pytest
import torch

from pyg_routing.data.dataset import RoutingDataset, load_summary
from pyg_routing.data.files import read_json, read_torch
from pyg_routing.errors import CorruptFileError, RoutingError

ARGS = dict(problem="cvrp", num_customers=5, num_instances=3, seed=0,
            solver="nearest_neighbor", progress=False)


# ----------------------------------------------------------------- read_torch / read_json
def test_corrupt_file_error_is_a_routing_error():
    assert issubclass(CorruptFileError, RoutingError) and issubclass(CorruptFileError, ValueError)


def test_read_torch_round_trip_and_map_location(tmp_path):
    path = tmp_path / "x.ckpt"
    torch.save({"w": torch.arange(3)}, path)
    assert torch.equal(read_torch(path, "checkpoint")["w"], torch.arange(3))
    out = read_torch(str(path), "checkpoint", map_location=torch.device("cpu"))
    assert out["w"].device.type == "cpu"


@pytest.mark.parametrize("content", [b"step,loss\n1,0.5\n", b"", b"\x00\xff" * 100])
def test_read_torch_refuses_a_file_that_is_not_pytorch(tmp_path, content):
    path = tmp_path / "x.ckpt"
    path.write_bytes(content)
    with pytest.raises(CorruptFileError,
                       match=rf"^checkpoint {re.escape(str(path))} is not a readable PyTorch "
                             rf"file \(\w+"):
        read_torch(path, "checkpoint")


def test_read_torch_refuses_a_truncated_file(tmp_path):
    path = tmp_path / "x.ckpt"
    torch.save({"w": torch.randn(100)}, path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptFileError, match=rf"^checkpoint {re.escape(str(path))} is not a"):
        read_torch(path, "checkpoint")


def test_read_torch_of_a_missing_path_names_it(tmp_path):
    path = tmp_path / "runs" / "x.ckpt"
    with pytest.raises(FileNotFoundError) as info:
        read_torch(path, "checkpoint")
    assert "checkpoint not found" in str(info.value) and str(path) in str(info.value)
    assert info.value.filename == str(path)


def test_read_torch_of_a_folder_keeps_the_os_error(tmp_path):
    with pytest.raises(IsADirectoryError, match=r"cannot read checkpoint: .*" +
                       re.escape(str(tmp_path))):
        read_torch(tmp_path, "checkpoint")


def test_read_json(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{"a": [1, 2]}')
    assert read_json(path, "summary") == {"a": [1, 2]}
    path.write_text('{"a": [1, ')
    with pytest.raises(CorruptFileError, match=rf"^summary {re.escape(str(path))} is not a "
                                               rf"readable JSON file \(JSONDecodeError"):
        read_json(path, "summary")
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(CorruptFileError, match=rf"^summary {re.escape(str(path))}"):
        read_json(path, "summary")
    with pytest.raises(FileNotFoundError, match=r"summary not found: .*nope\.json"):
        read_json(tmp_path / "nope.json", "summary")


# ----------------------------------------------------------------- dataset caches
def _same(a: RoutingDataset, b: RoutingDataset) -> None:
    assert len(a) == len(b)
    for i in range(len(a)):
        x, y = a[i].to_dict(), b[i].to_dict()
        assert x.keys() == y.keys()
        for key in x:
            assert torch.equal(x[key], y[key]) if torch.is_tensor(x[key]) else x[key] == y[key]
    assert a.meta["params"] == b.meta["params"] and a.meta["summary"] == b.meta["summary"]


def _garbage(path: str) -> None:
    with open(path, "wb") as fh:
        fh.write(bytes(range(256)) * 4)


def _truncate(path: str) -> None:
    with open(path, "rb") as fh:
        data = fh.read()
    with open(path, "wb") as fh:
        fh.write(data[: len(data) // 2])


def _foreign(path: str) -> None:
    torch.save({"model": torch.zeros(2)}, path)


def _empty(path: str) -> None:
    open(path, "wb").close()


@pytest.mark.parametrize("which, damage", [
    (0, _garbage), (0, _truncate), (0, _foreign), (0, _empty),
    (1, _garbage), (1, _truncate), (1, _empty),
], ids=["pt-garbage", "pt-truncated", "pt-foreign", "pt-empty",
        "json-garbage", "json-truncated", "json-empty"])
def test_corrupt_cache_is_rebuilt(tmp_path, which, damage):
    fresh = RoutingDataset(str(tmp_path / "fresh"), **ARGS)
    root = str(tmp_path / "cache")
    first = RoutingDataset(root, **ARGS)
    damage(first.processed_paths[which])
    with pytest.warns(UserWarning, match=re.escape(first.processed_paths[which])) as record:
        healed = RoutingDataset(root, **ARGS)
    assert "building it again" in str(record[0].message)
    _same(healed, fresh)
    # The rebuilt files load without any further warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(RoutingDataset(root, **ARGS), fresh)


def test_cache_missing_its_summary_is_rebuilt(tmp_path):
    # A run interrupted between writing the data and its summary.
    first = RoutingDataset(str(tmp_path), **ARGS)
    os.remove(first.meta_path)
    again = RoutingDataset(str(tmp_path), **ARGS)
    assert os.path.exists(again.meta_path)
    _same(again, first)


def test_corrupt_pyg_bookkeeping_file_is_removed(tmp_path):
    first = RoutingDataset(str(tmp_path), **ARGS)
    bookkeeping = os.path.join(first.processed_dir, "pre_transform.pt")
    _truncate(bookkeeping)
    with pytest.warns(UserWarning, match=re.escape(bookkeeping)):
        again = RoutingDataset(str(tmp_path), **ARGS)
    _same(again, first)


def test_no_temporary_files_are_left_behind(tmp_path):
    ds = RoutingDataset(str(tmp_path), **ARGS)
    assert not [f for f in os.listdir(ds.processed_dir) if f.endswith(".tmp")]


def test_load_summary_of_a_corrupt_file_names_it(tmp_path):
    ds = RoutingDataset(str(tmp_path), **ARGS)
    assert load_summary(ds.meta_path) == ds.meta
    _truncate(ds.meta_path)
    with pytest.raises(CorruptFileError, match=rf"^dataset summary {re.escape(ds.meta_path)} "
                                               rf"is not a readable JSON file"):
        load_summary(ds.meta_path)
    with open(ds.meta_path, "w") as fh:
        json.dump([1, 2], fh)
    with pytest.raises(CorruptFileError, match=rf"^dataset summary {re.escape(ds.meta_path)} "
                                               rf"is not a JSON object \(got list\)"):
        load_summary(ds.meta_path)
    with pytest.raises(FileNotFoundError, match="dataset summary not found"):
        load_summary(str(tmp_path / "missing.json"))
