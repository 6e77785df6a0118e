import os

import pytest
import torch
from torch_geometric.loader import DataLoader

from pyg_routing.data.dataset import RoutingDataset
from pyg_routing.data.generators import CVRPGenerator


def test_generated_dataset_matches_the_generator_and_batches(tmp_path):
    ds = RoutingDataset(str(tmp_path), "cvrp", 10, 12, seed=3)
    ref = CVRPGenerator(10, seed=3).sample(12)
    assert len(ds) == 12
    assert torch.equal(ds[5].pos, ref.pos[5])
    batch = next(iter(DataLoader(ds, batch_size=5)))
    assert batch.num_graphs == 5 and batch.pos.shape == (55, 2)
    assert ds.meta["summary"] == {"num_instances": 12, "num_nodes": 11}


def test_cache_is_keyed_on_every_parameter(tmp_path):
    a = RoutingDataset(str(tmp_path), "cvrp", 10, 4, seed=0)
    b = RoutingDataset(str(tmp_path), "cvrp", 10, 4, seed=1)
    c = RoutingDataset(str(tmp_path), "cvrp", 10, 4, seed=0, generator_kwargs={"capacity": 40})
    d = RoutingDataset(str(tmp_path), "cvrp", 10, 4, seed=0, solver="nearest_neighbor")
    paths = {x.processed_paths[0] for x in (a, b, c, d)}
    assert len(paths) == 4
    assert not torch.equal(a[0].pos, b[0].pos)
    assert float(c[0].capacity) == 40.0 and float(a[0].capacity) == 30.0
    # Same parameters: the cached file is reused, not rebuilt.
    mtime = os.path.getmtime(a.processed_paths[0])
    again = RoutingDataset(str(tmp_path), "cvrp", 10, 4, seed=0)
    assert os.path.getmtime(again.processed_paths[0]) == mtime
    assert torch.equal(again[0].pos, a[0].pos)


@pytest.mark.parametrize("problem", ["cvrp", "pdtsp"])
def test_reference_solutions_are_cached_and_feasible(tmp_path, problem):
    ds = RoutingDataset(str(tmp_path), problem, 10, 3, seed=0, solver="auto",
                        time_limit=0.1, num_workers=1, progress=False)
    for data in ds:
        data.check(allow_zero_length=True)
    summary = ds.meta["summary"]
    assert summary["feasible_fraction"] == 1.0
    costs = torch.stack([d.cost() for d in ds]).double()
    assert summary["mean_cost"] == pytest.approx(float(costs.mean()))
