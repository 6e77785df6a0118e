import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing import encodings
from pyg_routing.data import CVRPGenerator, RoutingData
from pyg_routing.models import GPSEncoder
from pyg_routing.transforms import IPEXPE


def _datas():
    inst = CVRPGenerator(12, seed=0).sample(3)
    routes = [[[1, 2, 3, 4], [5, 6, 7], [8], [9, 10, 11, 12]],
              [list(range(1, 7)), list(range(7, 13))],
              [[12, 11, 10], [9, 8, 7, 6, 5], [4, 3, 2, 1]]]
    return [RoutingData.from_routes(inst[i], r) for i, r in enumerate(routes)]


@pytest.mark.parametrize("pe", list(encodings.available()))
def test_every_encoding_runs_and_batching_equals_one_by_one(pe):
    torch.manual_seed(0)
    enc = GPSEncoder(in_channels=2, dim=32, heads=4, num_layers=2, pe=pe, pe_dim=16).eval()
    datas = _datas()
    if pe == "lap":  # eval mode of the transform: no random sign flips
        enc.positional.node_pe.eval()
    batch = Batch.from_data_list(datas)
    h = enc(batch)
    assert h.shape == (batch.num_nodes, 32) and torch.isfinite(h).all()
    one = torch.cat([enc(Batch.from_data_list([d])) for d in datas])
    torch.testing.assert_close(h, one, atol=1e-5, rtol=1e-4)
    h.square().sum().backward()
    assert enc.input[0].weight.grad is not None
    assert enc.input[0].weight.grad.abs().sum() > 0


def test_precomputed_transform_output_is_used_and_equal():
    torch.manual_seed(0)
    enc = GPSEncoder(in_channels=2, dim=32, heads=4, num_layers=1, pe="ipexpe", pe_dim=16)
    datas = _datas()
    plain = enc(Batch.from_data_list(datas))
    with_pe = Batch.from_data_list([IPEXPE(dim=16, num_bands=4)(d) for d in datas])
    assert "pe" in with_pe
    torch.testing.assert_close(enc(with_pe), plain)


def test_the_encoding_reaches_the_output():
    # Same coordinates and route graph, routes traversed in reverse: direction-aware
    # encodings (via the CVRP 'auto' choice, IPE is invariant; ALiBi is index-based)
    # change the output only where the encoding changes. The undirected GIN: the
    # directed default tells a route from its reversal by itself.
    torch.manual_seed(0)
    datas = _datas()
    fwd = Batch.from_data_list([datas[0]])
    rev = Batch.from_data_list([RoutingData.from_routes(datas[0], [r[::-1] for r in
                                                                    datas[0].routes()])])
    alibi = GPSEncoder(2, 32, 4, 1, pe="alibi", local_mp="undirected").eval()
    assert (alibi(fwd) - alibi(rev)).abs().max() > 1e-4
    ipe = GPSEncoder(2, 32, 4, 1, pe="ipe", pe_dim=16, direction="invariant",
                     local_mp="undirected").eval()
    # GIN sees the undirected graph, IPE is reversal-invariant, attention has no index:
    torch.testing.assert_close(ipe(fwd), ipe(rev), atol=1e-4, rtol=1e-4)


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown encoding 'fourier'"):
        GPSEncoder(pe="fourier")
    enc = GPSEncoder(in_channels=3, dim=16, heads=2, num_layers=1, pe="none")
    with pytest.raises(ValueError, match="in_channels=3"):
        enc(Batch.from_data_list(_datas()))
    with pytest.raises(ValueError, match="divisible"):
        GPSEncoder(dim=30, heads=4)


@pytest.mark.parametrize("pe", ["ipexpe", "ape", "alibi", "spd", "rope", "none"])
def test_dense_path_equals_the_batch_path(pe):
    from torch_geometric.utils import to_dense_batch

    from pyg_routing.functional.index_pe import dense_route_inputs

    torch.manual_seed(0)
    datas = _datas()                      # three instances of 13 nodes each
    batch = Batch.from_data_list(datas)
    enc = GPSEncoder(2, 32, 4, 2, pe=pe, pe_dim=16).eval()
    ref = enc(batch).view(3, 13, 32)
    x, _ = to_dense_batch(batch.pos, batch.batch)
    node_pe = None
    if enc.positional.node_pe is not None:
        node_pe, _ = to_dense_batch(enc.positional.node_pe.encode(batch), batch.batch)
    route_pos, route_id, _ = dense_route_inputs(batch)
    out = enc.forward_dense(x, batch.edge_index, node_pe, route_pos, route_id)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("pe", [name for name in encodings.available() if name != "none"])
