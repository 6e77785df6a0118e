"""Index-based node encodings (SIN, APE, RoPE, DACT CPE, CycleFormer PE), paper App. E."""

import math

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.data import PCVRPGenerator, RoutingData, TSPGenerator
from pyg_routing.errors import NoSolutionError
from pyg_routing.functional.index_pe import (
    cycleformer_pe,
    dact_cpe,
    gray_code,
    max_route_length,
    route_sizes,
    sinusoidal_pe,
)
from pyg_routing.functional.pair_pe import apply_rotary
from pyg_routing.models.pe import AbsolutePE, DACTCyclicPE, RotaryPE
from pyg_routing.transforms.cycleformer_pe import CycleFormerPE
from pyg_routing.transforms.dact_cpe import DACTCPE
from pyg_routing.transforms.sinusoidal_pe import SinusoidalPE
from tests.helpers import random_pcvrp_solutions

TRANSFORMS = [SinusoidalPE(8), CycleFormerPE(8), CycleFormerPE(8, variant="paper"),
              DACTCPE(8), DACTCPE(6, variant="paper")]


def _dact_reference(n: int, dim: int) -> np.ndarray:
    """DACT's cyclic pattern for ``n`` positions, channel by channel (loop form)."""
    half = dim // 2
    periods = np.floor(np.linspace(n ** (1 / half), n, half))
    table = np.zeros((n, dim))
    for c in range(dim):
        j = c // 3 * 3 + 1
        period = periods[j] if j < half else periods[-1]
        phase = 0.0 if c <= half else 2 * np.pi * (half - c) / half
        grid = np.arange(0, np.ceil(n / period) * period, 0.01)
        x = grid[np.linspace(0, len(grid), n, endpoint=False).astype(int)]
        wave = np.cos if c % 2 else np.sin
        table[:, c] = wave(2 * np.pi / period * np.abs(np.mod(x, 2 * period) - period) + phase)
    pooled = np.mean([np.roll(table, -o, axis=0) for o in range(-2, 3)], axis=0)
    return pooled - table.mean(0)


# ----------------------------------------------------------------------------- SIN
def test_sinusoidal_exact_values():
    pe = sinusoidal_pe(torch.tensor([0, 1, 2, -1]), 4)
    s = [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]
    s2 = [math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)]
    torch.testing.assert_close(pe, torch.tensor([[0, 1, 0, 1], s, s2, [0, 0, 0, 0]]))
    # base changes the frequencies: ω_1 = base^(-2/4)
    assert sinusoidal_pe(torch.tensor([3]), 4, base=100.0)[0, 2].item() == pytest.approx(
        math.sin(0.3))


@pytest.mark.parametrize("bad", [0, 1, 3, 7, -2])
def test_odd_or_tiny_dim_is_a_clear_error(bad):
    for make in (lambda: SinusoidalPE(bad), lambda: CycleFormerPE(bad), lambda: DACTCPE(bad),
                 lambda: RotaryPE(bad), lambda: sinusoidal_pe(torch.tensor([1]), bad)):
        with pytest.raises(ValueError, match=f"dim={bad}"):
            make()
    if bad < 1:
        with pytest.raises(ValueError, match=f"dim={bad}"):
            DACTCPE(bad, variant="paper")


def test_transform_stores_or_concatenates(small_cvrp):
    data = RoutingData.from_routes(small_cvrp, [[1, 2], [3, 4]])
    out = SinusoidalPE(4)(data.clone())
    torch.testing.assert_close(out.sin_pe, sinusoidal_pe(torch.tensor([0, 1, 2, 1, 2]), 4))
    cat = data.clone()
    cat.x = torch.ones(5, 3)
    cat = SinusoidalPE(4, attr_name=None)(cat)
    assert cat.x.shape == (5, 7) and torch.equal(cat.x[:, 3:], out.sin_pe)
    assert repr(SinusoidalPE(4)) == "SinusoidalPE(dim=4, base=10000, attr_name='sin_pe')"
    assert "variant='paper'" in repr(CycleFormerPE(4, variant="paper"))
    assert "variant='original'" in repr(DACTCPE(4))


@pytest.mark.parametrize("transform", TRANSFORMS, ids=repr)
def test_no_solution_is_a_typed_error(transform, small_cvrp):
    with pytest.raises(NoSolutionError):
        transform(small_cvrp.clone())


@pytest.mark.parametrize("transform", TRANSFORMS, ids=repr)
def test_batch_equals_one_by_one_and_never_nan(transform):
    one_route = RoutingData.from_routes(PCVRPGenerator(6, seed=3).sample(1)[0],
                                        [[3, 1, 2, 5, 4, 6]])
    single = RoutingData.from_routes(PCVRPGenerator(5, seed=1).sample(1)[0], [[2]])
    datas = [*random_pcvrp_solutions(4, 9), one_route, single]
    batch = transform(Batch.from_data_list([d.clone() for d in datas]))
    name = transform.attr_name
    alone = torch.cat([transform(d.clone())[name] for d in datas])
    torch.testing.assert_close(batch[name], alone)
    assert torch.isfinite(batch[name]).all()
    unvisited = batch.route_pos < 0
    assert unvisited.any() and batch[name][unvisited].eq(0).all()


