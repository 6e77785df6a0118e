"""Laplacian PE of open-route graphs (each route the path ``0 - v_1 - ... - v_m``):
closed forms vs dense linear algebra, batches mixing open and closed graphs, and
closed graphs left exactly as they were."""

import random

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.functional._laplacian_modes import _Modes
from pyg_routing.functional._route_graph import route_graph
from pyg_routing.functional.graph_pe import (
    _eigenvectors,
    _robust_secular,
    _spectrum,
    laplacian_pe,
)
from tests.functional.test_graph_pe import (
    assert_eigenvectors_of,
    equal_length_routes,
    random_cases,
    solution,
)

F64 = torch.float64


def dense_open_laplacian(n: int, routes: list[list[int]]) -> np.ndarray:
    """``L = D - A`` of the spider of paths ``0 - v_1 - ... - v_m`` (no closing edge)."""
    adj = np.zeros((n + 1, n + 1))
    for route in routes:
        path = [0, *route]
        for s, t in zip(path[:-1], path[1:]):
            adj[s, t] = adj[t, s] = 1.0
    return np.diag(adj.sum(1)) - adj


def assert_open_eigenvectors(n: int, routes: list[list[int]], pe: np.ndarray, k: int,
                             tol: float = 1e-8) -> None:
    """``L u = λ u``, orthonormal columns, eigenvalues = the ``k`` smallest non-trivial
    ones of the dense open Laplacian (numpy's ``eigvalsh``), zero padding beyond
    ``N - 1``."""
    assert_eigenvectors_of(dense_open_laplacian(n, routes), pe, k, tol)


def open_pe(n: int, routes: list[list[int]], k: int, seed: int = 0) -> np.ndarray:
    data = solution(n, routes, seed)
    pe = laplacian_pe(data.edge_index, data.num_nodes, k=k, dtype=F64, open_routes=True)
    assert pe.shape == (n + 1, k)
    return pe.numpy()


@pytest.mark.parametrize("m", range(1, 13))
@pytest.mark.parametrize("k", [3, 8, 20])
def test_single_open_route_is_a_path(m, k):
    # m = 1 is the pendant; k = 20 > N - 1 reaches the top of the path (λ near 4).
    routes = [list(range(1, m + 1))]
    assert_open_eigenvectors(m, routes, open_pe(m, routes, k), k)


OPEN_SPECIAL = {
    "equal routes of 2": (24, equal_length_routes(24, 2)),
    "equal routes of 3": (30, equal_length_routes(30, 3)),
    "equal routes of 5": (30, equal_length_routes(30, 5)),
    "star of 8 pendants (λ = 9)": (8, [[v] for v in range(1, 9)]),
    "3 legs of 2 (λ > 4)": (6, [[1, 2], [3, 4], [5, 6]]),
    # 1/3 = 3/9 = 5/15: pendants share the pole μ = 1 with legs of 4 and 7.
    "pendants and legs of 4, 7 (shared μ = 1)": (
        18, [[1, 2, 3, 4], [5], [6, 7, 8, 9, 10, 11, 12], [13], [14, 15, 16, 17], [18]]),
    "mixed lengths": (
        40, [[1, 2, 3, 4], [5, 6, 7, 8], list(range(9, 22)), list(range(22, 35)), [35],
             [36], [37, 38]]),
    "leg + pendant": (3, [[1, 2], [3]]),
    "unvisited customers": (12, [[3, 7, 2], [5], [9, 10, 11, 12, 1]]),
    "pcvrp, 2 visited": (10, [[3], [5]]),
    "pcvrp, nothing visited": (6, []),
}


@pytest.mark.parametrize("name", list(OPEN_SPECIAL))
@pytest.mark.parametrize("k", [1, 3, 8, 50])
def test_open_special_graphs(name, k):
    n, routes = OPEN_SPECIAL[name]
    assert_open_eigenvectors(n, routes, open_pe(n, routes, k), k)


def test_open_random_solutions():
    # CVRP-20/50 and small instances, with single-customer routes and PCVRP skips;
    # k = 40 covers the whole spectrum of the small ones (λ >= 4 included).
    for i, (n, routes) in enumerate(random_cases(40, seed=1)):
        for k in (8, 40):
            assert_open_eigenvectors(n, routes, open_pe(n, routes, k, seed=i), k)


