"""The encoding seam: the search loop's node code is the transform's, node for node."""

import pytest
import torch

from pyg_routing import encodings
from pyg_routing.data import CVRPGenerator, RoutingData, VRPTWGenerator
from pyg_routing.envs.two_opt import action_mask, observe, reset, step, to_routes
from pyg_routing.models import DACTPolicy, GPSEncoder

NODE_CODES = ["sin", "cycleformer", "dact_cpe", "ipe", "xpe", "ipexpe", "rwse"]


@pytest.mark.parametrize("problem", ["cvrp", "vrptw"])
@pytest.mark.parametrize("pe", NODE_CODES)
def test_observation_code_equals_the_transform_on_the_same_solutions(pe, problem):
    gen = CVRPGenerator(12, seed=5) if problem == "cvrp" else VRPTWGenerator(10, seed=5)
    inst = gen.sample(3)
    state = reset(inst, init="nearest_neighbor")
    a = torch.tensor([[state.num_depots, state.num_depots + 3]] * 3)
    ok = action_mask(state)[torch.arange(3), a[:, 0], a[:, 1]].unsqueeze(1)
    state, _ = step(state, torch.where(ok, a, torch.zeros_like(a)))
    pol = DACTPolicy.build(problem, pe=pe, dim=16, heads=2, num_layers=1, pe_dim=8)
    code = pol.prepare(observe(state)).pe                                       # [B, M, W]
    assert code.shape[-1] == pol.encoder.positional.node_pe.width == pol.encoder.pe_width
    k = state.num_depots
    transform = encodings.node_transform(pe, dim=8, num_bands=4, attr_name=None)
    for i, routes in enumerate(to_routes(state, best=False)):
        ref = transform.encode(RoutingData.from_routes(inst[i], routes)).to(code.dtype)
        torch.testing.assert_close(code[i, k:], ref[1:], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(code[i, :k], ref[:1].expand(k, -1), atol=1e-5, rtol=1e-5)


def test_a_precomputed_code_of_another_width_is_refused_with_the_width_to_pass():
    inst = CVRPGenerator(10, seed=0).sample(2)
    data = RoutingData.from_routes(inst[0], [list(range(1, 11))])
    enc = GPSEncoder(2, 16, 2, 1, pe="ipexpe", pe_dim=8, num_bands=4)         # 8 + 8
    data.pe = torch.zeros(data.num_nodes, 72)                 # IPEXPE(dim=64, num_bands=4)
    with pytest.raises(ValueError, match=r"batch.pe has 72 channels.*16 channels"):
        enc(data)
    with pytest.raises(ValueError, match=r"^pe has 72 channels"):
        enc.forward_dense(data.pos.unsqueeze(0), data.edge_index,
                          pe=torch.zeros(1, data.num_nodes, 72))
    data.pe = torch.zeros(data.num_nodes, 16)
    assert enc(data).shape == (data.num_nodes, 16)


def test_the_encoder_switches_the_laplacian_sign_flips_with_its_mode():
    enc = GPSEncoder(2, 16, 2, 1, pe="lap")
    assert enc.positional.node_pe.training
    enc.eval()
    assert not enc.positional.node_pe.training
    enc.train()
    assert enc.positional.node_pe.training


#: the ablation variants of IPE and XPE (paper Tabs. 8 and 9), as transform options
VARIANTS = [("ipe", {"phase": "index"}), ("ipexpe", {"phase": "index", "aggregation": "mean"}),
            *[("xpe", {"aggregation": a}) for a in ("circular_mean", "demand_mean", "median",
                                                     "midpoint")]]


@pytest.mark.parametrize("problem", ["cvrp", "vrptw"])
@pytest.mark.parametrize("pe,options", VARIANTS)
def test_the_ablation_variants_search_code_equals_their_transform(pe, options, problem):
    gen = CVRPGenerator(12, seed=6) if problem == "cvrp" else VRPTWGenerator(10, seed=6)
    inst = gen.sample(3)
    state = reset(inst, init="nearest_neighbor")
    pol = DACTPolicy.build(problem, pe=pe, dim=16, heads=2, num_layers=1, pe_dim=8, **options)
    code = pol.prepare(observe(state)).pe
    k = state.num_depots
    transform = encodings.node_transform(pe, dim=8, num_bands=4, attr_name=None, **options)
    for i, routes in enumerate(to_routes(state, best=False)):
        ref = transform.encode(RoutingData.from_routes(inst[i], routes)).to(code.dtype)
        torch.testing.assert_close(code[i, k:], ref[1:], atol=1e-5, rtol=1e-5)