@pytest.mark.parametrize("transform", TRANSFORMS, ids=repr)
def test_tsp_and_single_customer_routes(transform):
    tsp = RoutingData.from_routes(TSPGenerator(7, seed=3).sample(1)[0], [[3, 1, 2, 5, 4, 6]])
    out = transform(tsp)[transform.attr_name]
    assert out.shape == (7, transform.dim) and torch.isfinite(out).all()
    assert out[1:].ne(0).any(-1).all() or getattr(transform, "variant", "") == "paper"
    single = RoutingData.from_routes(PCVRPGenerator(3, seed=0).sample(1)[0], [[1], [2], [3]])
    assert torch.isfinite(transform(single)[transform.attr_name]).all()


# ----------------------------------------------------------------------------- route sizes
def test_route_sizes_flat_and_batched(small_cvrp):
    data = RoutingData.from_routes(small_cvrp, [[1, 2, 3], [4]])
    assert route_sizes(data.route_pos, data.route_id).tolist() == [3, 3, 3, 3, 1]
    batch = Batch.from_data_list(random_pcvrp_solutions(3, 8))
    got = route_sizes(batch.route_pos, batch.route_id, batch.batch)
    for g, d in enumerate(batch.to_data_list()):
        routes = d.routes()
        want = [max(map(len, routes))] + [0] * (d.num_nodes - 1)
        for r in routes:
            for v in r:
                want[v] = len(r)
        assert got[batch.batch == g].tolist() == want
    assert max_route_length(batch) == max_route_length(batch.to_data_list())
    with pytest.raises(NoSolutionError):
        max_route_length([small_cvrp])


# ----------------------------------------------------------------------------- CycleFormer
def test_cycleformer_exact_values():
    # original, D = 2: sin/cos(i + 2π i / (L + 1)); i = 1, L = 3 -> angle 1 + π/2
    pe = cycleformer_pe(torch.tensor([0, 1, -1]), torch.tensor([3, 3, 0]), 2)
    torch.testing.assert_close(pe, torch.tensor([[0.0, 1.0], [math.cos(1), -math.sin(1)],
                                                 [0.0, 0.0]]))
    # paper, D = 2: sin/cos(2π i / L); i = 1, L = 4 -> a quarter turn
    pe = cycleformer_pe(torch.tensor([1, 2]), torch.tensor([4, 4]), 2, variant="paper")
    torch.testing.assert_close(pe, torch.tensor([[1.0, 0.0], [0.0, -1.0]]), atol=1e-6, rtol=0)


def test_cycleformer_original_matches_its_tsp_table():
    n, dim = 11, 16                               # a TSP tour: depot + 10 cities
    p = torch.arange(n, dtype=torch.float64)
    got = cycleformer_pe(p.long(), torch.full((n,), n - 1), dim, dtype=torch.float64)
    div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * -(math.log(1e4) / dim))
    angle = p[:, None] * div + 2 * math.pi * p[:, None] / n
    want = torch.stack([angle.sin(), angle.cos()], -1).flatten(1)
    torch.testing.assert_close(got, want)


def test_cycleformer_circularity_claims():
    size = torch.full((6,), 5)
    # original: the added phase turns exactly once per tour: PE(n) == SIN(n)
    n = torch.tensor([6])
    torch.testing.assert_close(cycleformer_pe(n, size[:1], 8), sinusoidal_pe(n, 8))
    # paper: the k = 0 pair is periodic with period L
    i = torch.arange(6)
    pe, shifted = (cycleformer_pe(x, size, 8, variant="paper") for x in (i, i + 5))
    torch.testing.assert_close(pe[:, :2], shifted[:, :2], atol=1e-5, rtol=0)
    assert not torch.allclose(pe[:, 2:], shifted[:, 2:], atol=1e-3)


# ----------------------------------------------------------------------------- DACT
def test_dact_original_hand_computed_single_customer_route():
    # n = 2 (depot + 1 customer), D = 2: raw cos column [1, -1], pooled over p-2..p+2
    pe = dact_cpe(torch.tensor([0, 1]), torch.tensor([1, 1]), 2, dtype=torch.float64)
    torch.testing.assert_close(pe, torch.tensor([[0.0, 0.2], [0.0, -0.2]], dtype=torch.float64),
                               atol=1e-12, rtol=0)


@pytest.mark.parametrize("n,dim", [(2, 4), (5, 8), (21, 16), (51, 128), (101, 64)])
def test_dact_original_matches_the_reference_pattern(n, dim):
    got = dact_cpe(torch.arange(n), torch.full((n,), n - 1), dim, dtype=torch.float64)
    torch.testing.assert_close(got, torch.from_numpy(_dact_reference(n, dim)), atol=1e-9, rtol=0)


