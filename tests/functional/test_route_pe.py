"""IPE / XPE / IPEXPE: exact values and the properties the paper states."""

import math

import pytest
import torch
import torch_geometric.transforms as T
from torch_geometric.data import Batch

from pyg_routing.data import CVRPGenerator, RoutingData, VRPTWGenerator
from pyg_routing.functional.route_pe import ipe, ipe_amplitudes, ipexpe, xpe
from pyg_routing.options import AMPLITUDES
from pyg_routing.transforms.ipe import IPE
from pyg_routing.transforms.ipexpe import IPEXPE
from pyg_routing.transforms.xpe import XPE


def test_ipe_exact_values(small_cvrp):
    data = RoutingData.from_routes(small_cvrp, [[1, 2], [3, 4]])  # lengths 4 and 6
    flat = ipe(data.cum_dist, data.route_length, dim=3, direction="invariant", amplitude="flat")
    # node 1: d̂ = 2π·1/4 = π/2 → cos(π/2), cos(π), cos(3π/2)
    torch.testing.assert_close(flat[1], torch.tensor([0.0, -1.0, 0.0]), atol=1e-6, rtol=0)
    # the default scales frequency k by 1/k²
    inv = ipe(data.cum_dist, data.route_length, dim=3, direction="invariant")
    torch.testing.assert_close(inv[1], torch.tensor([0.0, -1 / 4, 0.0]), atol=1e-6, rtol=0)
    inverse = ipe(data.cum_dist, data.route_length, dim=3, direction="invariant",
                  amplitude="inverse")
    torch.testing.assert_close(inverse[1], torch.tensor([0.0, -1 / 2, 0.0]), atol=1e-6, rtol=0)
    aware = ipe(data.cum_dist, data.route_length, dim=4, direction="aware")
    d = 2 * math.pi * 3 / 6  # node 4: d_i = 3, d_L = 6
    expected = torch.tensor([math.sin(d), math.cos(d), math.sin(2 * d) / 4, math.cos(2 * d) / 4])
    torch.testing.assert_close(aware[4], expected, atol=1e-6, rtol=0)
    # The depot has phase 0.
    torch.testing.assert_close(aware[0], torch.tensor([0.0, 1.0, 0.0, 0.25]))
    torch.testing.assert_close(ipe_amplitudes(3, "inverse"), torch.tensor([1, 1 / 2, 1 / 3]))
    with pytest.raises(ValueError, match="unknown amplitude 'loud'"):
        ipe_amplitudes(3, "loud")


def test_geometric_frequencies_follow_the_printed_formula():
    out = ipe(torch.tensor([1.0]), torch.tensor([4.0]), dim=4, direction="aware",
              frequencies="geometric", base=100.0, amplitude="flat")
    w = [1.0, 100.0 ** (-2 / 4)]
    d = math.pi / 2
    expected = [math.sin(w[0] * d), math.cos(w[0] * d), math.sin(w[1] * d), math.cos(w[1] * d)]
    torch.testing.assert_close(out[0], torch.tensor(expected), atol=1e-6, rtol=0)


@pytest.mark.parametrize("amplitude", list(AMPLITUDES))
@pytest.mark.parametrize("direction", ["aware", "invariant"])
def test_harmonic_ipe_is_circular_and_geometric_is_not(direction, amplitude):
    length = torch.tensor([3.7, 3.7])
    ends = torch.tensor([0.0, 3.7])           # leaving the depot, arriving back at it
    harmonic = ipe(ends, length, dim=16, direction=direction, amplitude=amplitude)
    torch.testing.assert_close(harmonic[0], harmonic[1], atol=1e-5, rtol=0)
    geometric = ipe(ends, length, dim=16, direction=direction, frequencies="geometric",
                    amplitude=amplitude)
    assert (geometric[0] - geometric[1]).abs().max() > 0.1


