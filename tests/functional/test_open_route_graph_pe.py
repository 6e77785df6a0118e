"""The graph encodings (RWSE, SPD, and their transforms and search states) on the open
route graph: each route a path hanging from the depot, no closing edge."""

import random

import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing import encodings
from pyg_routing.data import RoutingData, make_generator
from pyg_routing.envs.two_opt import observe, reset, to_routes
from pyg_routing.functional._route_graph import route_graph_from_data, rwse
from pyg_routing.functional.graph_pe import laplacian_pe
from pyg_routing.functional.index_pe import dense_route_inputs
from pyg_routing.functional.pair_pe import hop_distance
from pyg_routing.functional.random_walk_pe import random_walk_pe
from pyg_routing.models import DACTPolicy
from pyg_routing.models.pe import ShortestPathBias
from pyg_routing.transforms import EncodingInputs, LaplacianPE, RandomWalkPE, ShortestPathDistance
from tests.functional.test_graph_pe import SPECIAL, random_cases, solution

F64 = torch.float64


def open_graph(num_nodes: int, routes: list[list[int]]) -> nx.Graph:
    """The open route graph, built edge by edge: ``0 - v_1 - ... - v_m`` per route."""
    graph = nx.Graph()
    graph.add_nodes_from(range(num_nodes))
    for route in routes:
        nx.add_path(graph, [0, *route])
    return graph


def dense_rwse(graph: nx.Graph, walk_length: int) -> np.ndarray:
    adj = nx.to_numpy_array(graph, nodelist=sorted(graph))
    walk = adj / np.maximum(adj.sum(1), 1)[:, None]
    power, out = np.eye(len(adj)), []
    for _ in range(walk_length):
        power = power @ walk
        out.append(np.diag(power))
    return np.stack(out, 1)


def bfs_hops(graph: nx.Graph) -> torch.Tensor:
    n = graph.number_of_nodes()
    want = torch.full((n, n), -1)
    for s, lengths in nx.all_pairs_shortest_path_length(graph):
        for t, d in lengths.items():
            want[s, t] = d
    return want


def open_instance(num_customers: int, seed: int = 0):
    return make_generator("cvrp", num_customers, seed=seed, open_routes=True).sample(1)[0]


CASES = random_cases(20, seed=11) + list(SPECIAL.values())


@pytest.mark.parametrize("walk_length", [1, 2, 7, 13])
def test_rwse_of_open_routes_equals_dense_walks(walk_length):
    for n, routes in CASES:
        data = solution(n, routes)
        rg = route_graph_from_data(data).with_open(True)
        got = rwse(rg, walk_length, F64).numpy()
        np.testing.assert_allclose(got, dense_rwse(open_graph(n + 1, routes), walk_length),
                                   atol=1e-13)
        # the public function from route arcs, with the flag
        assert np.array_equal(random_walk_pe(data.edge_index, data.num_nodes, dtype=F64,
                                             walk_length=walk_length, open_routes=True).numpy(),
                              got)


def test_graph_encodings_of_closed_graphs_are_unchanged_by_a_false_flag():
    data = solution(*SPECIAL["mixed with single-customer routes"])
    closed = random_walk_pe(data.edge_index, data.num_nodes, walk_length=9, dtype=F64)
    rg = route_graph_from_data(data)
    assert rg.with_open(False).open_graph is None
    assert torch.equal(rwse(rg.with_open(torch.tensor([False])), 9, F64), closed)
    route_pos, route_id, mask = dense_route_inputs(data)
    assert torch.equal(hop_distance(route_pos, route_id, mask, open_routes=torch.tensor([False])),
                       hop_distance(route_pos, route_id, mask))


def test_a_batch_of_open_and_closed_graphs_equals_one_by_one():
    datas = [solution(n, routes, seed=i) for i, (n, routes) in enumerate(CASES[:10])]
    opened = torch.tensor([i % 2 == 0 for i in range(len(datas))])
    batch = Batch.from_data_list(datas)
    rg = route_graph_from_data(batch).with_open(opened)
    pe = rwse(rg, 8, F64)
    for i, data in enumerate(datas):
        one = route_graph_from_data(data).with_open(opened[i:i + 1])
        torch.testing.assert_close(pe[batch.ptr[i]:batch.ptr[i + 1]], rwse(one, 8, F64),
                                   atol=1e-15, rtol=0)
    with pytest.raises(ValueError, match="one flag per graph"):
        rg.with_open(torch.tensor([True, False]))


def test_hop_distances_of_open_routes_equal_bfs():
    rng = random.Random(3)
    for n, routes in CASES:
        data = solution(n, routes)
        route_pos, route_id, mask = dense_route_inputs(data)
        got = hop_distance(route_pos, route_id, mask, open_routes=torch.tensor([True]))[0]
        assert torch.equal(got, bfs_hops(open_graph(n + 1, routes))), routes
    # the open distances of a batch: one flag per instance
    datas = [solution(n, routes, seed=i) for i, (n, routes) in enumerate(rng.sample(CASES, 6))]
    route_pos, route_id, mask = dense_route_inputs(Batch.from_data_list(datas))
    opened = torch.tensor([True, False] * 3)
    both = hop_distance(route_pos, route_id, mask, open_routes=opened)
    for i in range(6):
        one = hop_distance(route_pos[i:i + 1], route_id[i:i + 1], mask[i:i + 1],
                           open_routes=opened[i:i + 1])
        assert torch.equal(both[i], one[0])


