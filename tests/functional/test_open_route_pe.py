"""IPE on open routes (half-period phase) and on explicit matrices (cumulative cost),
in the functional, the transforms and the search states of DACT and NDS."""

import math

import pytest
import torch

from pyg_routing import encodings
from pyg_routing.data import RoutingData, make_generator
from pyg_routing.envs.two_opt import observe, reset, to_routes
from pyg_routing.functional import ipe
from pyg_routing.functional.route_pe import index_ipe, ipe_phase
from pyg_routing.models import DACTPolicy


def test_open_phase_is_half_a_period():
    cum = torch.tensor([0.0, 1.0, 3.0, 4.0])
    length = torch.tensor([0.0, 4.0, 4.0, 4.0])
    opened = torch.tensor([True, True, True, True])
    assert torch.allclose(ipe_phase(cum, length, opened),
                          torch.tensor([0.0, math.pi / 4, 3 * math.pi / 4, math.pi]))
    assert torch.allclose(ipe_phase(cum, length), 2 * ipe_phase(cum, length, opened))
    assert torch.equal(ipe_phase(cum, length, ~opened), ipe_phase(cum, length))
    code = ipe(cum, length, dim=6, direction="aware", open_route=opened, amplitude="flat")
    k = torch.arange(1, 4, dtype=torch.float32)
    expect = torch.stack([torch.sin(k * math.pi), torch.cos(k * math.pi)], -1).flatten()
    assert torch.allclose(code[3], expect, atol=1e-6)
    # the last customer is no longer coded as the depot
    closed = ipe(cum, length, dim=6, direction="aware", amplitude="flat")
    assert torch.allclose(closed[3], closed[0], atol=1e-6)
    assert not torch.allclose(code[3], code[0], atol=1e-3)


def test_open_index_phase_counts_no_return_arc():
    pos = torch.tensor([0, 1, 2, 3])
    size = torch.tensor([3, 3, 3, 3])
    opened = torch.ones(4, dtype=torch.bool)
    code = index_ipe(pos, size, dim=4, direction="aware", open_route=opened, amplitude="flat")
    ref = ipe(pos.float(), torch.full((4,), 3.0), dim=4, direction="aware", amplitude="flat",
              open_route=opened)
    assert torch.allclose(code, ref)                        # phase pi * i / n: last at pi


@pytest.mark.parametrize("pe", ["ipe", "ipexpe"])
@pytest.mark.parametrize("kw", [dict(open_routes=True), dict(costs="streets", grid=5),
                                dict(costs="streets", grid=5, open_routes=True)])
def test_dact_search_code_equals_the_transform_on_open_and_matrix_instances(pe, kw):
    inst = make_generator("cvrp", 12, seed=5, **kw).sample(3)
    state = reset(inst, init="nearest_neighbor")
    pol = DACTPolicy.build("cvrp", pe=pe, dim=16, heads=2, num_layers=1, pe_dim=8)
    code = pol.prepare(observe(state)).pe
    k = state.num_depots
    transform = encodings.node_transform(pe, dim=8, num_bands=4, attr_name=None)
    for i, routes in enumerate(to_routes(state, best=False)):
        data = RoutingData.from_routes(inst[i], routes)
        ref = transform.encode(data).to(code.dtype)
        torch.testing.assert_close(code[i, k:], ref[1:], atol=1e-5, rtol=1e-5)
        # d_L is the route's cost: the last customer's d_i plus the return (0 if open)
        m = data.cost_matrix
        for route in routes:
            end = route[-1]
            back = 0.0 if kw.get("open_routes") else float(m[end, 0])
            assert float(data.route_length[end]) == pytest.approx(
                float(data.cum_dist[end]) + back, rel=1e-5)


def test_nds_observation_follows_the_matrix_and_open_routes():
    from pyg_routing.envs.deconstruction.env import DeconstructionEnv
    from pyg_routing.envs.deconstruction.observation import NDSFeatures
    from pyg_routing.envs.deconstruction.observation import observe as nds_observe

    for kw in (dict(costs="streets", grid=5), dict(open_routes=True)):
        inst = make_generator("cvrp", 12, seed=0, **kw).sample(3)
        batch = DeconstructionEnv().reset(inst, rng=0)
        obs = nds_observe(batch.state, NDSFeatures.from_instances(inst))
        inputs = obs.encoding_inputs(torch.float32)
        assert inputs.direction_sensitive.all()
        assert (inputs.open_routes is not None) == ("open_routes" in kw)
        for slot in range(3):
            rid, length = obs.route_id[slot], obs.route_length[slot]
            total = sum(float(length[rid == r][0]) for r in rid.unique() if r >= 0)
            assert total == pytest.approx(float(batch.state.cost[slot]), rel=1e-5)
