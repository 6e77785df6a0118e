"""Importing VRP-DACT's checkpoints into our native DACT network (``import-checkpoint
--from dact``), with a forward-parity test on mapped weights.

VRP-DACT's released files are not available offline, so, as for N2S
(``test_import_checkpoint.py``), each test writes random weights with VRP-DACT's keys and
shapes. The reference below is our own minimal restatement of VRP-DACT's forward pass
(``nets/graph_layers.py``: ``EmbeddingNet``, ``MultiHeadAttention``, ``MultiHeadDecoder``;
``nets/actor_network.py``, the CVRP feature block; ``nets/critic_network.py``;
``problems/problem_vrp.py``: ``preprocessing``, ``get_real_mask``), written from its
structure, torch only, in float64 (VRP-DACT packs a node's load into the fraction of a
float32 number, ``route * 1000 + position + load / 2``, which rounds it to about 1e-3;
the restatement keeps it exact, as our features are).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from pyg_routing.data.generators import make_generator
from pyg_routing.envs import TwoOptEnv
from pyg_routing.errors import CorruptFileError
from pyg_routing.training import backbones
from pyg_routing.training.import_checkpoint import import_dact
from pyg_routing.training.import_dact import dummy_rate
from tests.helpers import run_cli
from tests.training.test_import_checkpoint import n2s_pattern as dact_pattern

torch.set_num_threads(1)
DIM, HEADS, LAYERS, CRITIC_HEADS = 64, 4, 2, 6


def _uniform(*shape: int, gen: torch.Generator) -> torch.Tensor:
    bound = 1.0 / math.sqrt(shape[-1])
    return (torch.rand(*shape, generator=gen) * 2 - 1) * bound


def dact_original_state(seed: int = 0, node_dim: int = 7, dim: int = DIM, heads: int = HEADS,
                        layers: int = LAYERS) -> dict[str, dict[str, torch.Tensor]]:
    """Actor and critic state dicts with VRP-DACT's keys and shapes (hidden_dim = dim,
    critic heads 6 on the 2 dim concatenated aspects)."""
    g = torch.Generator().manual_seed(seed)
    d, cd = dim // heads, 2 * dim // CRITIC_HEADS

    def lin(prefix: str, out: int, inp: int, bias: bool = True) -> dict[str, torch.Tensor]:
        sd = {prefix + ".weight": _uniform(out, inp, gen=g)}
        return sd | ({prefix + ".bias": _uniform(out, gen=g)} if bias else {})

    actor = {"embedder.embedder.weight": _uniform(dim, node_dim, gen=g)}
    for i in range(layers):
        p = f"encoder.{i}.MHA_sublayer.MHA."
        for aspect in ("node", "pos"):
            actor[f"{p}W_query_{aspect}"] = _uniform(heads, dim, d, gen=g)
            actor[f"{p}W_key_{aspect}"] = _uniform(heads, dim, d, gen=g)
            actor[f"{p}W_val_{aspect}"] = _uniform(2 * heads, dim, d, gen=g)
            actor[f"{p}W_out_{aspect}"] = _uniform(heads, 2 * d, dim, gen=g)
        for block in ("FF1", "FF2"):
            f = f"encoder.{i}.FFandNorm_sublayer.{block}."
            actor |= lin(f + "0", dim, dim) | lin(f + "2", dim, dim)
    for aspect in ("node", "pos"):
        actor[f"decoder.compater_{aspect}.W_query"] = _uniform(heads, dim, dim, gen=g)
        actor[f"decoder.compater_{aspect}.W_key"] = _uniform(heads, dim, dim, gen=g)
    for name in ("project_graph_pos", "project_graph_node", "project_node_pos",
                 "project_node_node"):
        actor |= lin(f"decoder.{name}", dim, dim, False)
    actor |= (lin("decoder.value_head.fc1", 32, 2 * heads) | lin("decoder.value_head.fc2", 32, 32)
              | lin("decoder.value_head.fc3", 1, 32))
    cdim = 2 * dim
    critic = {f"encoder.0.0.module.{w}": _uniform(CRITIC_HEADS, cdim, cd, gen=g)
              for w in ("W_query", "W_key", "W_val")}
    critic["encoder.0.0.module.W_out"] = _uniform(CRITIC_HEADS, cd, cdim, gen=g)
    critic |= lin("encoder.0.2.module.0", cdim, cdim) | lin("encoder.0.2.module.2", cdim, cdim)
    critic |= lin("value_head.project_graph", cdim, cdim, False) | lin(
        "value_head.project_node", cdim, cdim, False)
    critic |= (lin("value_head.MLP.fc1", cdim, cdim) | lin("value_head.MLP.fc2", 64, cdim)
               | lin("value_head.MLP.fc3", 1, 64))
    return {"actor": actor, "critic": critic}


# ---------------------------------------------------------------------- the restatement
def _norm(x: torch.Tensor) -> torch.Tensor:          # VRP-DACT's 'layer' normalisation
    return (x - x.mean((1, 2), keepdim=True)) / torch.sqrt(x.var((1, 2), keepdim=True) + 1e-5)


def _heads(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:   # [B,M,D] @ [H,D,e] -> [H,B,M,e]
    return torch.einsum("bmd,hde->hbme", x, w)


def _mlp(x: torch.Tensor, sd: dict, p: str) -> torch.Tensor:
    x = F.relu(F.linear(x, sd[p + "fc1.weight"], sd[p + "fc1.bias"]))
    x = F.relu(F.linear(x, sd[p + "fc2.weight"], sd[p + "fc2.bias"]))
    return F.linear(x, sd[p + "fc3.weight"], sd[p + "fc3.bias"]).squeeze(-1)


def _ff(z: torch.Tensor, sd: dict, p: str) -> torch.Tensor:
    z = F.relu(F.linear(z, sd[p + "0.weight"], sd[p + "0.bias"]))
    return F.linear(z, sd[p + "2.weight"], sd[p + "2.bias"])


def dact_preprocessing(succ: torch.Tensor, demand: torch.Tensor, k: int):
    """VRP-DACT's walk along the solution from node 0: per node ``route * 1000 +
    position + load before / 2`` and the load of every route (float64 here)."""
    b, m = succ.shape
    rows = torch.arange(b)
    pre = torch.zeros(b, dtype=torch.long)
    route = torch.zeros(b, dtype=torch.float64)
    partial = torch.zeros(b, k, dtype=torch.float64)
    context = torch.zeros(b, m, dtype=torch.float64)
    for i in range(m):
        nxt = succ[rows, pre]
        depot = nxt < k
        route = torch.where(depot, route + 1, route)
        cum = torch.where(depot, partial[rows, (route.long() - 1) % k],
                          partial[rows, route.long() % k])
        context[rows, nxt] = i + 1 + route * 1000 + cum * 0.5
        partial[rows, route.long() % k] += demand[rows, nxt]
        pre = nxt
    return context, partial


def dact_inputs(pos, demand, succ, k):
    """The seven features, the CPE positions and VRP-DACT's mask (True = refused)."""
    b, m = succ.shape
    pred = succ.argsort()
    post = (pos.gather(1, succ[..., None].expand_as(pos)) - pos).norm(dim=-1, keepdim=True)
    pre = (pos.gather(1, pred[..., None].expand_as(pos)) - pos).norm(dim=-1, keepdim=True)
    context, partial = dact_preprocessing(succ, demand, k)
    route = (context // 1000).long() % k
    cum = (context % 1) * 2
    total = partial.gather(-1, route)
    cor = (demand != 0).double()
    x = torch.cat([pos, pre, post, cum[..., None], demand[..., None],
                   (total - cor * cum)[..., None]], -1)
    inside = route[:, :, None] != route[:, None, :]
    inside[:, :k, :] = True
    inside[:, :, :k] = True
    special1 = torch.zeros_like(inside)
    special1[:, k:, :] = True
    special1 |= ((route[:, :, None] - 1) % k) != route[:, None, :]
    special2 = torch.zeros_like(inside)
    special2[:, :, k:] = True
    special2 |= (route[:, :, None] % k) != route[:, None, :]
    cap = 1.0 + 0.1 / 30                                # VRP-DACT's CAPACITIES[20] = 30
    pi, pj = cum[:, :, None], (cor * cum)[:, None, :]
    qi, qj = (cor * (total - cum))[:, :, None], (total - cor * cum)[:, None, :]
    dj = demand[:, None, :]
    between = ((pi + pj + dj) > cap) | ((qi + qj - dj) > cap)
    mask = ~(~inside | ~between | ~special1 | ~special2)
    mask[:, :k, :k] = False
    mask |= torch.eye(m, dtype=torch.bool)
    visited = (context % 1000 // 1).long() % m
    return x, visited, mask


def dact_reference(sd: dict, critic: dict, x: torch.Tensor, visited: torch.Tensor):
    """VRP-DACT's scores of its pairs ``(a, b)`` (``[B, M, M]``, unmasked) and value."""
    b, m, _ = x.shape
    dim = sd["embedder.embedder.weight"].shape[0]
    h = x @ sd["embedder.embedder.weight"].t()
    g = dact_pattern(m, dim).to(x.dtype)[visited]
    layers = len({k.split(".")[1] for k in sd if k.startswith("encoder.")})
    for i in range(layers):
        a = f"encoder.{i}.MHA_sublayer.MHA."
        d = sd[a + "W_query_node"].shape[-1]
        att_h = torch.softmax(_heads(h, sd[a + "W_query_node"]) @ _heads(
            h, sd[a + "W_key_node"]).transpose(-1, -2) / math.sqrt(d), -1)
        att_g = torch.softmax(_heads(g, sd[a + "W_query_pos"]) @ _heads(
            g, sd[a + "W_key_pos"]).transpose(-1, -2) / math.sqrt(d), -1)
        vh, vg = _heads(h, sd[a + "W_val_node"]), _heads(g, sd[a + "W_val_pos"])
        nh = att_h.shape[0]
        heads_h = torch.cat([att_h @ vh[:nh], att_g @ vh[nh:]], -1)     # [H, B, M, 2d]
        heads_g = torch.cat([att_h @ vg[:nh], att_g @ vg[nh:]], -1)

        def out(heads, w):
            return heads.permute(1, 2, 0, 3).reshape(b, m, -1) @ w.reshape(-1, w.shape[-1])

        h, g = _norm(h + out(heads_h, sd[a + "W_out_node"])), _norm(g + out(heads_g,
                                                                            sd[a + "W_out_pos"]))
        f = f"encoder.{i}.FFandNorm_sublayer."
        h, g = _norm(h + _ff(h, sd, f + "FF1.")), _norm(g + _ff(g, sd, f + "FF2."))

    def refine(z, aspect):
        return z @ sd[f"decoder.project_node_{aspect}.weight"].t() + (
            z.max(1)[0] @ sd[f"decoder.project_graph_{aspect}.weight"].t())[:, None]

    def compat(z, aspect):
        q = _heads(z, sd[f"decoder.compater_{aspect}.W_query"])
        k = _heads(z, sd[f"decoder.compater_{aspect}.W_key"])
        return (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).permute(1, 2, 3, 0)

    pairs = torch.cat([compat(refine(g, "pos"), "pos"), compat(refine(h, "node"), "node")], -1)
    scores = torch.tanh(_mlp(pairs, sd, "decoder.value_head.")) * 6.0
    z = torch.cat([h, g], -1)
    c = "encoder.0.0.module."
    q, k, v = (_heads(z, critic[c + w]) for w in ("W_query", "W_key", "W_val"))
    att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), -1) @ v
    w_out = critic[c + "W_out"]
    z = _norm(z + att.permute(1, 2, 0, 3).reshape(b, m, -1) @ w_out.reshape(-1, w_out.shape[-1]))
    z = _norm(z + F.linear(F.relu(F.linear(z, critic["encoder.0.2.module.0.weight"],
                                           critic["encoder.0.2.module.0.bias"])),
                           critic["encoder.0.2.module.2.weight"],
                           critic["encoder.0.2.module.2.bias"]))
    fused = z @ critic["value_head.project_node.weight"].t() + (
        z.mean(1) @ critic["value_head.project_graph.weight"].t())[:, None]
    return scores, _mlp(fused.mean(1), critic, "value_head.MLP.")


