import random

import pytest
import torch
from torch_geometric.data import Batch
from torch_geometric.loader import DataLoader

from pyg_routing.data import RoutingData
from pyg_routing.data.generators import CVRPGenerator, PCVRPGenerator
from pyg_routing.errors import NoSolutionError
from tests.helpers import random_routes


def _solutions(num: int, n: int, seed: int = 0) -> list[RoutingData]:
    rng = random.Random(seed)
    inst = CVRPGenerator(n, seed=seed).sample(num)
    return [RoutingData.from_routes(inst[i], random_routes(n, rng)) for i in range(num)]


def test_routes_round_trip_keeps_route_order(small_cvrp):
    routes = [[3, 4], [2], [1]]
    assert RoutingData.from_routes(small_cvrp, routes).routes() == routes


def test_cost_is_the_total_euclidean_length(small_cvrp):
    data = RoutingData.from_routes(small_cvrp, [[1, 2], [3, 4]])
    assert data.cost().item() == pytest.approx(4.0 + 6.0)


def test_pcvrp_cost_subtracts_collected_prizes():
    inst = PCVRPGenerator(6, seed=0).sample(1)[0]
    data = RoutingData.from_routes(inst, [[1, 4]])
    assert data.visited.tolist() == [False, True, False, False, True, False, False]
    length = data.arc_lengths().sum()
    assert data.cost().item() == pytest.approx((length - inst.prize[[1, 4]].sum()).item())
    assert data.route_pos[[2, 3]].tolist() == [-1, -1]


def test_batch_shifts_nodes_and_keeps_route_ids_unique():
    datas = _solutions(5, 12)
    batch = Batch.from_data_list(datas)
    rid = batch.route_id
    assert rid[batch.depot_mask].eq(-1).all()
    total = sum(len(d.routes()) for d in datas)
    assert sorted(rid[rid >= 0].unique().tolist()) == list(range(total))
    for g, d in enumerate(datas):
        ids = rid[batch.batch == g]
        assert not set(ids[ids >= 0].tolist()) & set(rid[(batch.batch != g) & (rid >= 0)].tolist())
        assert torch.equal(batch.edge_index[:, batch.batch[batch.edge_index[0]] == g]
                           - batch.ptr[g], d.edge_index)
    assert batch.routes() == [d.routes() for d in datas]
    torch.testing.assert_close(batch.cost(), torch.stack([d.cost() for d in datas]))


def test_to_data_list_restores_every_field():
    datas = _solutions(4, 9, seed=3)
    back = Batch.from_data_list(datas).to_data_list()
    for a, b in zip(datas, back):
        assert a.routes() == b.routes()
        assert torch.equal(a.route_id, b.route_id)
        for key in a.keys():
            va, vb = a[key], b[key]
            assert torch.equal(va, vb) if isinstance(va, torch.Tensor) else va == vb, key


def test_dataloader_batches_solutions():
    datas = _solutions(10, 8)
    batches = list(DataLoader(datas, batch_size=4))
    assert [b.num_graphs for b in batches] == [4, 4, 2]
    assert torch.equal(torch.cat([b.cost() for b in batches]),
                       torch.stack([d.cost() for d in datas]))


def test_recomputed_quantities_on_a_batch_equal_the_stored_ones():
    batch = Batch.from_data_list(_solutions(6, 10, seed=5))
    stored = (batch.route_id.clone(), batch.route_pos.clone(), batch.cum_dist.clone())
    batch._set_route_quantities()
    assert torch.equal(batch.route_id, stored[0])
    assert torch.equal(batch.route_pos, stored[1])
    torch.testing.assert_close(batch.cum_dist, stored[2])


def test_from_routes_copies_and_never_mutates(small_cvrp):
    pos_before = small_cvrp.pos.clone()
    routes = [[1, 2], [3, 4]]
    data = RoutingData.from_routes(small_cvrp, routes)
    data.pos[0, 0] = 99.0
    assert torch.equal(small_cvrp.pos, pos_before)
    assert routes == [[1, 2], [3, 4]]
    assert "edge_index" not in small_cvrp


def test_from_instance_copies_user_tensors():
    pos = torch.rand(4, 2)
    demand = torch.tensor([0.0, 1.0, 2.0, 3.0])
    inst = RoutingData.from_instance("cvrp", pos, demand=demand, capacity=10)
    inst.pos.add_(1.0)
    inst.demand.add_(1.0)
    assert pos.max() <= 1.0 and demand[0] == 0


def test_solution_quantities_need_a_solution(small_cvrp):
    with pytest.raises(NoSolutionError, match="from_routes"):
        small_cvrp.routes()
    with pytest.raises(NoSolutionError):
        small_cvrp.cost()