@pytest.mark.parametrize("amplitude", ["inverse_square", "inverse"])
def test_decaying_amplitudes_make_code_distance_follow_route_distance(amplitude):
    """Direction-aware, harmonic: ‖IPE(a) - IPE(b)‖ grows with the circular phase gap
    (exactly, in the limit of many channels); flat amplitudes saturate at once."""
    gap = torch.linspace(0, math.pi, 50)
    length = torch.full((50,), 2 * math.pi)
    zero = ipe(torch.zeros(50), length, dim=512, direction="aware", amplitude=amplitude)
    moved = ipe(gap, length, dim=512, direction="aware", amplitude=amplitude)
    dist = (moved - zero).norm(dim=-1)
    assert (dist.diff() > 0).all()
    back = ipe(2 * math.pi - gap, length, dim=512, direction="aware", amplitude=amplitude)
    torch.testing.assert_close((back - zero).norm(dim=-1), dist, atol=1e-4, rtol=0)
    if amplitude == "inverse":   # Σ 2(1 - cos kΔ)/k² = πΔ - Δ²/2 on [0, 2π]
        exact = (math.pi * gap - gap ** 2 / 2).sqrt()
        torch.testing.assert_close(dist, exact, atol=2e-2, rtol=0)
    flat = ipe(gap, length, dim=512, direction="aware", amplitude="flat")
    flat_zero = ipe(torch.zeros(50), length, dim=512, direction="aware", amplitude="flat")
    far = (flat - flat_zero).norm(dim=-1)[5:]
    assert far.max() - far.min() < 0.1 * far.mean()          # flat: no sense of distance


@pytest.mark.parametrize("amplitude", list(AMPLITUDES))
def test_reversal_invariance_and_awareness(amplitude):
    inst = CVRPGenerator(12, seed=2, capacity=100).sample(1)[0]
    route = [5, 2, 9, 1, 12, 7]
    fwd = RoutingData.from_routes(inst, [route, [v for v in range(1, 13) if v not in route]])
    bwd = RoutingData.from_routes(inst, [route[::-1], [v for v in range(1, 13)
                                                       if v not in route]])
    f_inv = ipe(fwd.cum_dist, fwd.route_length, 32, "invariant", amplitude=amplitude)
    b_inv = ipe(bwd.cum_dist, bwd.route_length, 32, "invariant", amplitude=amplitude)
    # float32 phases times frequencies up to 32: agreement to ~1e-5 of a period.
    torch.testing.assert_close(f_inv, b_inv, atol=1e-4, rtol=0)
    f_aw = ipe(fwd.cum_dist, fwd.route_length, 32, "aware", amplitude=amplitude)
    b_aw = ipe(bwd.cum_dist, bwd.route_length, 32, "aware", amplitude=amplitude)
    torch.testing.assert_close(f_aw[route, 0::2], -b_aw[route, 0::2], atol=1e-4, rtol=0)
    torch.testing.assert_close(f_aw[route, 1::2], b_aw[route, 1::2], atol=1e-4, rtol=0)
    assert (f_aw[route] - b_aw[route]).abs().max() > 0.05
    # The paper's literal frequencies break reversal invariance.
    g_f = ipe(fwd.cum_dist, fwd.route_length, 32, "invariant", "geometric")
    g_b = ipe(bwd.cum_dist, bwd.route_length, 32, "invariant", "geometric")
    assert (g_f - g_b).abs().max() > 1e-2


def test_xpe_values_and_rotation_equivariance():
    theta = torch.tensor([0.0, 0.3, -2.0, 3.0])
    out = xpe(theta, num_bands=3, dim=8, depot_mask=torch.tensor([True, False, False, False]))
    assert out.shape == (4, 8)
    assert out[0].abs().sum() == 0 and out[:, 6:].abs().sum() == 0
    k2 = 4 * 0.3
    torch.testing.assert_close(out[1, 4:6], torch.tensor([math.sin(k2), math.cos(k2)]))
    # Rotating the instance about the depot rotates every band by 2^k·α: the
    # angle differences between nodes (band-wise dot products) are unchanged.
    inst = CVRPGenerator(20, seed=0).sample(1)[0]
    alpha = 0.7
    rot = torch.tensor([[math.cos(alpha), -math.sin(alpha)], [math.sin(alpha), math.cos(alpha)]])
    moved = inst.pos[0] + (inst.pos - inst.pos[0]) @ rot.T
    turned = RoutingData.from_instance("cvrp", moved, demand=inst.demand, capacity=inst.capacity)
    a = xpe(inst.depot_angle, 4).view(-1, 4, 2)[1:]
    b = xpe(turned.depot_angle, 4).view(-1, 4, 2)[1:]
    gram_a = torch.einsum("ikc,jkc->kij", a, a)
    gram_b = torch.einsum("ikc,jkc->kij", b, b)
    torch.testing.assert_close(gram_a, gram_b, atol=1e-4, rtol=0)
    assert (a - b).abs().max() > 0.1