# ---------------------------------------------------------------------- the tests
def _walked_state(customers=20, batch=3, steps=12, seed=0):
    env = TwoOptEnv(depot_rate=dummy_rate(customers))
    inst = make_generator("cvrp", customers, seed=seed).sample(batch)
    state = env.reset(inst, init="random", generator=torch.Generator().manual_seed(seed))
    gen = torch.Generator().manual_seed(seed + 1)
    for _ in range(steps):
        state, _ = env.step(state, env.random_action(state, generator=gen))
    return env, state


def _imported(original, customers=20):
    ckpt = import_dact(original, num_customers=customers, name="epoch-198.pt")
    model = backbones.get("dact")(**ckpt["hyper_parameters"])
    model.load_state_dict(ckpt["state_dict"])
    return ckpt, model.policy.eval()


def test_dact_scores_log_probs_and_value_equal_the_original_network():
    original = dact_original_state()
    ckpt, policy = _imported(original)
    hp = ckpt["hyper_parameters"]
    model, encoding = hp["model"], hp["encoding"]
    assert (hp["backbone"], hp["problem"], model["encoder"], hp["pe"], encoding["cpe_scope"],
            encoding["dim"], model["dim"], model["heads"], model["layers"],
            model["depot_rate"]) == (
        "dact", "cvrp", "native", "dact_cpe", "tour", DIM, DIM, HEADS, LAYERS, 0.5)
    policy = policy.double()
    env, state = _walked_state()
    obs = policy.prepare(env.policy_observation(state, torch.float64))
    sd = {k: v.double() for k, v in original["actor"].items()}
    critic = {k: v.double() for k, v in original["critic"].items()}
    x_ref, visited, _ = dact_inputs(state.pos.double(), state.demand.double()
                                    / state.capacity.double()[:, None], state.succ,
                                    state.num_depots)
    # the seven features (ours in the state's float32, then cast)
    torch.testing.assert_close(obs.x, x_ref, rtol=0, atol=1e-6)
    assert torch.equal(visited, state.rank)                        # CPE position = rank
    scores_ref, value_ref = dact_reference(sd, critic, obs.x, visited)
    with torch.no_grad():
        hg = policy.embed(obs)
        scores = policy.decoder.dact_logits(hg)
        logits = policy.decoder(hg, obs.mask, obs.succ)
        value = policy.value(obs)
    assert (scores - scores_ref).abs().max() < 1e-10
    assert (value.double() - value_ref).abs().max() < 1e-5       # value() returns float32
    assert (policy.critic(hg) - value_ref).abs().max() < 1e-10
    # the move (i, j) is DACT's pair (succ i, j): the same distribution over the moves
    b, m, _ = logits.shape
    moves = scores_ref.gather(1, state.succ[..., None].expand(b, m, m))
    ref = torch.log_softmax(moves.masked_fill(~obs.mask, float("-inf")).flatten(1), -1)
    ours = torch.log_softmax(logits.flatten(1), -1)
    allowed = obs.mask.flatten(1)
    assert torch.equal(torch.isinf(ours), ~allowed)
    assert (ours[allowed] - ref[allowed]).abs().max() < 1e-10


