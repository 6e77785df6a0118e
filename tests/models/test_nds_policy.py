"""NDSPolicy: NDS's encoder + PolyNet decoder with the encoding as one argument."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from pyg_routing.data.generators import make_generator
from pyg_routing.envs.deconstruction import (
    NDSFeatures,
    ProblemArrays,
    observe,
    start_solutions,
)
from pyg_routing.models import NDSDecoder, NDSEncoder, NDSPolicy, sample_z
from pyg_routing.models.nds.decoder import binary_codes

PROBLEMS = ("cvrp", "vrptw", "pcvrp")
ENCODINGS = ("none", "ipexpe", "sin", "rpe", "alibi", "rope", "ape")
N, SLOTS_PER_INSTANCE = 12, 2
#: NDS's parameter counts (pe="none"): 1.14M CVRP / PCVRP, 1.16M VRPTW, exactly these
#: from its layer sizes (model.py): the PCVRP prize adds 128 weights, VRPTW's time
#: window 256 and its second neighbour projector 128 x 128.
NDS_PARAMETERS = {"cvrp": 1_141_504, "vrptw": 1_158_144, "pcvrp": 1_141_632}

_CACHE: dict = {}


def _setup(problem: str):
    """Two instances of N customers, two slots each, at NDS's start solutions."""
    if problem not in _CACHE:
        inst = make_generator(problem, N, seed=3).sample(2)
        arrays = ProblemArrays.from_instances(inst)
        state = start_solutions(arrays, np.repeat(np.arange(2, dtype=np.int32),
                                                  SLOTS_PER_INSTANCE), rng=1)
        _CACHE[problem] = (inst, state, NDSFeatures.from_instances(inst))
    return _CACHE[problem]


def _policy_and_obs(problem: str, pe: str, seed: int = 0):
    inst, state, features = _setup(problem)
    torch.manual_seed(seed)
    policy = NDSPolicy.build(problem, pe=pe, pe_dim=16, max_route_len=N)
    return policy, policy.prepare(observe(state, features))


def _slot(obs, s: int) -> SimpleNamespace:
    keys = ("x", "pred", "succ", "tour", "route_pos", "route_id")
    fields = {k: getattr(obs, k)[s:s + 1] for k in keys}
    fields["pe"] = None if obs.pe is None else obs.pe[s:s + 1]
    return SimpleNamespace(**fields)


# ---------------------------------------------------------------------- structure
@pytest.mark.parametrize("problem", PROBLEMS)
def test_parameter_count_of_pe_none_is_nds(problem, record_property):
    policy = NDSPolicy.build(problem)
    count = sum(p.numel() for p in policy.parameters())
    record_property(f"nds_parameters_{problem}", count)
    print(f"NDSPolicy({problem}, pe='none'): {count} parameters")
    assert count == NDS_PARAMETERS[problem]


def test_parameter_names_are_nds():
    """The state-dict keys of NDS's Model (model.py), so its checkpoints load."""
    layer = ["Wq.weight", "Wk.weight", "Wv.weight", "multi_head_combine.weight",
             "multi_head_combine.bias", "add_n_normalization_1.norm.weight",
             "add_n_normalization_1.norm.bias", "feed_forward.W1.weight",
             "feed_forward.W1.bias", "feed_forward.W2.weight", "feed_forward.W2.bias",
             "add_n_normalization_2.norm.weight", "add_n_normalization_2.norm.bias"]
    head = ["weight", "bias"]
    want = {"start_last_node"}
    want |= {f"encoder.embedding_{n}.{w}" for n in ("depot", "node") for w in head}
    want |= {f"encoder.{stack}.{i}.{p}" for stack in ("layers", "layers_2") for i in (0, 1)
             for p in layer}
    want |= {f"encoder.tour_layer.{p}.{w}" for p in ("tour_combiner", "feedforward_layer",
                                                     "add_and_normalize.norm") for w in head}
    mp = "encoder.mp_layers.0"
    want |= {f"{mp}.{p}.{w}" for p in ("neighbour_combiner", "feedforward_layer",
                                       "add_and_normalize.norm") for w in head}
    want |= {f"decoder.{p}.weight" for p in ("Wq_last", "Wk", "Wv")}
    want |= {f"decoder.{p}.{w}" for p in ("multi_head_combine", "poly_layer_1",
                                          "poly_layer_2") for w in head}
    want |= {f"decoder.GRU.{w}_{g}" for w in ("weight", "bias") for g in ("ih", "hh")}
    cvrp = set(NDSPolicy.build("cvrp").state_dict())
    vrptw = set(NDSPolicy.build("vrptw").state_dict())
    assert cvrp == want | {f"{mp}.neighbour_projector.weight"}
    assert vrptw == want | {f"{mp}.left_neighbour_projector.weight",
                            f"{mp}.right_neighbour_projector.weight"}


