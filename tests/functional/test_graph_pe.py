"""Laplacian PE and RWSE of route graphs (paper App. E): closed forms vs dense linear
algebra and PyG, batching, input formats, transforms, devices."""

import random

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.transforms import AddRandomWalkPE
from torch_geometric.utils import to_undirected

from pyg_routing.data import RoutingData
from pyg_routing.errors import NoSolutionError
from pyg_routing.functional._route_graph import route_graph, route_graph_from_data
from pyg_routing.functional.graph_pe import laplacian_pe
from pyg_routing.functional.random_walk_pe import random_walk_pe
from pyg_routing.transforms.laplacian_pe import LaplacianPE
from pyg_routing.transforms.random_walk_pe import RandomWalkPE
from tests.helpers import random_routes

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
F64 = torch.float64


def solution(n: int, routes: list[list[int]], seed: int = 0) -> RoutingData:
    """A solution with ``n`` customers; PCVRP, so that customers may be left out
    (with all visited it is a CVRP solution with prizes; they batch together)."""
    pos = torch.rand(n + 1, 2, generator=torch.Generator().manual_seed(seed))
    demand = torch.ones(n + 1)
    demand[0] = 0
    inst = RoutingData.from_instance("pcvrp", pos, demand=demand, capacity=n, prize=demand)
    return RoutingData.from_routes(inst, routes)


def dense_laplacian(data: Data) -> np.ndarray:
    n = data.num_nodes
    adj = np.zeros((n, n))
    for s, t in data.edge_index.t().tolist():
        if s != t:
            adj[s, t] = adj[t, s] = 1.0
    return np.diag(adj.sum(1)) - adj


def assert_laplacian_eigenvectors(data: Data, pe: np.ndarray, k: int, tol: float = 1e-8) -> None:
    """``L u = λ u``, orthonormal columns, eigenvalues = the ``k`` smallest non-trivial
    ones of the dense Laplacian, zero padding beyond ``N - 1``."""
    assert_eigenvectors_of(dense_laplacian(data), pe, k, tol)


def assert_eigenvectors_of(lap: np.ndarray, pe: np.ndarray, k: int, tol: float = 1e-8) -> None:
    """:func:`assert_laplacian_eigenvectors` against a given dense Laplacian ``lap``."""
    n = lap.shape[0]
    used = min(k, n - 1)
    u = pe[:, :used]
    lam = np.einsum("ij,ij->j", u, lap @ u)
    assert np.isfinite(pe).all()
    assert np.abs(lap @ u - u * lam).max() < tol
    assert np.abs(u.T @ u - np.eye(used)).max() < tol
    ref = np.linalg.eigvalsh(lap)[1:used + 1]
    assert np.abs(lam - ref).max() < tol
    assert np.all(np.diff(lam) > -tol)                      # ascending
    assert (pe[:, used:] == 0).all()


def random_cases(count: int, seed: int) -> list[tuple[int, list[list[int]]]]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        n = rng.choice([20, 50, rng.randint(1, 30)])
        keep = rng.choice([1.0, 1.0, 0.6])
        cases.append((n, random_routes(n, rng, max_routes=rng.randint(1, 15), keep=keep)))
    return cases


def equal_length_routes(n: int, size: int) -> list[list[int]]:
    return [list(range(s, min(s + size, n + 1))) for s in range(1, n + 1, size)]


SPECIAL = {
    "tsp-30": (30, [list(range(1, 31))]),
    "tsp-3 (C4, λ = 4)": (3, [[1, 2, 3]]),
    "triangle + pendant (λ = 4)": (3, [[1, 2], [3]]),
    "star of 8 pendants (λ = 9)": (8, [[v] for v in range(1, 9)]),
    "4 triangles (λ > 4)": (8, [[1, 2], [3, 4], [5, 6], [7, 8]]),
    "one customer": (1, [[1]]),
    "equal routes of 3": (30, equal_length_routes(30, 3)),
    "equal routes of 5": (30, equal_length_routes(30, 5)),
    "mixed with single-customer routes": (
        36, [[1, 2, 3], list(range(4, 12)), [12], [13], list(range(14, 25)), list(range(25, 37))]),
    "pcvrp, 2 visited": (10, [[3], [5]]),
    "pcvrp, nothing visited": (6, []),
}


