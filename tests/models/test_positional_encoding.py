"""The encoding built once and injected: one :class:`PositionalEncoding` per encoder."""

import pytest
import torch

from pyg_routing import encodings
from pyg_routing.data.generators import make_generator
from pyg_routing.envs.two_opt import observe, reset
from pyg_routing.models import DACTPolicy, GPSEncoder, N2SEncoder, NDSEncoder
from pyg_routing.models.pe import PositionalEncoding

NAMES = list(encodings.available())
ENCODERS = {
    "gps": lambda pe: GPSEncoder(in_channels=7, dim=32, heads=4, num_layers=1, pe=pe,
                                 pe_dim=16),
    "n2s": lambda pe: N2SEncoder(in_channels=2, dim=32, heads=4, num_layers=1, pe=pe,
                                 pe_dim=16),
    "nds": lambda pe: NDSEncoder(in_features=3, dim=32, heads=4, ff_hidden=64, pe=pe,
                                 pe_dim=16),
}


def _built(name: str) -> PositionalEncoding:
    return PositionalEncoding.build(name, dim=32, heads=4, pe_dim=16)


@pytest.mark.parametrize("name", NAMES)
def test_one_part_of_the_encodings_kind(name):
    pe = _built(name)
    kind = encodings.info(name).kind
    assert pe.name == name and pe.kind == kind
    assert (pe.bias is not None) == (kind == "bias")
    assert (pe.rotary is not None) == (kind == "rotary")
    assert (pe.ape is not None) == (name == "ape")
    assert (pe.node_pe is not None) == (kind == "node" and name != "ape")
    assert pe.width == (pe.node_pe.width if pe.node_pe is not None
                        else 16 if name == "ape" else 0)
    assert pe.reads_positions == (kind in ("bias", "rotary") or name == "ape")


@pytest.mark.parametrize("encoder", list(ENCODERS))
@pytest.mark.parametrize("name", ["ape", "rpe", "rope", "ipexpe", "none"])
def test_an_injected_encoding_is_the_encoder_built_from_its_name(encoder, name):
    torch.manual_seed(0)
    by_name = ENCODERS[encoder](name)
    # GPS builds (and re-initialises) its encoding's parts from a private stream, so
    # the parts are built before the seed; the others draw them from the shared one.
    parts = _built(name) if encoder == "gps" else None
    torch.manual_seed(0)
    injected = ENCODERS[encoder](parts or _built(name))
    a, b = by_name.state_dict(), injected.state_dict()
    assert list(a) == list(b)
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)
    assert injected.positional.name == name


def test_an_injected_encoding_must_fit_the_encoder():
    with pytest.raises(ValueError, match="bias has 8 heads, the encoder 4"):
        GPSEncoder(in_channels=6, dim=32, heads=4, pe=PositionalEncoding.build(
            "alibi", dim=32, heads=8, pe_dim=16))
    with pytest.raises(ValueError, match="RoPE rotates heads of 4 channels"):
        N2SEncoder(dim=32, heads=4, pe=PositionalEncoding.build("rope", dim=16, heads=4,
                                                               pe_dim=16))
    with pytest.raises(ValueError, match="at most one part"):
        PositionalEncoding("ipe", node_pe=encodings.node_transform("ipe", dim=8),
                           rotary=_built("rope").rotary)


@pytest.mark.parametrize("encoder,name,part", [("gps", "ape", "ape"), ("n2s", "rpe", "bias"),
                                               ("nds", "spd", "bias")])
def test_checkpoints_from_before_the_parts_moved_still_load(encoder, name, part):
    torch.manual_seed(1)
    old = ENCODERS[encoder](name)
    state = {k.replace(f"positional.{part}.", f"{part}."): v.clone() + 1.0
             for k, v in old.state_dict().items()}
    assert any(k.startswith(f"{part}.") for k in state)
    new = ENCODERS[encoder](name)
    new.load_state_dict(state)                                  # strict: every key maps
    for k, v in new.state_dict().items():
        torch.testing.assert_close(v, state[k.replace(f"positional.{part}.", f"{part}.")])


@pytest.mark.parametrize("name", ["ipexpe", "lap", "none", "rpe"])
def test_the_policy_computes_its_code_from_the_environments_route_quantities(name):
    inst = make_generator("cvrp", 8, seed=2).sample(2)
    torch.manual_seed(0)
    policy = DACTPolicy.build("cvrp", pe=name, dim=32, heads=4, num_layers=1, pe_dim=16).eval()
    obs = observe(reset(inst))
    assert obs.pe is None                        # the environment never calls the model
    prepared = policy.prepare(obs)
    assert (prepared.pe is None) == (policy.encoder.positional.node_pe is None)
    if prepared.pe is not None:
        flat = policy.encoder.positional.code(obs.encoding_inputs(torch.float32))
        torch.testing.assert_close(prepared.pe, flat.view(2, obs.x.size(1), -1))
    with torch.no_grad():                        # computed once or on the fly: one answer
        torch.testing.assert_close(policy.embed(obs), policy.embed(prepared), rtol=0, atol=0)


def test_a_code_of_the_wrong_width_is_refused_naming_both_widths():
    enc = ENCODERS["n2s"]("ipe")
    x = torch.rand(1, 5, 2)
    with pytest.raises(ValueError, match="pe has 3 channels, but N2SEncoder"):
        enc.forward_dense(x, torch.rand(1, 5, 3), torch.zeros(1, 5, dtype=torch.long))
