"""Attention-bias encodings (RPE, ALiBi, SPD), paper App. E."""


import networkx as nx
import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.data import PCVRPGenerator, RoutingData, TSPGenerator
from pyg_routing.errors import NoSolutionError
from pyg_routing.functional.index_pe import dense_route_inputs
from pyg_routing.functional.pair_pe import alibi_slopes, hop_distance
from pyg_routing.models.pe import ALiBiBias, RelativePositionBias, ShortestPathBias
from tests.helpers import random_pcvrp_solutions

MODULES = [lambda: RelativePositionBias(4, window=3),
           lambda: RelativePositionBias(4, window=3, per_head=True),
           lambda: ALiBiBias(4),
           lambda: ShortestPathBias(4, max_distance=5),
           lambda: ShortestPathBias(4, max_distance=5, per_head=True)]


def _networkx_hops(data: RoutingData) -> torch.Tensor:
    graph = nx.Graph()
    graph.add_nodes_from(range(data.num_nodes))
    graph.add_edges_from(data.edge_index.t().tolist())
    want = torch.full((data.num_nodes, data.num_nodes), -1)
    for s, lengths in nx.all_pairs_shortest_path_length(graph):
        for t, d in lengths.items():
            want[s, t] = d
    return want


# ----------------------------------------------------------------------------- ALiBi
def test_alibi_slopes_follow_the_original_schedule():
    assert alibi_slopes(8).tolist() == [2.0 ** -k for k in range(1, 9)]
    assert alibi_slopes(6).tolist() == [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8]
    assert alibi_slopes(1).tolist() == [2.0 ** -8]
    twelve = alibi_slopes(12).tolist()
    assert twelve[:8] == alibi_slopes(8).tolist()
    assert twelve[8:] == alibi_slopes(16).tolist()[0::2][:4]
    with pytest.raises(ValueError, match="num_heads=0"):
        ALiBiBias(0)


def test_alibi_exact_values():
    pos = torch.tensor([[0, 1, 2, 1, -1]])                 # last: unvisited
    bias = ALiBiBias(2)(pos)
    gap = torch.tensor([[0, 1, 2, 1], [1, 0, 1, 0], [2, 1, 0, 1], [1, 0, 1, 0]]).float()
    torch.testing.assert_close(bias[0, 0, :4, :4], -gap / 16)
    torch.testing.assert_close(bias[0, 1, :4, :4], -gap / 256)
    assert bias[0, :, 4].eq(0).all() and bias[0, :, :, 4].eq(0).all()
    assert list(ALiBiBias(2).parameters()) == []


# ----------------------------------------------------------------------------- RPE
def test_rpe_clips_offsets_and_shares_heads():
    rpe = RelativePositionBias(3, window=2)
    with torch.no_grad():
        rpe.weight.copy_(torch.arange(6.0))                 # offsets -2..2 -> 0..4, unvisited 5
    pos = torch.tensor([[0, 1, 4, -1]])
    bias = rpe(pos)
    want = torch.tensor([[2, 1, 0, 5], [3, 2, 0, 5], [4, 4, 2, 5], [5, 5, 5, 5]]).float()
    for h in range(3):
        torch.testing.assert_close(bias[0, h], want)
    per_head = RelativePositionBias(3, window=2, per_head=True)
    out = per_head(pos)
    assert out.shape == (1, 3, 4, 4) and not torch.equal(out[0, 0], out[0, 1])
    with pytest.raises(ValueError, match="window=-1"):
        RelativePositionBias(2, window=-1)


# ----------------------------------------------------------------------------- SPD
def test_hop_distance_matches_networkx_on_random_solutions():
    datas = random_pcvrp_solutions(12, 14, seed=3) + random_pcvrp_solutions(4, 6, seed=9, keep=1.0)
    datas.append(RoutingData.from_routes(PCVRPGenerator(4, seed=0).sample(1)[0],
                                         [[1], [2], [3, 4]]))
    datas.append(RoutingData.from_routes(TSPGenerator(9, seed=0).sample(1)[0],
                                         [[4, 2, 8, 1, 3, 7, 5, 6]]))
    for data in datas:
        pos, rid, mask = dense_route_inputs(data)
        torch.testing.assert_close(hop_distance(pos, rid, mask)[0], _networkx_hops(data))
    batch = Batch.from_data_list(datas[:-1])
    pos, rid, mask = dense_route_inputs(batch)
    got = hop_distance(pos, rid, mask)
    for g, data in enumerate(datas[:-1]):
        n = data.num_nodes
        torch.testing.assert_close(got[g, :n, :n], _networkx_hops(data))
        assert got[g, n:].eq(-1).all() and got[g, :, n:].eq(-1).all()