@pytest.mark.parametrize("name", list(SPECIAL))
@pytest.mark.parametrize("k", [3, 8, 20])
def test_laplacian_pe_special_graphs(name, k):
    n, routes = SPECIAL[name]
    data = solution(n, routes)
    pe = laplacian_pe(data.edge_index, data.num_nodes, k=k, dtype=F64)
    assert pe.shape == (n + 1, k)
    assert_laplacian_eigenvectors(data, pe.numpy(), k)


def test_laplacian_pe_random_solutions():
    # CVRP-20/50 and small instances, with single-customer routes and PCVRP skips.
    for n, routes in random_cases(40, seed=1):
        data = solution(n, routes)
        pe = laplacian_pe(data.edge_index, data.num_nodes, k=8, dtype=F64)
        assert_laplacian_eigenvectors(data, pe.numpy(), 8)


def test_isolated_customers_come_first_as_indicators():
    data = solution(6, [[2, 4]])                             # 1, 3, 5, 6 unvisited
    pe = laplacian_pe(data.edge_index, data.num_nodes, k=5, dtype=F64)
    assert pe[[1, 3, 5, 6], :4].tolist() == np.eye(4).tolist()
    assert pe[[0, 2, 4], :4].abs().max() == 0


def test_laplacian_batch_equals_one_by_one_and_float32_default():
    datas = [solution(n, routes, seed=i) for i, (n, routes) in enumerate(random_cases(12, 2))]
    batch = Batch.from_data_list(datas)
    pe = laplacian_pe(batch.edge_index, batch.num_nodes, batch.batch)
    assert pe.dtype == torch.get_default_dtype() and pe.shape == (batch.num_nodes, 8)
    for i, data in enumerate(datas):
        one = laplacian_pe(data.edge_index, data.num_nodes)
        torch.testing.assert_close(pe[batch.ptr[i]:batch.ptr[i + 1]], one, atol=1e-6, rtol=0)


def test_random_signs_flip_whole_eigenvectors():
    datas = [solution(20, random_routes(20, random.Random(i)), seed=i) for i in range(4)]
    batch = Batch.from_data_list(datas)
    args = (batch.edge_index, batch.num_nodes, batch.batch)
    plain = laplacian_pe(*args, dtype=F64)
    flipped = laplacian_pe(*args, dtype=F64, random_sign=True,
                           generator=torch.Generator().manual_seed(0))
    signs = torch.stack([(flipped[a:b] * plain[a:b]).sum(0)
                         for a, b in zip(batch.ptr[:-1], batch.ptr[1:])])      # [B, k]
    torch.testing.assert_close(flipped.abs(), plain.abs())
    torch.testing.assert_close(signs.abs(), torch.ones_like(signs))   # ± each unit vector
    assert (signs < 0).any() and (signs > 0).any()


def pyg_rwse(data: Data, walk_length: int) -> torch.Tensor:
    edge_index = to_undirected(data.edge_index, num_nodes=data.num_nodes)
    edge_index = edge_index[:, edge_index[0] != edge_index[1]]
    out = AddRandomWalkPE(walk_length)(Data(edge_index=edge_index, num_nodes=data.num_nodes))
    return out.random_walk_pe


@pytest.mark.parametrize("walk_length", [1, 2, 8, 13])
def test_random_walk_pe_equals_pyg(walk_length):
    cases = random_cases(25, seed=4) + list(SPECIAL.values())
    for n, routes in cases:
        data = solution(n, routes)
        got = random_walk_pe(data.edge_index, data.num_nodes, walk_length=walk_length)
        torch.testing.assert_close(got, pyg_rwse(data, walk_length), atol=1e-6, rtol=1e-5)


def test_random_walk_pe_is_exact_in_float64():
    data = solution(*SPECIAL["mixed with single-customer routes"])
    lap = dense_laplacian(data)
    adj = np.diag(np.diag(lap)) - lap
    walk = adj / np.maximum(adj.sum(1), 1)[:, None]
    power, ref = np.eye(len(adj)), []
    for _ in range(10):
        power = power @ walk
        ref.append(np.diag(power))
    got = random_walk_pe(data.edge_index, data.num_nodes, walk_length=10, dtype=F64)
    np.testing.assert_allclose(got.numpy(), np.stack(ref, 1), atol=1e-14)