def test_dact_masks_agree_but_for_the_no_op_moves_we_forbid():
    """VRP-DACT's mask (capacity, in-route and depot rules) in our move parametrisation
    equals ours, except the no-op moves: the whole-cycle reversal (DACT's (a, pred a),
    our (i, i)) and the reversal of all but one node (DACT's (succ² j, j), our (succ j,
    j)), which VRP-DACT allows and we forbid."""
    for seed in range(3):
        env, state = _walked_state(seed=seed, steps=20)
        state = replace(state, last_action=torch.full_like(state.last_action, -1))
        _, _, refused = dact_inputs(state.pos.double(), state.demand.double()
                                    / state.capacity.double()[:, None], state.succ,
                                    state.num_depots)
        b, m, _ = refused.shape
        theirs = ~refused.gather(1, state.succ[..., None].expand(b, m, m))
        ours = env.action_mask(state)
        node = torch.arange(m).expand(b, m)
        no_op = torch.zeros_like(ours)
        no_op[torch.arange(b)[:, None], node, node] = True                 # (i, i)
        no_op[torch.arange(b)[:, None], state.succ, node] = True           # (succ j, j)
        assert torch.equal(ours & ~no_op, theirs & ~no_op), seed
        assert not (ours & no_op).any() and (theirs & no_op).any()