def test_zero_pe_init_starts_every_encoding_from_the_no_pe_model(pe):
    """pe_init="zero" (default): with one seed every encoding draws the very same
    shared weights as No PE (decoder and critic included), the first layer's code
    columns are 0, so node encodings compute exactly the No-PE embeddings at
    initialisation, and the code columns receive a gradient from the first step."""
    from pyg_routing.models import DACTPolicy

    def build(name: str, **kw) -> DACTPolicy:
        torch.manual_seed(0)
        return DACTPolicy.build("cvrp", pe=name, dim=32, heads=4, num_layers=2, pe_dim=16,
                                **kw)

    base, model = build("none"), build(pe)
    ref, got = base.state_dict(), model.state_dict()
    for key, value in ref.items():
        if key != "encoder.input.0.weight":
            assert torch.equal(got[key], value), key
    first = got["encoder.input.0.weight"]
    width = model.encoder.in_channels
    torch.testing.assert_close(first[:, :width], ref["encoder.input.0.weight"], rtol=0, atol=0)
    assert (first[:, width:] == 0).all()
    if model.encoder.kind != "node":
        return
    batch = Batch.from_data_list(_datas())
    enc, plain = GPSEncoder(2, 32, 4, 2, pe=pe, pe_dim=16), GPSEncoder(2, 32, 4, 2, pe="none")
    plain.load_state_dict({**enc.state_dict(), "input.0.weight": enc.input[0].weight[:, :2]},
                          strict=False)
    out = enc.eval()(batch)
    torch.testing.assert_close(out, plain.eval()(batch), rtol=0, atol=0)
    out.square().sum().backward()
    assert enc.input[0].weight.grad[:, 2:].abs().sum() > 0
    # the previous behaviour: PyTorch's default init, under which the code counts at once
    torch.manual_seed(0)
    default = GPSEncoder(2, 32, 4, 2, pe=pe, pe_dim=16, pe_init="default").eval()
    assert (default.input[0].weight[:, 2:] != 0).any()
    assert not torch.allclose(default(batch)[:, :4], enc(batch)[:, :4])


def test_pe_init_is_checked_and_the_code_weights_learn_where_the_code_matters():
    with pytest.raises(ValueError, match="unknown pe_init 'xavier'.*zero.*default"):
        GPSEncoder(pe="ipexpe", pe_init="xavier")
    # the code block learns: a few Adam steps on a target that depends on the
    # within-route position tell apart nodes whose features are all equal
    torch.manual_seed(0)
    enc = GPSEncoder(2, 16, 2, 1, pe="ipe", pe_dim=8, local_mp="none")
    batch = Batch.from_data_list(_datas())
    batch.pos = torch.zeros_like(batch.pos)          # only the code tells nodes apart
    h0 = enc(batch)
    assert torch.allclose(h0, h0[:1].expand_as(h0))
    opt = torch.optim.Adam(enc.parameters(), lr=1e-2)
    target = batch.route_pos.float().unsqueeze(-1)
    for _ in range(3):
        opt.zero_grad()
        (enc(batch)[:, :1] - target).square().mean().backward()
        opt.step()
    assert enc(batch)[:, 0].std() > 1e-3


@pytest.mark.parametrize("scale", [0.25, "0.5"])
def test_numeric_pe_init_is_the_no_pe_model_plus_a_scaled_code_block(scale):
    """pe_init=s: every weight but the code block is the No-PE model's of the same
    seed (the feature columns included); the code block is uniform in
    ±s/sqrt(width), drawn apart from the shared stream, so the code counts at once;
    s = 0 is exactly "zero"; a string number (the CLI's) is the float."""
    s = float(scale)

    def build(**kw) -> GPSEncoder:
        torch.manual_seed(0)
        return GPSEncoder(2, 32, 4, 2, pe_dim=16, **kw)

    plain, scaled = build(pe="none").state_dict(), build(pe="ipexpe", pe_init=scale)
    for key, value in plain.items():
        if key != "input.0.weight":
            assert torch.equal(scaled.state_dict()[key], value), key
    first = scaled.input[0].weight
    assert torch.equal(first[:, :2], plain["input.0.weight"])
    code = first[:, 2:]
    width = code.size(1)
    assert width == scaled.pe_width == 16 + 2 * 4
    assert code.abs().max() <= s / width ** 0.5 and code.abs().max() > 0.8 * s / width ** 0.5
    assert scaled.pe_init == s and f"pe_init={s!r}" in repr(scaled)
    # its own numbers: the same for the same seed, and not a copy of the numbers the
    # shared stream gives the next layer (as a fork of that stream would draw)
    assert torch.equal(build(pe="ipexpe", pe_init=scale).input[0].weight, first)
    nxt = scaled.input[2].weight.flatten()[:code.numel()]
    assert torch.corrcoef(torch.stack([code.flatten(), nxt]))[0, 1].abs() < 0.5
    batch = Batch.from_data_list(_datas())
    zero = build(pe="ipexpe", pe_init="zero").eval()
    assert not torch.allclose(scaled.eval()(batch), zero(batch))
    nil = build(pe="ipexpe", pe_init=0.0).eval()
    assert "pe_init" not in repr(nil)
    torch.testing.assert_close(nil(batch), zero(batch), rtol=0, atol=0)


@pytest.mark.parametrize("bad", ["xavier", -0.1, float("nan"), float("inf"), True, None])
def test_pe_init_refuses_anything_but_zero_default_or_a_number(bad):
    with pytest.raises(ValueError, match="unknown pe_init.*zero.*default.*number >= 0"):
        GPSEncoder(pe="ipexpe", pe_init=bad)