def test_transforms_shapes_batching_and_no_mutation():
    inst = VRPTWGenerator(10, seed=1, capacity=100).sample(2)
    datas = [RoutingData.from_routes(inst[i], [[v] for v in range(1, 11)]) for i in range(2)]
    before = datas[0].to_dict().keys()
    out = T.Compose([IPEXPE(dim=64, num_bands=4)])(datas[0])
    assert out.pe.shape == (11, 72)
    assert "pe" not in datas[0] and datas[0].to_dict().keys() == before
    for amplitude in AMPLITUDES:                     # batch = one by one, every schedule
        t = IPEXPE(dim=16, num_bands=2, amplitude=amplitude)
        batch = t(Batch.from_data_list(datas))
        torch.testing.assert_close(batch.pe, torch.cat([t(d).pe for d in datas]))
    # attr_name=None concatenates onto x.
    with_x = IPE(dim=8, attr_name=None)(XPE(attr_name=None)(datas[0]))
    assert with_x.x.shape == (11, 16)


def test_auto_direction_follows_the_problem():
    cvrp = CVRPGenerator(6, seed=0).sample(1)[0]
    vrptw = VRPTWGenerator(6, seed=0, capacity=100).sample(1)[0]
    routes = [[1, 2, 3], [4, 5, 6]]
    a = RoutingData.from_routes(cvrp, routes)
    b = RoutingData.from_routes(vrptw, [[v] for v in range(1, 7)])
    torch.testing.assert_close(IPE(8).encode(a), ipe(a.cum_dist, a.route_length, 8, "invariant"))
    torch.testing.assert_close(IPE(8).encode(b), ipe(b.cum_dist, b.route_length, 8, "aware"))
    mixed = IPE(8).encode(Batch.from_data_list([a, b]))
    torch.testing.assert_close(mixed, torch.cat([IPE(8).encode(a), IPE(8).encode(b)]))


def test_degenerate_inputs_never_give_nan():
    pos = torch.tensor([[0.5, 0.5], [0.5, 0.5], [0.9, 0.1], [0.1, 0.9]])
    inst = RoutingData.from_instance("cvrp", pos, demand=[0, 1, 1, 1], capacity=5)
    data = RoutingData.from_routes(inst, [[1], [2, 3]])   # route 0 has length 0
    pe = IPEXPE(dim=8, num_bands=2).encode(data)
    assert torch.isfinite(pe).all()
    torch.testing.assert_close(pe[1, :8], ipe_amplitudes(8))   # phase 0: cos = 1
    assert data.depot_angle[1] == 0                        # customer on the depot: θ = 0
    tsp = RoutingData.from_routes(RoutingData.from_instance("tsp", torch.rand(5, 2)),
                                  [[1, 2, 3, 4]])
    assert torch.isfinite(IPEXPE(dim=8).encode(tsp)).all()


def test_unvisited_customers_get_a_zero_ipe():
    from pyg_routing.data import PCVRPGenerator
    inst = PCVRPGenerator(5, seed=0, kappa=1.0).sample(1)[0]
    data = RoutingData.from_routes(inst, [[2, 4]])
    pe = ipexpe(data.cum_dist, data.route_length, data.depot_angle, dim=6, num_bands=2,
                route_pos=data.route_pos, depot_mask=data.depot_mask)
    assert pe[[1, 3, 5], :6].abs().sum() == 0
    assert pe[[1, 3, 5], 6:].abs().sum() > 0              # XPE still knows the angle


@pytest.mark.parametrize("kwargs, match", [
    (dict(dim=8, amplitude="loud"), "unknown amplitude 'loud'"),
    (dict(dim=7, direction="aware"), "even dim"),
    (dict(dim=7), "even dim"),
    (dict(dim=8, frequencies="linear"), "unknown frequencies"),
    (dict(dim=8, direction="both"), "unknown direction"),
])
def test_bad_ipe_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        IPE(**kwargs)


def test_bad_xpe_arguments():
    with pytest.raises(ValueError, match="needs dim >= 8"):
        XPE(num_bands=4, dim=6)
    with pytest.raises(ValueError, match="num_bands >= 1"):
        XPE(num_bands=0)