def test_the_transforms_read_the_instance_open_routes():
    inst = open_instance(9, seed=2)
    routes = [[3, 1, 4], [5, 9], [2, 6, 8, 7]]
    data = RoutingData.from_routes(inst, routes)
    graph = open_graph(10, routes)
    out = ShortestPathDistance()(data.clone())
    assert torch.equal(out.spd.view(10, 10), bfs_hops(graph))
    code = RandomWalkPE(walk_length=6, attr_name=None).encode(data)
    np.testing.assert_allclose(code.double().numpy(), dense_rwse(graph, 6), atol=1e-6)
    assert bool(EncodingInputs.from_data(data).graph("rwse").open_graph.all())
    lap = LaplacianPE(k=5, attr_name=None, random_sign=False).encode(data)
    assert torch.equal(lap, laplacian_pe(data.edge_index, data.num_nodes, k=5,
                                         open_routes=True))
    assert not torch.allclose(lap, laplacian_pe(data.edge_index, data.num_nodes, k=5))
    # the attention bias of a RoutingData reads the flag too
    spd = ShortestPathBias(2, max_distance=20)
    bias, _ = spd.dense_bias(data)
    torch.testing.assert_close(bias[0, 0], spd.weight[0, bfs_hops(graph)])


def test_the_spd_bias_refuses_open_flags_of_another_batch():
    route_pos = torch.tensor([[0, 1, 2], [0, 2, 1]])
    with pytest.raises(ValueError, match=r"one flag per instance \(2\), got 3"):
        ShortestPathBias(2, max_distance=4)(route_pos, torch.zeros_like(route_pos),
                                            open_routes=torch.ones(3, dtype=torch.bool))


def test_dact_search_code_of_rwse_equals_the_transform_on_open_instances():
    inst = make_generator("cvrp", 12, seed=5, open_routes=True).sample(3)
    state = reset(inst, init="nearest_neighbor")
    pol = DACTPolicy.build("cvrp", pe="rwse", dim=16, heads=2, num_layers=1, pe_dim=8)
    code = pol.prepare(observe(state)).pe
    k = state.num_depots
    transform = encodings.node_transform("rwse", dim=8, num_bands=4, attr_name=None)
    for i, routes in enumerate(to_routes(state, best=False)):
        ref = transform.encode(RoutingData.from_routes(inst[i], routes)).to(code.dtype)
        dense = dense_rwse(open_graph(13, routes), 8)
        np.testing.assert_allclose(ref[1:].double().numpy(), dense[1:], atol=1e-6)
        torch.testing.assert_close(code[i, k:], ref[1:], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(code[i, :k], ref[:1].expand(k, -1), atol=1e-5, rtol=1e-5)


def _spy_open_flags(monkeypatch) -> list:
    seen = []
    original = ShortestPathBias.pair_bias

    def spy(self, route_pos, route_id, mask, open_routes=None):
        seen.append(open_routes)
        return original(self, route_pos, route_id, mask, open_routes)

    monkeypatch.setattr(ShortestPathBias, "pair_bias", spy)
    return seen


def test_the_search_encoders_pass_open_routes_to_spd(monkeypatch):
    from pyg_routing.envs.deconstruction.env import DeconstructionEnv
    from pyg_routing.envs.deconstruction.observation import NDSFeatures
    from pyg_routing.envs.deconstruction.observation import observe as nds_observe
    from pyg_routing.models import NDSPolicy

    seen = _spy_open_flags(monkeypatch)
    inst = make_generator("cvrp", 10, seed=1, open_routes=True).sample(2)
    pol = DACTPolicy.build("cvrp", pe="spd", dim=16, heads=2, num_layers=1)
    with torch.no_grad():
        pol.encoder.forward_observation(observe(reset(inst, init="nearest_neighbor")))
    assert seen[-1] is not None and seen[-1].tolist() == [True, True]
    batch = DeconstructionEnv().reset(inst, rng=0)
    obs = nds_observe(batch.state, NDSFeatures.from_instances(inst))
    nds = NDSPolicy.build("cvrp", pe="spd", dim=16, heads=2, ff_hidden=16)
    with torch.no_grad():
        nds.encoder.forward_observation(obs)
    assert seen[-1] is not None and bool(seen[-1].all()) and seen[-1].numel() == len(obs)
    closed = make_generator("cvrp", 10, seed=1).sample(2)
    with torch.no_grad():
        pol.encoder.forward_observation(observe(reset(closed, init="nearest_neighbor")))
    assert seen[-1] is None
