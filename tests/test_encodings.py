import pytest
import torch

from pyg_routing import encodings
from pyg_routing.models.pe import encoding_module
from tests.helpers import fixed_route_batch

NAMES = ["none", "ape", "sin", "rope", "rpe", "alibi", "lap", "rwse", "spd", "dact_cpe",
         "cycleformer", "ipe", "xpe", "ipexpe"]


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
    batch = fixed_route_batch()
    out = encodings.node_transform(name, dim=16, attr_name="pe")(batch)
    assert out.pe.shape[0] == batch.num_nodes and torch.isfinite(out.pe).all()


@pytest.mark.parametrize("name", ["ape", "rope", "rpe", "alibi", "spd"])
def test_learnable_rotary_and_bias_encodings_build_modules(name):
    mod = encoding_module(name, dim=16, num_heads=4)
    assert isinstance(mod, torch.nn.Module)
    with pytest.raises(ValueError, match="has no module"):
        encoding_module("ipe")
    with pytest.raises(ValueError, match="node transforms exist for"):
        encodings.node_transform("alibi")