def test_unsupported_problem_is_refused_by_name():
    with pytest.raises(ValueError, match="cvrp, vrptw, pcvrp"):
        NDSPolicy.build("tsp")


def test_node_code_widens_both_first_projections():
    policy = NDSPolicy.build("vrptw", pe="ipexpe", pe_dim=16, num_bands=4)
    enc = policy.encoder
    assert enc.pe_width == 24
    assert enc.embedding_depot.in_features == 2 + 24
    assert enc.embedding_node.in_features == 5 + 24


# ---------------------------------------------------------------------- sampling
@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("pe", ENCODINGS)
def test_shapes_and_masks(problem, pe):
    policy, obs = _policy_and_obs(problem, pe)
    k, rollouts = 5, 6
    sel, log_prob, z = policy(obs, rollouts, k, generator=torch.Generator().manual_seed(0))
    s = len(obs)
    assert sel.shape == (s, rollouts, k) and sel.dtype == torch.long
    assert log_prob.shape == (s, rollouts) and log_prob.dtype == torch.float32
    assert z.shape == (s, rollouts, 10)
    assert bool(((sel >= 1) & (sel <= N)).all())                  # never the depot
    ordered = sel.sort(-1).values
    assert bool((ordered[..., 1:] != ordered[..., :-1]).all())    # never a repeat
    assert bool(torch.isfinite(log_prob).all()) and bool((log_prob <= 0).all())


def test_k_equal_to_n_picks_every_customer_once():
    policy, obs = _policy_and_obs("pcvrp", "none")
    sel, log_prob, _ = policy(obs, 3, N, generator=torch.Generator().manual_seed(1))
    want = torch.arange(1, N + 1).expand_as(sel)
    assert torch.equal(sel.sort(-1).values, want)
    assert bool(torch.isfinite(log_prob).all())
    with pytest.raises(ValueError, match="k must be"):
        policy(obs, 3, N + 1)


def test_batch_of_one_and_single_rollout():
    policy, obs = _policy_and_obs("cvrp", "rpe")
    sel, log_prob, z = policy(_slot(obs, 0), 1, 4)
    assert sel.shape == (1, 1, 4) and log_prob.shape == (1, 1) and z.shape == (1, 1, 10)


def test_latents_are_distinct_binary_vectors_per_instance():
    z = sample_z(3, 1024, generator=torch.Generator().manual_seed(0))
    pool = binary_codes()
    assert pool.shape == (1024, 10) and torch.equal(pool[5], torch.tensor(
        [0, 0, 0, 0, 0, 0, 0, 1, 0, 1.0]))                         # MSB first, as NDS
    for row in z:                                                # all 1024, once each
        assert torch.equal(torch.unique(row, dim=0), pool)
    small = sample_z(4, 7, generator=torch.Generator().manual_seed(1))
    assert all(len(torch.unique(r, dim=0)) == 7 for r in small)
    assert not torch.equal(small[0], small[1])                   # fresh per instance
    with pytest.raises(ValueError, match="1..1024"):
        sample_z(1, 1025)


def test_same_generator_seed_same_sets():
    policy, obs = _policy_and_obs("vrptw", "ipexpe")
    a = policy(obs, 4, 5, generator=torch.Generator().manual_seed(7))
    b = policy(obs, 4, 5, generator=torch.Generator().manual_seed(7))
    c = policy(obs, 4, 5, generator=torch.Generator().manual_seed(8))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a[0], c[0])