def test_without_local_message_passing_the_solution_reaches_the_model_only_via_the_code():
    """local_mp="none" (the paper's plain Transformer): No PE gives the same embeddings
    for two different solutions of one instance; IPE+XPE and the GraphGPS default
    tell them apart. The local layers and their weights are gone."""
    torch.manual_seed(0)
    inst = CVRPGenerator(8, seed=1).sample(1)[0]
    a = RoutingData.from_routes(inst, [[1, 2, 3, 4], [5, 6, 7, 8]])
    b = RoutingData.from_routes(inst, [[4, 2, 1, 3], [8, 5, 7, 6]])
    assert not torch.equal(a.edge_index, b.edge_index)

    def differs(**kw) -> bool:
        # pe_init="default": the code counts from the start (a zero code block
        # would hide it until trained)
        enc = GPSEncoder(in_channels=2, dim=32, heads=4, num_layers=2, pe_init="default",
                         **kw).eval()
        return not torch.allclose(enc(a), enc(b), atol=1e-6)

    assert not differs(pe="none", local_mp="none")
    assert differs(pe="ipexpe", pe_dim=16, local_mp="none")
    assert differs(pe="none")
    plain = GPSEncoder(2, 32, 4, 2, pe="none", local_mp="none")
    assert all(layer.local is None and layer.norm_local is None for layer in plain.layers)
    assert not any(".local" in k for k in plain.state_dict())
    assert plain.local_mp == "none" and "local_mp='none'" in repr(plain)
    # The dense (search) path agrees with the batch path without local layers too.
    torch.testing.assert_close(plain.forward_dense(a.pos.unsqueeze(0), b.edge_index)[0],
                               plain(a), atol=1e-5, rtol=1e-4)


def test_directed_message_passing_tells_successor_from_predecessor():
    """A 2-opt move (i, j) removes i -> succ(i) and j -> succ(j), so the policy must
    know which neighbour is the successor. With No PE, the undirected GIN gives a
    tour and its reversal the same embeddings; the directed default does not, and
    on the reversal it equals the model with its two GINs swapped, exactly."""
    from pyg_routing.data import TSPGenerator

    inst = TSPGenerator(8, seed=2).sample(1)[0]
    tour = [[3, 1, 6, 2, 7, 5, 4]]
    a = RoutingData.from_routes(inst, tour)
    rev = RoutingData.from_routes(inst, [tour[0][::-1]])

    def build(local_mp):
        torch.manual_seed(0)
        return GPSEncoder(2, 32, 4, 2, pe="none", local_mp=local_mp).eval()

    undirected = build("undirected")
    torch.testing.assert_close(undirected(a), undirected(rev), atol=1e-5, rtol=1e-4)
    directed = build("directed")
    assert not torch.allclose(directed(a), directed(rev), atol=1e-3)
    swapped = build("directed")
    for layer in swapped.layers:
        layer.local, layer.local_rev = layer.local_rev, layer.local
    torch.testing.assert_close(swapped(rev), directed(a), atol=1e-5, rtol=1e-4)
    # the dense (search) path sees the same arcs
    torch.testing.assert_close(directed.forward_dense(a.pos.unsqueeze(0), a.edge_index)[0],
                               directed(a), atol=1e-5, rtol=1e-4)
    assert GPSEncoder(pe="none").local_mp == "directed"
    assert all(layer.local_rev is not None for layer in directed.layers)
    assert all(layer.local_rev is None for layer in undirected.layers)
    for bad in ("both", True, False):
        with pytest.raises(ValueError, match="unknown local_mp .*directed.*undirected.*none"):
            GPSEncoder(pe="none", local_mp=bad)


@pytest.mark.parametrize("local_mp", ["directed", "undirected", "none"])
def test_search_path_gather_equals_the_gin_scatter_values_and_gradients(local_mp):
    """In a search every node has one successor: the directed encoder gathers
    predecessor and successor rows (``succ=``) instead of scattering over the arcs.
    Same output and same gradients as PyG's GINConv on the arcs; the other settings
    ignore ``succ``."""
    from pyg_routing.data.route_quantities import edge_index_from_successors
    from pyg_routing.envs.two_opt import node_features, reset

    inst = CVRPGenerator(12, seed=3).sample(5)
    state = reset(inst, init="random", generator=torch.Generator().manual_seed(0))
    x = node_features(state).float()
    arcs = edge_index_from_successors(state.succ)

    def run(**kw):
        torch.manual_seed(0)
        enc = GPSEncoder(x.size(-1), 32, 4, 2, pe="none", local_mp=local_mp)
        out = enc.forward_dense(x, arcs, **kw)
        out.square().sum().backward()
        return out, [p.grad for p in enc.parameters() if p.grad is not None]

    scatter, g_scatter = run()
    gather, g_gather = run(succ=state.succ)
    torch.testing.assert_close(gather, scatter, atol=1e-6, rtol=1e-5)
    assert len(g_gather) == len(g_scatter)
    for a, b in zip(g_gather, g_scatter):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