def test_random_walk_batch_equals_one_by_one():
    datas = [solution(n, routes, seed=i) for i, (n, routes) in enumerate(random_cases(12, 5))]
    batch = Batch.from_data_list(datas)
    pe = random_walk_pe(batch.edge_index, batch.num_nodes, batch.batch)
    for i, data in enumerate(datas):
        torch.testing.assert_close(pe[batch.ptr[i]:batch.ptr[i + 1]],
                                   random_walk_pe(data.edge_index, data.num_nodes))


def test_input_formats_agree():
    datas = [solution(n, routes, seed=i) for i, (n, routes) in enumerate(random_cases(6, 6))]
    batch = Batch.from_data_list(datas)
    stored = route_graph_from_data(batch)                    # route_pos / route_index
    arcs = route_graph(batch.edge_index, batch.num_nodes, batch.batch)
    with_ptr = route_graph(batch.edge_index, ptr=batch.ptr)
    for rg in (arcs, with_ptr):
        for a, b in zip(rg, stored):
            assert (a is None and b is None) or torch.equal(a, b)   # open_graph: None
    depot = torch.zeros(batch.num_nodes, dtype=torch.bool)
    depot[batch.ptr[:-1]] = True
    ref = laplacian_pe(stored, dtype=F64)
    torch.testing.assert_close(laplacian_pe(batch.edge_index, batch.num_nodes, batch.batch,
                                            depot_mask=depot, dtype=F64), ref)
    torch.testing.assert_close(random_walk_pe(batch.edge_index, ptr=batch.ptr),
                               random_walk_pe(stored))
    # Arcs in any order (routes may get other ids; the encodings do not depend on them).
    perm = torch.randperm(batch.edge_index.size(1), generator=torch.Generator().manual_seed(0))
    shuffled = route_graph(batch.edge_index[:, perm], batch.num_nodes, batch.batch)
    assert torch.equal(shuffled.route_pos, stored.route_pos)
    torch.testing.assert_close(laplacian_pe(shuffled, dtype=F64), ref)
    torch.testing.assert_close(random_walk_pe(shuffled), random_walk_pe(stored))


def test_depot_anywhere_with_depot_mask():
    datas = [solution(9, [[4], [1, 2, 3], [5, 6, 7, 8, 9]], seed=0),
             solution(7, [[7, 1], [2, 3, 4, 5, 6]], seed=1)]    # no degenerate λ
    batch = Batch.from_data_list(datas)
    n = batch.num_nodes
    # Relabel nodes within each graph so that the depots sit third.
    perm = torch.cat([torch.roll(torch.arange(a, b), 2) for a, b in
                      zip(batch.ptr[:-1].tolist(), batch.ptr[1:].tolist())])
    new_of = torch.empty_like(perm)
    new_of[perm] = torch.arange(n)
    edge_index = new_of[batch.edge_index]
    depot = torch.zeros(n, dtype=torch.bool)
    depot[new_of[batch.ptr[:-1]]] = True
    rw = random_walk_pe(edge_index, n, batch.batch, depot_mask=depot, dtype=F64)
    torch.testing.assert_close(rw[new_of], random_walk_pe(batch.edge_index, n, batch.batch,
                                                          dtype=F64))
    lap = laplacian_pe(edge_index, n, batch.batch, depot_mask=depot, dtype=F64)
    ref = laplacian_pe(batch.edge_index, n, batch.batch, dtype=F64)
    torch.testing.assert_close(lap[new_of].abs(), ref.abs())
    with pytest.raises(ValueError, match="one depot per graph"):
        random_walk_pe(edge_index, n, batch.batch, depot_mask=torch.zeros(n, dtype=torch.bool))