# ---------------------------------------------------------------------- scoring
@pytest.mark.parametrize("pe", ["ipexpe", "spd", "rope"])
def test_scoring_reproduces_the_sampled_log_prob(pe):
    policy, obs = _policy_and_obs("vrptw", pe)
    sel, log_prob, z = policy(obs, 5, 6, generator=torch.Generator().manual_seed(2))
    again, scored, z2 = policy(obs, 5, selected=sel, z=z)
    assert torch.equal(again, sel) and z2 is z
    torch.testing.assert_close(scored, log_prob, rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match="latents"):
        policy(obs, 5, selected=sel)
    # Training's pattern: one encoder pass, then only each instance's winner scored.
    h = policy.embed(obs)
    win = torch.tensor([0, 3, 4, 1])
    rows = torch.arange(len(obs))
    _, best, _ = policy.decode(h, 1, selected=sel[rows, win][:, None], z=z[rows, win][:, None])
    torch.testing.assert_close(best[:, 0], log_prob[rows, win], rtol=0, atol=1e-5)


@pytest.mark.parametrize("pe", ["none", "ipexpe", "rpe", "spd", "rope", "ape"])
def test_batch_equals_one_by_one(pe):
    policy, obs = _policy_and_obs("pcvrp", pe)
    sel, log_prob, z = policy(obs, 4, 5, generator=torch.Generator().manual_seed(3))
    for s in range(len(obs)):
        _, alone, _ = policy(_slot(obs, s), 4, selected=sel[s:s + 1], z=z[s:s + 1])
        torch.testing.assert_close(alone[0], log_prob[s], rtol=0, atol=1e-4)


@pytest.mark.parametrize("pe", ["ape", "rpe", "ipexpe"])
def test_gradients_reach_the_encoding_and_both_decoder_halves(pe):
    policy, obs = _policy_and_obs("cvrp", pe)
    policy.train()
    sel, _, z = policy(obs, 4, 5, generator=torch.Generator().manual_seed(4))
    _, log_prob, _ = policy(obs, 4, selected=sel, z=z)
    (-log_prob.mean()).backward()
    enc, dec = policy.encoder, policy.decoder
    if pe == "ape":
        encoding = [enc.positional.ape.embedding.weight.grad]
    elif pe == "rpe":
        encoding = [enc.positional.bias.weight.grad]
    else:                      # the code's columns of both first projections
        encoding = [enc.embedding_node.weight.grad[:, 3:], enc.embedding_depot.weight.grad[:, 2:]]
    glimpse = [dec.Wq_last, dec.Wk, dec.Wv, dec.multi_head_combine]
    poly = [dec.poly_layer_1, dec.poly_layer_2]
    solution = [enc.tour_layer.tour_combiner, enc.mp_layers[0].neighbour_projector]
    grads = encoding + [m.weight.grad for m in (*glimpse, *poly, *solution)]
    grads += [dec.GRU.weight_ih.grad, policy.start_last_node.grad]
    for g in grads:
        assert g is not None and bool(torch.isfinite(g).all()) and float(g.abs().sum()) > 0


def test_reset_parameters_and_autocast_on_cpu():
    policy, obs = _policy_and_obs("cvrp", "alibi")
    policy.reset_parameters()
    assert not policy.start_last_node.detach().any()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        sel, log_prob, _ = policy(obs, 3, 4, generator=torch.Generator().manual_seed(0))
    assert log_prob.dtype == torch.float32 and bool(torch.isfinite(log_prob).all())
    assert bool(((sel >= 1) & (sel <= N)).all())