def test_dact_float32_policy_decode_and_tsp():
    original = dact_original_state(seed=1)
    _, policy = _imported(original)
    env, state = _walked_state(seed=2)
    obs = policy.prepare(env.policy_observation(state, torch.float32))
    with torch.no_grad():
        action, log_prob, _, value = policy(obs, generator=torch.Generator().manual_seed(0))
        again = policy(obs, action=action)[1]
    assert torch.equal(log_prob, again)
    assert obs.mask[torch.arange(len(action)), action[:, 0], action[:, 1]].all()
    sd = {k: v.double() for k, v in original["actor"].items()}
    critic = {k: v.double() for k, v in original["critic"].items()}
    x_ref, visited, _ = dact_inputs(state.pos.double(), state.demand.double()
                                    / state.capacity.double()[:, None], state.succ,
                                    state.num_depots)
    scores_ref, value_ref = dact_reference(sd, critic, x_ref, visited)
    b, m, _ = scores_ref.shape
    moves = scores_ref.gather(1, state.succ[..., None].expand(b, m, m))
    ref = torch.log_softmax(moves.masked_fill(~obs.mask, float("-inf")).flatten(1), -1)
    picked = ref.gather(1, (action[:, 0] * m + action[:, 1])[:, None]).squeeze(1)
    assert (log_prob.double() - picked).abs().max() < 1e-5
    assert (value.double() - value_ref).abs().max() < 1e-5
    tsp = dact_original_state(node_dim=2, layers=1)
    ckpt = import_dact(tsp, num_customers=10)
    hp = ckpt["hyper_parameters"]
    assert (hp["problem"], hp["model"]["layers"], hp["model"]["depot_rate"]) == ("tsp", 1, None)