def test_transforms_on_data_and_batch():
    datas = [solution(15, random_routes(15, random.Random(i), keep=0.7), seed=i)
             for i in range(3)]
    lap = LaplacianPE(k=4).eval()
    rw = RandomWalkPE(walk_length=5)
    batch = rw(lap(Batch.from_data_list(datas)))
    assert batch.laplacian_pe.shape == (batch.num_nodes, 4)
    assert batch.random_walk_pe.shape == (batch.num_nodes, 5)
    for i, data in enumerate(datas):
        one = rw(lap(data))
        part = slice(int(batch.ptr[i]), int(batch.ptr[i + 1]))
        torch.testing.assert_close(batch.laplacian_pe[part], one.laplacian_pe, atol=1e-6,
                                   rtol=0)
        torch.testing.assert_close(batch.random_walk_pe[part], one.random_walk_pe)
        assert "laplacian_pe" not in data                    # input left untouched
    assert repr(lap) == "LaplacianPE(k=4, attr_name='laplacian_pe', random_sign=True, " \
                        "training=False)"
    assert repr(rw) == "RandomWalkPE(walk_length=5, attr_name='random_walk_pe')"


def test_laplacian_transform_flips_signs_only_in_training():
    data = solution(20, random_routes(20, random.Random(0)))
    lap = LaplacianPE(k=8, generator=torch.Generator().manual_seed(1))
    assert lap.training
    ref = laplacian_pe(data.edge_index, data.num_nodes)
    seen = {tuple(torch.sign((lap(data).laplacian_pe * ref).sum(0)).tolist()) for _ in range(8)}
    assert len(seen) > 1
    assert torch.equal(lap.eval()(data).laplacian_pe, ref)
    assert lap.train().training
    fixed = LaplacianPE(k=8, random_sign=False)
    assert torch.equal(fixed(data).laplacian_pe, ref)


def test_attr_name_none_concatenates_onto_x():
    data = solution(10, [[1, 2, 3], [4], [5, 6, 7, 8, 9, 10]])
    out = RandomWalkPE(4, attr_name=None)(data)              # creates x
    assert out.x.shape == (11, 4)
    out = LaplacianPE(3, attr_name=None).eval()(out)          # appends to x
    assert out.x.shape == (11, 7)
    torch.testing.assert_close(out.x[:, 4:], laplacian_pe(data.edge_index, 11, k=3))


def test_tsp_instance_is_one_cycle():
    data = RoutingData.from_routes(RoutingData.from_instance("tsp", torch.rand(12, 2)),
                                   [list(range(1, 12))])
    out = RandomWalkPE(6)(LaplacianPE(8).eval()(data))
    lam = 2 - 2 * np.cos(2 * np.pi * np.arange(1, 5) / 12)       # C_12: pairs 2 - 2cos(2πq/12)
    assert_laplacian_eigenvectors(data, out.laplacian_pe.double().numpy(), 8, tol=1e-5)
    lap = dense_laplacian(data)
    u = out.laplacian_pe.double().numpy()
    np.testing.assert_allclose(np.einsum("ij,ij->j", u, lap @ u), np.repeat(lam, 2), atol=1e-5)
    torch.testing.assert_close(out.random_walk_pe, pyg_rwse(data, 6))


def test_no_solution_raises_typed_error():
    inst = RoutingData.from_instance("cvrp", torch.rand(5, 2), demand=[0, 1, 1, 1, 1],
                                     capacity=4)
    for transform in (LaplacianPE(), RandomWalkPE()):
        with pytest.raises(NoSolutionError):
            transform(inst)
    with pytest.raises(ValueError):
        LaplacianPE(k=0)
    with pytest.raises(ValueError):
        RandomWalkPE(walk_length=0)


@pytest.mark.parametrize("device", DEVICES)
def test_on_device_matches_cpu(device):
    datas = [solution(n, routes, seed=i) for i, (n, routes) in enumerate(random_cases(6, 7))]
    batch = Batch.from_data_list(datas)
    moved = batch.clone().to(device)          # PyG's Data.to moves in place
    for fn in (laplacian_pe, random_walk_pe):
        got = fn(moved.edge_index, moved.num_nodes, moved.batch)
        assert got.device.type == device and torch.isfinite(got).all()
        torch.testing.assert_close(got.cpu(), fn(batch.edge_index, batch.num_nodes, batch.batch),
                                   atol=1e-5, rtol=0)
    out = RandomWalkPE()(LaplacianPE().eval()(moved))
    assert out.laplacian_pe.device.type == device and out.random_walk_pe.device.type == device
