import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing import encodings
from pyg_routing.data import CVRPGenerator, RoutingData
from pyg_routing.probes.spearman import spearman_probe

NAMES = ["none", "ape", "sin", "rope", "rpe", "alibi", "lap", "rwse", "spd", "dact_cpe",
         "cycleformer", "ipe", "xpe", "ipexpe"]


def _batch(num=3, n=12):
    inst = CVRPGenerator(n, seed=0).sample(num)
    routes = [[1, 2, 3, 4], [5, 6, 7], [8], [9, 10, 11, 12]]
    return Batch.from_data_list([RoutingData.from_routes(inst[i], routes) for i in range(num)])


def test_the_fourteen_names_and_their_kinds():
    avail = encodings.available()
    assert list(avail) == NAMES
    assert {k for k, v in avail.items() if v == "bias"} == {"rpe", "alibi", "spd"}
    assert avail["rope"] == "rotary" and avail["none"] == "none"
    assert encodings.info("IPEXPE").title == "IPE + XPE"
    with pytest.raises(ValueError, match="unknown encoding 'foo'; valid encodings: none, ape"):
        encodings.info("foo")


@pytest.mark.parametrize("name", [n for n in NAMES if encodings.available()[n] == "node"
                                  and n != "ape"])
def test_every_fixed_node_encoding_builds_a_transform(name):
    batch = _batch()
    out = encodings.node_transform(name, dim=16, attr_name="pe")(batch)
    assert out.pe.shape[0] == batch.num_nodes and torch.isfinite(out.pe).all()


@pytest.mark.parametrize("name", ["ape", "rope", "rpe", "alibi", "spd"])
def test_learnable_rotary_and_bias_encodings_build_modules(name):
    mod = encodings.module(name, dim=16, num_heads=4)
    assert isinstance(mod, torch.nn.Module)
    with pytest.raises(ValueError, match="has no module"):
        encodings.module("ipe")
    with pytest.raises(ValueError, match="node transforms exist for"):
        encodings.node_transform("alibi")


def test_probe_representations_cover_the_paper_table():
    reps = encodings.probe_representations(dim=16)
    assert len(reps) == 13   # the 14 names without NoPE
    result = spearman_probe(_batch(num=4), reps, num_pairs=2000, seed=0)
    for name, row in result.items():
        for key in ("D1", "D2", "D3"):
            assert row[key] is None or -1.0 <= row[key] <= 1.0, (name, key)
    # Distance-aware encodings track the travel-distance gap within routes.
    assert result["SPD"]["D1"] > 0.3
    assert result["XPE"]["D3"] > 0