def test_dact_cli_round_trip_and_evaluate(tmp_path, capsys):
    file = tmp_path / "epoch-3.pt"
    torch.save(dact_original_state(layers=1) | {"optimizer": {}, "rng_state": torch.get_rng_state(),
                                                "cuda_rng_state": []}, file)
    code, out, err = run_cli(capsys, "import-checkpoint", "--from", "dact", str(file), "--out",
                             str(tmp_path / "dact.ckpt"), "--num-customers", "10", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert (res["backbone"], res["problem"], res["pe"]) == ("dact", "cvrp", "dact_cpe")
    assert res["parameters"] == 281_121 - 2 * 65_792 + 155_137      # one layer of three
    code, out, err = run_cli(capsys, "evaluate", "--checkpoint", str(tmp_path / "dact.ckpt"),
                             "--test.instances", "2", "--test.steps", "3",
                             "--reference.solver", "none",
                             "--root", str(tmp_path), "--out", str(tmp_path / "e"), "--json")
    assert code == 0, err
    assert json.loads(out)["cost"] > 0


def test_dact_bad_input_names_the_file_and_key():
    state = dact_original_state(layers=1)
    with pytest.raises(CorruptFileError, match=r"f\.pt: no 'decoder.compater_pos.W_key'"):
        actor = dict(state["actor"])
        del actor["decoder.compater_pos.W_key"]
        import_dact({"actor": actor, "critic": state["critic"]}, num_customers=20, name="f.pt")
    with pytest.raises(CorruptFileError, match="reads 5 node features"):
        actor = dict(state["actor"]) | {"embedder.embedder.weight": torch.zeros(64, 5)}
        import_dact({"actor": actor, "critic": state["critic"]}, num_customers=20)
    with pytest.raises(CorruptFileError, match="'value_head.MLP.fc2.weight' has shape"):
        critic = dict(state["critic"]) | {"value_head.MLP.fc2.weight": torch.zeros(32, 128)}
        import_dact({"actor": state["actor"], "critic": critic}, num_customers=20)
    with pytest.raises(CorruptFileError, match="not a DACT checkpoint"):
        import_dact({"model_state_dict": {}}, num_customers=20)
    assert [dummy_rate(n) for n in (10, 20, 30, 50, 100, 200)] == [0.5, 0.5, 0.4, 0.4, 0.2, 0.2]