def test_encoder_refuses_missing_or_mismatched_inputs():
    policy, obs = _policy_and_obs("cvrp", "ipexpe")
    with pytest.raises(ValueError, match="node code"):
        policy.encoder(obs.x, obs.pred, obs.succ, obs.tour)
    with pytest.raises(ValueError, match="in_features"):
        NDSEncoder(in_features=5)(obs.x, obs.pred, obs.succ, obs.tour)
    with pytest.raises(ValueError, match="route_pos"):
        NDSEncoder(pe="rope")(obs.x, obs.pred, obs.succ, obs.tour)
    with pytest.raises(ValueError, match="z must be"):
        NDSDecoder()(torch.zeros(1, 5, 128), torch.zeros(1, 2, 3), torch.zeros(128), 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("pe", ["none", "ipexpe", "rpe", "rope"])
def test_cuda_fp32_and_autocast(pe):
    policy, obs = _policy_and_obs("vrptw", pe)
    policy = policy.cuda()
    inst, state, _ = _setup("vrptw")
    obs = observe(state, NDSFeatures.from_instances(inst, device="cuda"))
    gen = torch.Generator(device="cuda").manual_seed(0)
    sel, log_prob, z = policy(obs, 8, 5, generator=gen)
    _, scored, _ = policy(obs, 8, selected=sel, z=z)
    torch.testing.assert_close(scored, log_prob, rtol=0, atol=1e-4)
    with torch.no_grad(), torch.autocast("cuda"):
        sel, log_prob, _ = policy(obs, 8, 5, generator=gen)
    assert sel.is_cuda and bool(torch.isfinite(log_prob).all())


# ---------------------------------------------------------------------- parity with NDS
def _nds_model_module():
    """NDS's own ``src/model.py`` (github:ahottung/NDS), when PYG_ROUTING_NDS_SRC names
    a checkout's ``src`` folder; the test is skipped otherwise."""
    import importlib.util
    import os
    from pathlib import Path

    src = os.environ.get("PYG_ROUTING_NDS_SRC")
    if not src or not (Path(src) / "model.py").is_file():
        pytest.skip("set PYG_ROUTING_NDS_SRC to an NDS checkout's src/ folder")
    spec = importlib.util.spec_from_file_location("nds_reference_model", Path(src) / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("problem", PROBLEMS)
def test_parity_with_nds_model(problem):
    """NDS's Model loads into NDSPolicy (strict) and gives the same embeddings and the
    same log-probabilities of the same picks."""
    import math

    nds = _nds_model_module()
    ref = nds.Model(problem=problem, embedding_dim=128, head_num=8, qkv_dim=16,
                    encoder_layer_num=2, tour_layer=True, message_passing_layer_num=1,
                    encoder_layer_num_2=2, ff_hidden_dim=512, poly_embedding_dim=256,
                    z_dim=10, sqrt_embedding_dim=math.sqrt(128), logit_clipping=10,
                    eval_type="softmax")
    torch.manual_seed(0)
    for p in ref.parameters():
        torch.nn.init.normal_(p, std=0.2)
    policy = NDSPolicy.build(problem)
    policy.load_state_dict(ref.state_dict())
    _, obs = _policy_and_obs(problem, "none")
    with torch.no_grad():
        h = policy.embed(obs)
        h_ref = ref.encoder(obs.x[:, :1, :2], obs.x[:, 1:],
                            torch.stack([obs.pred, obs.succ], -1), obs.tour.clone())
        torch.testing.assert_close(h, h_ref, rtol=0, atol=1e-6)
        s, rollouts, k = len(obs), 4, 6
        sel, log_prob, z = policy(obs, rollouts, k, generator=torch.Generator().manual_seed(0))
        ref.decoder.set_kv(h_ref, z)
        mask = torch.zeros(s, rollouts, N + 1)
        mask[:, :, 0] = float("-inf")
        last = ref.start_last_node[None, None].expand(s, rollouts, -1)
        want = torch.zeros(s, rollouts)
        for t in range(k):
            probs = ref.decoder(last, ninf_mask=mask, temperature=1.0)
            pick = sel[:, :, t:t + 1]
            want += probs.gather(2, pick).squeeze(-1).log()
            mask = mask.scatter(2, pick, float("-inf"))
            last = h_ref.gather(1, pick.expand(s, rollouts, 128))
        torch.testing.assert_close(log_prob, want, rtol=0, atol=1e-4)