def test_dact_original_wraps_and_mixes_route_sizes():
    pos = torch.tensor([0, 1, 2, 3, 4, 1, 2, 5, -1])
    size = torch.tensor([4, 4, 4, 4, 4, 2, 2, 4, 0])
    pe = dact_cpe(pos, size, 8, dtype=torch.float64)
    torch.testing.assert_close(pe[7], pe[0])              # i = L + 1 is the depot again
    torch.testing.assert_close(pe[:5], torch.from_numpy(_dact_reference(5, 8)))
    torch.testing.assert_close(pe[5:7], torch.from_numpy(_dact_reference(3, 8))[1:])
    assert pe[8].eq(0).all()


def test_dact_paper_gray_code():
    bits = gray_code(torch.tensor([0, 1, 2, 3, 4, 5, -1]), torch.full((7,), 5), 3)
    # i mod 5 = 0,1,2,3,4,0 -> Gray 0,1,3,2,6,0 (least significant bit first)
    assert bits.tolist() == [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 1, 1], [0, 0, 0],
                             [0, 0, 0]]
    cyc = gray_code(torch.arange(9), torch.full((9,), 8), 4)   # L = 8: one bit per step
    assert ((cyc[1:] - cyc[:-1]).abs().sum(-1) == 1).all()
    assert torch.equal(dact_cpe(torch.arange(9), torch.full((9,), 8), 4, "paper"), cyc)
    with pytest.raises(ValueError, match="num_bits=2"):
        gray_code(torch.tensor([4]), torch.tensor([9]), 2)


def test_dact_module_variants_and_gradients():
    pos, size = torch.tensor([0, 1, 2, 3, -1]), torch.tensor([3, 3, 3, 3, 0])
    orig = DACTCyclicPE(8)
    torch.testing.assert_close(orig(pos, size), dact_cpe(pos, size, 8))
    assert list(orig.parameters()) == []
    paper = DACTCyclicPE(16, variant="paper", num_bits=4)
    out = paper(pos, size)
    assert out.shape == (5, 16)
    out.sum().backward()
    assert paper.proj.weight.grad is not None and paper.proj.weight.grad.abs().sum() > 0
    assert repr(paper) == "DACTCyclicPE(dim=16, variant='paper', num_bits=4)"


# ----------------------------------------------------------------------------- APE
def test_ape_lookup_limits_and_gradients():
    ape = AbsolutePE(4, max_len=3)
    pos = torch.tensor([[0, 1, 3, -1]])
    out = ape(pos)
    assert out.shape == (1, 4, 4)
    torch.testing.assert_close(out[0, :3], ape.embedding.weight[[0, 1, 3]])
    assert out[0, 3].eq(0).all()
    out.sum().backward()
    assert ape.embedding.weight.grad[[0, 1, 3]].ne(0).all()
    assert ape.embedding.weight.grad[2].eq(0).all()
    with pytest.raises(ValueError, match="position 4 is above max_len=3"):
        ape(torch.tensor([4]))
    torch.testing.assert_close(AbsolutePE(4, 3, clamp=True)(torch.tensor([7])).shape,
                               torch.Size([1, 4]))
    with pytest.raises(ValueError, match="dim=0"):
        AbsolutePE(0, 3)
    assert repr(ape) == "AbsolutePE(dim=4, max_len=3)"


def test_ape_from_data_reads_the_longest_route():
    datas = random_pcvrp_solutions(3, 10)
    longest = max(len(r) for d in datas for r in d.routes())
    ape = AbsolutePE.from_data(datas, 8)
    assert ape.max_len == longest
    batch = Batch.from_data_list(datas)
    assert ape(batch.route_pos).shape == (batch.num_nodes, 8)
    old = ape.embedding.weight.detach().clone()
    ape.reset_parameters()
    assert not torch.equal(old, ape.embedding.weight)


# ----------------------------------------------------------------------------- RoPE
def test_rope_logits_depend_only_on_the_offset():
    torch.manual_seed(0)
    b, h, n, d = 2, 3, 6, 8
    q, k = torch.randn(b, h, n, d, dtype=torch.float64), torch.randn(b, h, n, d,
                                                                      dtype=torch.float64)
    pos = torch.randint(0, 20, (b, n))
    rope = RotaryPE(d)
    logits = torch.einsum("bhid,bhjd->bhij", *rope(q, k, pos))
    shifted = torch.einsum("bhid,bhjd->bhij", *rope(q, k, pos + 7))
    torch.testing.assert_close(logits, shifted)
    # a single pair rotated by θ = i (k = 0): [1, 0] -> [cos i, sin i]
    one = torch.tensor([[[[1.0, 0.0]]]])
    qr, _ = apply_rotary(one, one, torch.tensor([[2]]))
    torch.testing.assert_close(qr.flatten(), torch.tensor([math.cos(2), math.sin(2)]))
    # norms are kept; negative (unvisited) positions are not rotated
    qr, kr = rope(q, k, pos)
    torch.testing.assert_close(qr.norm(dim=-1), q.norm(dim=-1))
    qn, _ = rope(q, k, torch.full((b, n), -1))
    torch.testing.assert_close(qn, q)
    with pytest.raises(ValueError, match="head dim"):
        rope(q[..., :4], k[..., :4], pos)
    assert repr(rope) == "RotaryPE(head_dim=8, base=10000)"