def test_spd_buckets_and_diameter():
    data = RoutingData.from_routes(PCVRPGenerator(7, seed=0).sample(1)[0],
                                   [[1, 2, 3, 4, 5], [6]])      # node 7 unvisited
    pos, rid, mask = dense_route_inputs(data)
    dist = hop_distance(pos, rid, mask)[0]
    assert dist.max() == 3 + 1 <= ShortestPathBias.diameter(5) == 6
    assert ShortestPathBias.diameter(5, multi_route=False) == 3
    spd = ShortestPathBias(2, max_distance=2)
    with torch.no_grad():
        spd.weight.copy_(torch.tensor([10.0, 11.0, 12.0, 13.0]))   # 0, 1, >=2, unreachable
    bias = spd(pos, rid, mask)[0, 0]
    want = torch.where(dist < 0, 13.0, 10.0 + dist.clamp(max=2).float())
    torch.testing.assert_close(bias, want)
    assert bias[7, :7].eq(13).all() and bias[7, 7] == 10


# ----------------------------------------------------------------------------- all biases
@pytest.mark.parametrize("make", MODULES, ids=lambda m: repr(m()))
def test_batch_equals_one_by_one_with_padding(make):
    module = make()
    datas = random_pcvrp_solutions(4, 8)
    bias, mask = module.dense_bias(Batch.from_data_list(datas))
    assert bias.shape == (4, 4, mask.size(1), mask.size(1))
    for g, data in enumerate(datas):
        n = data.num_nodes
        alone, _ = module.dense_bias(data)
        torch.testing.assert_close(bias[g, :, :n, :n], alone[0])
        assert bias[g, :, :n, n:].eq(float("-inf")).all()       # padded keys masked
        assert bias[g, :, n:].eq(0).all()                        # padded queries neutral
    logits = torch.randn_like(bias) + bias
    assert torch.isfinite(logits.softmax(-1)).all()
    q = torch.randn(4, 4, mask.size(1), 8)
    out = torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=bias)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("make", MODULES, ids=lambda m: repr(m()))
def test_gradients_device_dtype_and_repr(make):
    module = make()
    data = random_pcvrp_solutions(1, 9)[0]
    bias, mask = module.to(torch.device("cpu")).dense_bias(data)
    learnable = list(module.parameters())
    if learnable:
        bias.sum().backward()
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in learnable)
        old = [p.detach().clone() for p in learnable]
        module.reset_parameters()
        assert not all(torch.equal(a, p) for a, p in zip(old, learnable))
    double, _ = module.double().dense_bias(data)
    assert double.dtype == torch.float64
    text = repr(module)
    assert text.startswith(type(module).__name__ + "(num_heads=4") and "max_nodes=4096" in text


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("make", MODULES, ids=lambda m: repr(m()))
def test_cuda_matches_cpu(make):  # pragma: no cover - GPU only
    module = make()
    data = random_pcvrp_solutions(1, 9)[0]
    cpu, _ = module.dense_bias(data)
    gpu, _ = module.to("cuda").dense_bias(data.to("cuda"))
    torch.testing.assert_close(gpu.cpu(), cpu)


@pytest.mark.parametrize("make", MODULES, ids=lambda m: repr(m()))
def test_bad_input_is_a_clear_error(make, small_cvrp):
    module = make()
    with pytest.raises(ValueError, match=r"N=4097 nodes per graph is above the limit "
                                         r"max_nodes=4096"):
        module(torch.zeros(1, 4097, dtype=torch.long), torch.zeros(1, 4097, dtype=torch.long))
    with pytest.raises(ValueError, match=r"shape \[B, N\]"):
        module(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="integer route_pos"):
        module(torch.zeros(1, 5), torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="mask must match"):
        module(torch.zeros(1, 5, dtype=torch.long), torch.zeros(1, 5, dtype=torch.long),
               mask=torch.ones(1, 4, dtype=torch.bool))
    with pytest.raises(NoSolutionError):
        module.dense_bias(small_cvrp)
    if module.needs_route_id:
        with pytest.raises(ValueError, match="needs route_id"):
            module(torch.zeros(1, 5, dtype=torch.long))


def test_hop_distance_limit_names_n():
    with pytest.raises(ValueError, match="N=10 .* max_nodes=8"):
        hop_distance(torch.zeros(1, 10, dtype=torch.long), torch.zeros(1, 10, dtype=torch.long),
                     max_nodes=8)
