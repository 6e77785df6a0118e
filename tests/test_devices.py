"""The same code runs on every available device and gives the CPU's answer."""

import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.data import RoutingData, dense_route_quantities, make_generator

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("problem", ["cvrp", "vrptw", "pcvrp", "pdtsp", "tsp"])
def test_generators_sample_on_the_device(device, problem):
    inst = make_generator(problem, 10, seed=0, device=device).sample(4)
    assert inst.pos.device.type == device
    assert inst[0].pos.device.type == device


@pytest.mark.parametrize("device", DEVICES)
def test_route_quantities_and_cost_on_the_device(device):
    inst = make_generator("vrptw", 12, seed=1, capacity=1000).sample(3)
    tours = torch.tensor([[0] + sum(([v, 0] for v in range(1, 13)), [])] * 3)
    ref = dense_route_quantities(inst.pos, tours)
    got = dense_route_quantities(inst.pos.to(device), tours.to(device))
    for a, b in zip(ref, got):
        assert b.device.type == device
        torch.testing.assert_close(b.cpu(), a)
    datas = [RoutingData.from_routes(inst[i], [[v] for v in range(1, 13)]) for i in range(3)]
    batch = Batch.from_data_list(datas)
    moved = batch.to(device)
    torch.testing.assert_close(moved.cost().cpu(), batch.cost())
    assert moved.is_feasible().all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("pe", ["ipexpe", "alibi", "rope", "lap"])
def test_encoder_runs_on_the_device(device, pe):
    from pyg_routing.models import GPSEncoder

    inst = make_generator("cvrp", 8, seed=0).sample(2)
    batch = Batch.from_data_list([RoutingData.from_routes(inst[i], [[1, 2, 3], [4, 5, 6, 7, 8]])
                                  for i in range(2)]).to(device)
    enc = GPSEncoder(2, 16, 2, 1, pe=pe, pe_dim=8).to(device)
    out = enc(batch)
    assert out.device.type == device and torch.isfinite(out).all()