def test_open_equal_length_routes_random():
    # Many routes of one length: large degenerate eigenspaces (Helmert combinations).
    rng = random.Random(3)
    for _ in range(30):
        n, size = rng.randint(2, 40), rng.choice([1, 2, 3, 4, 7])
        nodes = list(range(1, n + 1))
        rng.shuffle(nodes)
        routes = [r for r in (nodes[i:i + size] for i in range(0, n, size)) if rng.random() < 0.9]
        for k in (5, 50):
            assert_open_eigenvectors(n, routes, open_pe(n, routes, k), k)


def mixed_batch(count: int, seed: int) -> tuple[Batch, list, torch.Tensor]:
    cases = random_cases(count, seed)
    datas = [solution(n, routes, seed=i) for i, (n, routes) in enumerate(cases)]
    flags = torch.tensor([i % 3 != 0 for i in range(count)])         # open and closed
    return Batch.from_data_list(datas), datas, flags


def test_mixed_batch_equals_one_by_one():
    batch, datas, flags = mixed_batch(15, seed=2)
    pe = laplacian_pe(batch.edge_index, batch.num_nodes, batch.batch, k=8, dtype=F64,
                      open_routes=flags)
    for i, data in enumerate(datas):
        one = laplacian_pe(data.edge_index, data.num_nodes, k=8, dtype=F64,
                           open_routes=bool(flags[i]))
        torch.testing.assert_close(pe[batch.ptr[i]:batch.ptr[i + 1]], one, atol=1e-10, rtol=0)
    # A RouteGraph that already says which graphs are open keeps it; float32 default.
    rg = route_graph(batch.edge_index, batch.num_nodes, batch.batch).with_open(flags)
    torch.testing.assert_close(laplacian_pe(rg, k=8, dtype=F64), pe, atol=0, rtol=0)
    f32 = laplacian_pe(rg, k=8)
    assert f32.dtype == torch.get_default_dtype()
    torch.testing.assert_close(f32, pe.to(f32.dtype), atol=1e-6, rtol=0)


def test_closed_graphs_unchanged():
    batch, datas, flags = mixed_batch(15, seed=4)
    args = (batch.edge_index, batch.num_nodes, batch.batch)
    ref = laplacian_pe(*args, k=8, dtype=F64)
    assert torch.equal(laplacian_pe(*args, k=8, dtype=F64, open_routes=False), ref)
    assert torch.equal(laplacian_pe(*args, k=8, dtype=F64, open_routes=torch.zeros_like(flags)),
                       ref)
    rg = route_graph(*args).with_open(flags)
    assert torch.equal(laplacian_pe(rg, k=8, dtype=F64, open_routes=False), ref)
    for data in datas:
        one = laplacian_pe(data.edge_index, data.num_nodes, k=8)
        assert torch.equal(laplacian_pe(data.edge_index, data.num_nodes, k=8, open_routes=False),
                           one)
    # Next to open graphs in a batch, closed ones change at most in the last bits (the
    # shared secular iteration count, as for any change of batch).
    mixed = laplacian_pe(*args, k=8, dtype=F64, open_routes=flags)
    closed = ~flags[batch.batch]
    torch.testing.assert_close(mixed[closed], ref[closed], atol=1e-12, rtol=0)
    assert not torch.allclose(mixed[~closed].abs(), ref[~closed].abs())  # open differs


def test_exact_path_near_four_matches_tables_on_open_legs():
    # The robust secular path (used only near / beyond λ = 4) must agree with the
    # table path where both apply: every secular vector of open graphs, λ < 4.
    batch, _, _ = mixed_batch(12, seed=6)
    rg = route_graph(batch.edge_index, batch.num_nodes, batch.batch).with_open(True)
    k = 12
    md = _Modes.of(rg, F64)
    kind, lam, step, coef = _spectrum(rg, md, k)
    sign = torch.ones(rg.num_graphs, k, dtype=F64)
    fast = _eigenvectors(rg, md, kind, lam, step, coef, sign)
    exact = _robust_secular(rg, md, lam, sign)
    sec = ((kind == 2) & (lam < 4 - 1e-3))[batch.batch]
    assert sec.sum() > 100
    torch.testing.assert_close(exact[sec], fast[sec], atol=1e-9, rtol=0)


def test_open_routes_needs_one_flag_per_graph():
    batch, _, _ = mixed_batch(3, seed=0)
    with pytest.raises(ValueError, match="one flag per graph"):
        laplacian_pe(batch.edge_index, batch.num_nodes, batch.batch,
                     open_routes=torch.tensor([True, False]))
