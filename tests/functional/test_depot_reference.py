"""XPE's reference points on multi-depot solutions: node 0, the route's own depot, the
route's depot plus a code of which depot. Exact angles against a per-node loop, the
one-depot case equal to the paper's XPE bit for bit, batch equals one by one."""

from __future__ import annotations

import math

import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.data import RoutingData, make_generator
from pyg_routing.transforms import IPEXPE, XPE
from pyg_routing.transforms._base import EncodingInputs


def _solution(k: int = 3, n: int = 9, seed: int = 0) -> RoutingData:
    inst = make_generator("cvrp", n, seed=seed, depots=k).sample(1)[0]
    customers = list(range(k, n + k))
    routes = [customers[i::3] for i in range(3)]
    return RoutingData.from_routes(inst, routes, [r % k for r in range(3)])


def _angle(a, b) -> float:
    return math.atan2(float(b[1] - a[1]), float(b[0] - a[0]))


def test_route_reference_is_the_angle_about_each_routes_own_depot():
    sol = _solution()
    code = XPE(num_bands=1, reference="route")(sol.clone()).xpe         # [sin θ, cos θ]
    for v in range(3, sol.num_nodes):
        home = int(sol.route_depot[int(sol.route_id[v])])
        theta = _angle(sol.pos[home], sol.pos[v])
        assert code[v].tolist() == pytest.approx([math.sin(theta), math.cos(theta)], abs=1e-6)
    assert torch.equal(code[:3], torch.zeros(3, 2))
    first = XPE(num_bands=1)(sol.clone()).xpe
    v = int((sol.route_depot[sol.route_id.clamp(min=0)] != 0).nonzero()[-1])   # depot != 0
    assert not torch.allclose(first[v], code[v])


def test_the_depot_code_tells_the_depots_apart_by_their_angle_about_the_centroid():
    sol = _solution(k=3)
    code = XPE(num_bands=1, reference="route_code")(sol.clone()).xpe
    assert code.shape == (sol.num_nodes, 4)
    centre = sol.pos[:3].mean(0)
    for v in range(3, sol.num_nodes):
        home = int(sol.route_depot[int(sol.route_id[v])])
        phi = _angle(centre, sol.pos[home])
        assert code[v, 2:].tolist() == pytest.approx([math.sin(phi), math.cos(phi)], abs=1e-6)
    assert torch.equal(code[:3], torch.zeros(3, 4))
    route = XPE(num_bands=1, reference="route")(sol.clone()).xpe
    assert torch.equal(code[:, :2], route)


def test_one_depot_gives_the_papers_xpe_under_every_reference():
    inst = make_generator("cvrp", 12, seed=1).sample(1)[0]
    sol = RoutingData.from_routes(inst, [list(range(1, 7)), list(range(7, 13))])
    paper = IPEXPE()(sol.clone()).pe
    assert torch.equal(IPEXPE(reference="route")(sol.clone()).pe, paper)
    coded = IPEXPE(reference="route_code")(sol.clone()).pe
    assert torch.equal(coded[:, :paper.size(1)], paper)
    assert torch.equal(coded[:, paper.size(1):], torch.zeros(13, 8))
    # no solution yet: every customer takes node 0 as its depot
    assert torch.equal(XPE(reference="route")(inst.clone()).xpe, XPE()(inst.clone()).xpe)


def test_a_batch_mixing_depot_counts_equals_its_instances_one_by_one():
    inst = make_generator("cvrp", 6, seed=2).sample(1)[0]
    single = RoutingData.from_routes(inst, [[1, 2, 3], [4, 5, 6]])
    parts = [_solution(k=2, n=8, seed=3), single, _solution(k=3, n=9, seed=4)]
    for ref in ("route", "route_code"):
        t = IPEXPE(reference=ref)
        batch = t.code(EncodingInputs.from_data(Batch.from_data_list(parts)))
        one = torch.cat([t.code(EncodingInputs.from_data(p)) for p in parts])
        assert torch.allclose(batch, one, atol=1e-6), ref


def test_unknown_reference_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown XPE reference 'nearest'; choose from"):
        XPE(reference="nearest")
    assert "reference='route_code'" in repr(IPEXPE(reference="route_code"))
    assert XPE(num_bands=4, reference="route_code").width == 16
