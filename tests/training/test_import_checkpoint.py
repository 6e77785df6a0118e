"""Importing the original NDS and N2S checkpoints (pyg_routing.training.import_checkpoint;
DACT's: test_import_dact.py).

The released files are not available offline, so each test writes a checkpoint in the
original's format: a state dict with the original code's key names and shapes
(random weights), saved the way the original saves it. The reference networks below
are our own minimal re-statements of the originals' forward passes (NDS
``src/model.py``; N2S ``nets/graph_layers.py``, ``actor_network.py``,
``critic_network.py``), written from their structure, torch only.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from pyg_routing.data.generators import make_generator
from pyg_routing.envs import PairReinsertionEnv
from pyg_routing.errors import CorruptFileError
from pyg_routing.functional.pickup_delivery import reinsertion_candidates
from pyg_routing.training import backbones
from pyg_routing.training.import_checkpoint import import_n2s, import_nds, import_original
from tests.helpers import run_cli

torch.set_num_threads(1)
N2S_DIM, N2S_HEADS, N2S_LAYERS = 128, 4, 2


# ---------------------------------------------------------------------- N2S, original layout
def _uniform(*shape: int, gen: torch.Generator) -> torch.Tensor:
    bound = 1.0 / math.sqrt(shape[-1])
    return (torch.rand(*shape, generator=gen) * 2 - 1) * bound


def n2s_original_state(seed: int = 0, dim: int = N2S_DIM, heads: int = N2S_HEADS,
                       layers: int = N2S_LAYERS) -> dict[str, dict[str, torch.Tensor]]:
    """Actor and critic state dicts with N2S's keys and shapes (hidden_dim = dim)."""
    g = torch.Generator().manual_seed(seed)
    d = dim // heads

    def lin(prefix: str, out: int, inp: int, bias: bool = True) -> dict[str, torch.Tensor]:
        sd = {prefix + ".weight": _uniform(out, inp, gen=g)}
        return sd | ({prefix + ".bias": _uniform(out, gen=g)} if bias else {})

    actor = {"embedder.embedder.weight": _uniform(dim, 2, gen=g),
             "pos_encoder.W_query": _uniform(heads, dim, d, gen=g),
             "pos_encoder.W_key": _uniform(heads, dim, d, gen=g)}
    for i in range(layers):
        p = f"encoder.{i}.MHA_sublayer.MHA."
        for w in ("W_query", "W_key", "W_val"):
            actor[p + w] = _uniform(heads, dim, d, gen=g)
        actor[p + "W_out"] = _uniform(heads, d, dim, gen=g)
        actor |= lin(p + "score_aggr.0", 2 * heads, 2 * heads) | lin(p + "score_aggr.2", heads,
                                                                     2 * heads)
        f = f"encoder.{i}.FFandNorm_sublayer.FF."
        actor |= lin(f + "0", dim, dim, False) | lin(f + "2", dim, dim, False)
    rem, ins = "decoder.compater_removal.", "decoder.compater_reinsertion."
    actor |= {rem + "W_Q": _uniform(4, dim, dim, gen=g), rem + "W_K": _uniform(4, dim, dim, gen=g)}
    actor |= lin(rem + "agg.fc1", 32, 12) | lin(rem + "agg.fc2", 32, 32)
    actor |= lin(rem + "agg.fc3", 1, 32)
    for j in (1, 2):
        for w in ("W_query", "W_key"):
            actor[f"{ins}compater_insert{j}.{w}"] = _uniform(4, dim, dim, gen=g)
    actor |= lin(ins + "agg.fc1", 32, 16) | lin(ins + "agg.fc2", 32, 32)
    actor |= lin(ins + "agg.fc3", 1, 32)
    actor |= lin("decoder.project_graph", dim, dim, False) | lin("decoder.project_node", dim, dim,
                                                                 False)
    critic = {}
    for w in ("W_query", "W_key", "W_val"):
        critic["encoder.0.0.module." + w] = _uniform(heads, dim, d, gen=g)
    critic["encoder.0.0.module.W_out"] = _uniform(heads, d, dim, gen=g)
    critic |= lin("encoder.0.2.module.0", dim, dim) | lin("encoder.0.2.module.2", dim, dim)
    critic |= lin("value_head.project_graph", dim // 2, dim) | lin("value_head.project_node",
                                                                    dim // 2, dim)
    critic |= (lin("value_head.MLP.fc1", dim, dim + 1) | lin("value_head.MLP.fc2", 64, dim)
               | lin("value_head.MLP.fc3", 1, 64))
    return {"actor": actor, "critic": critic}


def n2s_pattern(n: int, dim: int) -> torch.Tensor:
    """N2S's cyclic positional pattern ``[n, dim]`` (EmbeddingNet), restated."""
    half = dim // 2
    periods = np.linspace(n ** (1 / half), n, half, dtype="int")
    out = np.zeros((n, dim))
    for c in range(dim):
        t = periods[c // 3 * 3 + 1] if c // 3 * 3 + 1 < half else periods[-1]
        phase = 0 if c <= half else 2 * np.pi * (half - c) / half
        grid = np.arange(0, np.ceil(n / t) * t, 0.01)
        x = grid[np.linspace(0, len(grid), n, dtype="int", endpoint=False)]
        wave = 2 * np.pi / t * np.abs(np.mod(x, 2 * t) - t) + phase
        out[:, c] = np.cos(wave) if c % 2 else np.sin(wave)
    pooled = sum(np.roll(out, -s, axis=0) for s in (-2, -1, 0, 1, 2)) / 5
    return torch.from_numpy(pooled - out.mean(0))


def _norm(x: torch.Tensor) -> torch.Tensor:          # N2S's 'layer' normalisation
    return (x - x.mean((1, 2), keepdim=True)) / torch.sqrt(x.var((1, 2), keepdim=True) + 1e-5)


def _heads(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:   # [B,M,D] @ [H,D,d] -> [H,B,M,d]
    return torch.einsum("bmd,hde->hbme", x, w)


def _mlp(x: torch.Tensor, sd: dict, p: str) -> torch.Tensor:
    x = F.relu(F.linear(x, sd[p + "fc1.weight"], sd[p + "fc1.bias"]))
    x = F.relu(F.linear(x, sd[p + "fc2.weight"], sd[p + "fc2.bias"]))
    return F.linear(x, sd[p + "fc3.weight"], sd[p + "fc3.bias"]).squeeze(-1)


def n2s_reference(sd: dict, critic: dict, x, rec, rank, sig, cost, pair, clip=6.0):
    """N2S's actor and critic outputs: encoder output, removal logits ``[B, P]``,
    reinsertion table ``[B, M, M]`` for ``pair [B]``, value ``[B]``."""
    b, m, _ = x.shape
    p = (m - 1) // 2
    pos = n2s_pattern(m, sd["pos_encoder.W_query"].shape[1]).to(x.dtype)[rank]
    pos_att = _heads(pos, sd["pos_encoder.W_query"]) @ _heads(
        pos, sd["pos_encoder.W_key"]).transpose(-1, -2)
    h = x @ sd["embedder.embedder.weight"].t()
    layers = len({k.split(".")[1] for k in sd if k.startswith("encoder.")})
    for i in range(layers):
        a = f"encoder.{i}.MHA_sublayer.MHA."
        q, k, v = (_heads(h, sd[a + w]) for w in ("W_query", "W_key", "W_val"))
        comp = torch.cat([q @ k.transpose(-1, -2), pos_att], 0).permute(1, 2, 3, 0)
        att = F.linear(F.relu(F.linear(comp, sd[a + "score_aggr.0.weight"],
                                       sd[a + "score_aggr.0.bias"])),
                       sd[a + "score_aggr.2.weight"], sd[a + "score_aggr.2.bias"])
        heads = torch.softmax(att.permute(3, 0, 1, 2), -1) @ v
        nh, _, _, d = heads.shape
        out = heads.permute(1, 2, 0, 3).reshape(b, m, nh * d) @ sd[a + "W_out"].reshape(nh * d, -1)
        h = _norm(h + out)
        f = f"encoder.{i}.FFandNorm_sublayer.FF."
        h = _norm(h + F.relu(h @ sd[f + "0.weight"].t()) @ sd[f + "2.weight"].t())
    enc = h
    hh = h @ sd["decoder.project_node.weight"].t() + (
        h.max(1)[0] @ sd["decoder.project_graph.weight"].t())[:, None]
    rem = "decoder.compater_removal."
    pre, post = rec.argsort(), rec.gather(1, rec)
    qr, kr = _heads(hh, sd[rem + "W_Q"]), _heads(hh, sd[rem + "W_K"])
    take = lambda t, idx: t.gather(2, idx[None, :, :, None].expand_as(t))  # noqa: E731
    q_pre, k_post = take(qr, pre), take(kr, post)
    comp = ((q_pre * kr).sum(-1) + (qr * k_post).sum(-1) - (q_pre * k_post).sum(-1))[:, :, 1:]
    pairing = torch.cat([comp[:, :, :p], comp[:, :, p:]], 0).permute(1, 2, 0)
    removal = clip * torch.tanh(_mlp(torch.cat([pairing, sig.permute(0, 2, 1)], -1), sd,
                                     rem + "agg."))
    ins = "decoder.compater_reinsertion."
    rows = torch.arange(b)
    h_next = hh.gather(1, rec[:, :, None].expand_as(hh))

    def compat(query, keys, j):
        w = f"{ins}compater_insert{j}."
        s = _heads(query, sd[w + "W_query"]) @ _heads(keys, sd[w + "W_key"]).transpose(-1, -2)
        return s.permute(1, 2, 3, 0).reshape(b, m, -1)        # [B, M, H] over the keys

    hp, hd = hh[rows, pair + 1][:, None], hh[rows, pair + 1 + p][:, None]
    side_p = torch.cat([compat(hp, hh, 1), compat(hp, h_next, 2)], -1)[:, :, None].expand(
        b, m, m, -1)
    side_d = torch.cat([compat(hd, hh, 1), compat(hd, h_next, 2)], -1)[:, None].expand(
        b, m, m, -1)
    table = clip * torch.tanh(_mlp(torch.cat([side_p, side_d], -1), sd, ins + "agg."))
    c = "encoder.0.0.module."
    q, k, v = (_heads(enc, critic[c + w]) for w in ("W_query", "W_key", "W_val"))
    nh, _, _, d = q.shape
    heads = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), -1) @ v
    g = _norm(enc + heads.permute(1, 2, 0, 3).reshape(b, m, -1) @ critic[c + "W_out"].reshape(
        nh * d, -1))
    ff = F.linear(F.relu(F.linear(g, critic["encoder.0.2.module.0.weight"],
                                  critic["encoder.0.2.module.0.bias"])),
                  critic["encoder.0.2.module.2.weight"], critic["encoder.0.2.module.2.bias"])
    g = _norm(g + ff)
    v = "value_head."
    fused = F.linear(g, critic[v + "project_node.weight"], critic[v + "project_node.bias"]) + \
        F.linear(g.mean(1), critic[v + "project_graph.weight"],
                 critic[v + "project_graph.bias"])[:, None]
    value = _mlp(torch.cat([fused.mean(1), fused.max(1)[0], cost], -1), critic, v + "MLP.")
    return enc, removal, table, value


def _pdtsp_observation(dtype, customers=10, batch=3, steps=4):
    """An observation of our environment after a few moves (a removal history)."""
    env = PairReinsertionEnv()
    inst = make_generator("pdtsp", customers, seed=3).sample(batch)
    gen = torch.Generator().manual_seed(0)
    state = env.reset(inst, init="random", generator=gen)
    p = customers // 2
    for t in range(steps):
        pair = torch.tensor([(t * 2 + i) % p for i in range(batch)])
        order = state.order
        first = torch.zeros(batch, dtype=torch.long)
        second = torch.where(order[:, 1] == pair + 1, order[:, 2], order[:, 1])
        second = torch.where(second == pair + 1 + p, 0, second)
        state = env.step(state, torch.stack([pair, first, second], 1))[0]
    return state, env.policy_observation(state, dtype)


def _original_signature(state) -> torch.Tensor:
    """N2S's selection signature ``[B, 4, P]``: the last three removals OLDEST first,
    then the frequency."""
    recent = state.recent()
    ids = torch.arange(state.num_pairs)
    hot = [(recent[:, k, None] == ids).double() for k in (2, 1, 0)]
    return torch.stack([*hot, state.counts / state.window], 1)


def test_n2s_scores_equal_the_original_network():
    original = n2s_original_state()
    ckpt = import_n2s(original, num_customers=10, name="epoch-1.pt")
    hp = ckpt["hyper_parameters"]
    m = hp["model"]                          # hyper-parameters are the nested recipe
    assert (hp["backbone"], hp["problem"], hp["num_customers"], m["dim"], m["heads"],
            m["layers"], hp["pe"]) == ("n2s", "pdtsp", 10, 128, 4, N2S_LAYERS, "dact_cpe")
    zero = [k for k in ckpt["state_dict"] if k.startswith("policy.critic.attn.")
            and k.endswith("bias")]
    assert sum(ckpt["state_dict"][k].numel() for k in zero) == 512
    assert all(not ckpt["state_dict"][k].any() for k in zero)
    model = backbones.get("n2s")(**hp)
    model.load_state_dict(ckpt["state_dict"])
    policy = model.policy.double().eval()
    state, obs = _pdtsp_observation(torch.float64)
    assert obs.history[..., :3].sum() == 3 * len(state)          # three removals each
    sd = {k: v.double() for k, v in original["actor"].items()}
    critic = {k: v.double() for k, v in original["critic"].items()}
    pair = torch.tensor([1, 0, 3])
    sig = _original_signature(state)
    enc_ref, removal_ref, table_ref, value_ref = n2s_reference(
        sd, critic, obs.x, obs.succ, obs.route_pos, sig, obs.extra, pair)
    with torch.no_grad():
        h = policy.encoder.forward_observation(obs)
        hs = policy.project_node(h) + policy.project_graph(h.amax(1)).unsqueeze(1)
        removal = policy.clip * torch.tanh(policy.removal(hs, obs.succ, obs.history))
        pickup = pair + 1
        first, second = reinsertion_candidates(state.order, state.rank, pickup,
                                               pickup + state.num_pairs)
        place = policy.clip * torch.tanh(policy.reinsertion(hs, obs.succ, pickup,
                                                            pickup + state.num_pairs,
                                                            first, second))
        value = policy.critic(h, obs.extra)
    place_ref = table_ref[torch.arange(len(pair))[:, None], first, second]
    diffs = {"encoder": (h - enc_ref).abs().max(),
             "removal": (removal - removal_ref).abs().max(),
             "reinsertion": (place - place_ref).abs().max(),
             "value": (value - value_ref).abs().max()}
    assert max(float(d) for d in diffs.values()) < 1e-10, diffs
    # without the column permutation the removal scores would differ
    assert not torch.allclose(obs.history, sig.permute(0, 2, 1))


def test_n2s_float32_and_the_policys_own_decode():
    original = n2s_original_state(seed=1)
    ckpt = import_n2s(original, num_customers=10)
    policy = backbones.get("n2s")(**ckpt["hyper_parameters"]).policy
    policy.load_state_dict({k[len("policy."):]: v for k, v in ckpt["state_dict"].items()})
    policy.eval()
    state, obs = _pdtsp_observation(torch.float32)
    sd = {k: v.double() for k, v in original["actor"].items()}
    critic = {k: v.double() for k, v in original["critic"].items()}
    pair = torch.tensor([2, 4, 0])
    _, removal_ref, _, value_ref = n2s_reference(
        sd, critic, obs.x.double(), obs.succ, obs.route_pos, _original_signature(state),
        obs.extra.double(), pair)
    with torch.no_grad():
        h = policy.encoder.forward_observation(obs)
        hs = policy.project_node(h) + policy.project_graph(h.amax(1)).unsqueeze(1)
        removal = policy.clip * torch.tanh(policy.removal(hs, obs.succ, obs.history))
        value = policy.critic(h, obs.extra)
    assert (removal.double() - removal_ref).abs().max() < 1e-5
    assert (value.double() - value_ref).abs().max() < 1e-5


# ---------------------------------------------------------------------- NDS, original layout
class _Norm(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = torch.nn.InstanceNorm1d(dim, affine=True)

    def forward(self, a, b):
        return self.norm((a + b).transpose(1, 2)).transpose(1, 2)


class _Layer(torch.nn.Module):
    def __init__(self, dim, heads, ff):
        super().__init__()
        self.heads = heads
        self.Wq, self.Wk, self.Wv = (torch.nn.Linear(dim, dim, bias=False) for _ in range(3))
        self.multi_head_combine = torch.nn.Linear(dim, dim)
        self.add_n_normalization_1, self.add_n_normalization_2 = _Norm(dim), _Norm(dim)
        self.feed_forward = torch.nn.Module()
        self.feed_forward.W1, self.feed_forward.W2 = torch.nn.Linear(dim, ff), torch.nn.Linear(ff,
                                                                                             dim)

    def forward(self, x):
        split = lambda t: t.reshape(*t.shape[:2], self.heads, -1).transpose(1, 2)  # noqa: E731
        out = F.scaled_dot_product_attention(split(self.Wq(x)), split(self.Wk(x)),
                                             split(self.Wv(x)))
        x = self.add_n_normalization_1(x, self.multi_head_combine(
            out.transpose(1, 2).reshape(*x.shape)))
        ff = self.feed_forward
        return self.add_n_normalization_2(x, ff.W2(F.relu(ff.W1(x))))


class NDSOriginal(torch.nn.Module):
    """NDS's ``Model`` (CVRP, undirected message passing), restated with its names."""

    def __init__(self, dim=32, heads=4, ff=512, poly=256, z_dim=10, features=3):
        super().__init__()
        self.dim, self.heads = dim, heads
        enc = self.encoder = torch.nn.Module()
        enc.embedding_depot, enc.embedding_node = torch.nn.Linear(2, dim), torch.nn.Linear(
            features, dim)
        enc.layers = torch.nn.ModuleList(_Layer(dim, heads, ff) for _ in range(2))
        enc.tour_layer = torch.nn.Module()
        enc.tour_layer.tour_combiner = torch.nn.Linear(2 * dim, dim)
        enc.tour_layer.feedforward_layer = torch.nn.Linear(dim, dim)
        enc.tour_layer.add_and_normalize = _Norm(dim)
        mp = torch.nn.Module()
        mp.neighbour_projector = torch.nn.Linear(dim, dim, bias=False)
        mp.neighbour_combiner = torch.nn.Linear(2 * dim, dim)
        mp.feedforward_layer = torch.nn.Linear(dim, dim)
        mp.add_and_normalize = _Norm(dim)
        enc.mp_layers = torch.nn.ModuleList([mp])
        enc.layers_2 = torch.nn.ModuleList(_Layer(dim, heads, ff) for _ in range(2))
        dec = self.decoder = torch.nn.Module()
        dec.Wq_last, dec.Wk, dec.Wv = (torch.nn.Linear(dim, dim, bias=False) for _ in range(3))
        dec.multi_head_combine = torch.nn.Linear(dim, dim)
        dec.GRU = torch.nn.GRUCell(dim, dim)
        dec.poly_layer_1, dec.poly_layer_2 = torch.nn.Linear(dim + z_dim, poly), torch.nn.Linear(
            poly, dim)
        self.start_last_node = torch.nn.Parameter(torch.randn(dim))
        with torch.no_grad():                   # non-trivial norm affines
            for name, prm in self.named_parameters():
                if ".norm." in name:
                    prm.uniform_(0.5, 1.5)

    def encode(self, depot_xy, node_feat, neighbours, tour):
        enc = self.encoder
        out = torch.cat([enc.embedding_depot(depot_xy), enc.embedding_node(node_feat)], 1)
        for layer in enc.layers:
            out = layer(out)
        cust, t = out[:, 1:], enc.tour_layer
        sums = torch.zeros(cust.shape[0], int(tour.max()) + 1, self.dim, dtype=cust.dtype)
        sums.scatter_add_(1, tour[:, :, None].expand_as(cust), cust)
        both = torch.cat([cust, sums.gather(1, tour[:, :, None].expand_as(cust))], 2)
        cust = t.add_and_normalize(cust, t.feedforward_layer(F.relu(t.tour_combiner(both))))
        out = torch.cat([out[:, :1], cust], 1)
        for mp in enc.mp_layers:
            near = sum(mp.neighbour_projector(out.gather(1, neighbours[:, :, s, None].expand(
                -1, -1, self.dim))) for s in (0, 1))
            cust = out[:, 1:]
            upd = mp.feedforward_layer(F.relu(mp.neighbour_combiner(torch.cat([cust, near], 2))))
            out = torch.cat([out[:, :1], mp.add_and_normalize(cust, upd)], 1)
        for layer in enc.layers_2:
            out = layer(out)
        return out

    def log_prob(self, enc, z, selected, sqrt_dim, clip=10.0):
        """Teacher-forced: the summed log-probabilities of ``selected [B, K, k]``."""
        dec, (b, m, d), rollouts = self.decoder, enc.shape, z.shape[1]
        split = lambda t: t.reshape(*t.shape[:2], self.heads, -1).transpose(1, 2)  # noqa: E731
        keys, values = split(dec.Wk(enc)), split(dec.Wv(enc))
        mask = torch.zeros(b, rollouts, m, dtype=enc.dtype)
        mask[:, :, 0] = float("-inf")
        last, hidden, total = self.start_last_node.expand(b * rollouts, d), None, 0
        for t in range(selected.shape[-1]):
            hidden = dec.GRU(last, hidden)
            q = split(dec.Wq_last(hidden.reshape(b, rollouts, d)))
            att = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask[:, None])
            mh = dec.multi_head_combine(att.transpose(1, 2).reshape(b, rollouts, d))
            ctx = mh + dec.poly_layer_2(F.relu(dec.poly_layer_1(torch.cat([mh, z], 2))))
            probs = torch.softmax(clip * torch.tanh(ctx @ enc.transpose(1, 2) / sqrt_dim) + mask, 2)
            pick = selected[:, :, t]
            total = total + probs.gather(2, pick[:, :, None]).squeeze(-1).log()
            mask = mask.scatter(2, pick[:, :, None], float("-inf"))
            last = enc.gather(1, pick[:, :, None].expand(-1, -1, d)).reshape(-1, d)
        return total


def _nds_file(model, **extra):
    return {"epoch": 7, "model_state_dict": model.state_dict(), "optimizer_state_dict": {},
            "scheduler_state_dict": {}, "model_params": {"head_num": model.heads},
            "env_params": {"problem_size": 20, "num_nodes_to_remove": 5}, **extra}


def _cvrp_solution(n=20, batch=2, seed=0):
    rng = np.random.default_rng(seed)
    pred, succ, tour = (np.zeros((batch, n), dtype=np.int64) for _ in range(3))
    for b in range(batch):
        for r, route in enumerate(np.array_split(rng.permutation(n) + 1, 4)):
            for i, c in enumerate(route):
                pred[b, c - 1] = route[i - 1] if i else 0
                succ[b, c - 1] = route[i + 1] if i + 1 < len(route) else 0
                tour[b, c - 1] = r
    return (torch.from_numpy(a) for a in (pred, succ, tour))


def test_nds_scores_equal_the_original_network():
    torch.manual_seed(0)
    original = NDSOriginal().double().eval()
    ckpt = import_nds(_nds_file(original), name="checkpoint-7.pt")
    hp = ckpt["hyper_parameters"]
    m = hp["model"]                          # hyper-parameters are the nested recipe
    assert (hp["backbone"], hp["problem"], hp["num_customers"], m["dim"], m["heads"],
            m["layers"], hp["train"]["remove"], hp["pe"]) == \
        ("nds", "cvrp", 20, 32, 4, 4, 5, "none")
    assert ckpt["imported_from"]["epoch"] == 7
    model = backbones.get("nds")(**hp)
    model.load_state_dict(ckpt["state_dict"])
    policy = model.policy.double().eval()
    b, n, rollouts, k = 2, 20, 6, 5
    x = torch.rand(b, n + 1, 3, dtype=torch.float64)
    x[:, 0, 2] = 0
    pred, succ, tour = _cvrp_solution(n, b)
    z = torch.randint(0, 2, (b, rollouts, 10)).double()
    selected = torch.stack([torch.randperm(n)[:k] + 1 for _ in range(b * rollouts)]).view(
        b, rollouts, k)
    with torch.no_grad():
        enc_ref = original.encode(x[:, :1, :2], x[:, 1:], torch.stack([pred, succ], -1), tour)
        ref = original.log_prob(enc_ref, z, selected, math.sqrt(32))
        enc = policy.encoder(x, pred, succ, tour)
        _, log_prob, _ = policy.decode(enc, rollouts, k, selected=selected, z=z)
    assert (enc - enc_ref).abs().max() < 1e-10
    assert (log_prob.double() - ref).abs().max() < 1e-5        # our decoder's softmax: float32


# ---------------------------------------------------------------------- files and the CLI
def test_cli_round_trip_nds_and_search(tmp_path, capsys):
    torch.manual_seed(1)
    original = NDSOriginal()
    file = tmp_path / "checkpoint-7.pt"
    torch.save(_nds_file(original), file)
    code, out, err = run_cli(capsys, "import-checkpoint", "--from", "nds", str(file), "--out",
                             str(tmp_path / "nds.ckpt"), "--json")
    assert code == 0, err
    res = json.loads(out)
    assert (res["backbone"], res["problem"], res["num_customers"]) == ("nds", "cvrp", 20)
    policy = backbones.load_policy(tmp_path / "nds.ckpt", expect_backbone="nds")
    assert torch.equal(policy.start_last_node, original.start_last_node.detach())
    code, out, err = run_cli(capsys, "search", "--destroy", "policy", "--checkpoint",
                             str(tmp_path / "nds.ckpt"), "--test.instances", "1",
                             "--test.steps", "2", "--test.augment", "1", "--test.rollouts",
                             "4", "--test.remove", "5",
                             "--out", str(tmp_path / "s"), "--no-progress", "--json")
    assert code == 0, err
    assert json.loads(out)["rows"][0]["objective"] > 0


def test_cli_round_trip_n2s_and_evaluate(tmp_path, capsys):
    file = tmp_path / "epoch-3.pt"
    torch.save(n2s_original_state(layers=1) | {"optimizer": {}, "rng_state": torch.get_rng_state(),
                                               "cuda_rng_state": []}, file)
    code, out, err = run_cli(capsys, "import-checkpoint", "--from", "n2s", str(file), "--out",
                             str(tmp_path / "n2s.ckpt"), "--num-customers", "6", "--json")
    assert code == 0, err
    policy = backbones.load_policy(tmp_path / "n2s.ckpt", expect_problem="pdtsp")
    assert type(policy).__name__ == "N2SPolicy"
    code, out, err = run_cli(capsys, "evaluate", "--checkpoint", str(tmp_path / "n2s.ckpt"),
                             "--test.instances", "2", "--test.steps", "2",
                             "--reference.solver", "none",
                             "--root", str(tmp_path), "--out", str(tmp_path / "e"), "--json")
    assert code == 0, err
    assert json.loads(out)["cost"] > 0


def test_bad_input_is_one_line_naming_the_file_and_key(tmp_path, capsys):
    state = n2s_original_state(layers=1)
    with pytest.raises(CorruptFileError, match=r"f\.pt: no 'decoder.compater_removal.W_Q'"):
        actor = dict(state["actor"])
        del actor["decoder.compater_removal.W_Q"]
        import_n2s({"actor": actor, "critic": state["critic"]}, num_customers=6, name="f.pt")
    with pytest.raises(CorruptFileError, match=r"'value_head.MLP.fc2.weight' has shape"):
        critic = dict(state["critic"]) | {"value_head.MLP.fc2.weight": torch.zeros(32, 128)}
        import_n2s({"actor": state["actor"], "critic": critic}, num_customers=6)
    with pytest.raises(CorruptFileError, match="unexpected key 'encoder.0.MHA_sublayer.Norm"):
        actor = dict(state["actor"]) | {"encoder.0.MHA_sublayer.Norm.normalizer.weight":
                                        torch.ones(128)}
        import_n2s({"actor": actor, "critic": state["critic"]}, num_customers=6)
    with pytest.raises(CorruptFileError, match="not an NDS checkpoint .no 'model_state_dict'"):
        import_nds(state, name="x.pt")
    with pytest.raises(ValueError, match="unknown original 'lkh'"):
        import_original("lkh", tmp_path / "x.pt")
    ours = tmp_path / "ours.ckpt"
    torch.save({"state_dict": {}, "hyper_parameters": {"backbone": "n2s"}}, ours)
    code, _, err = run_cli(capsys, "import-checkpoint", "--from", "n2s", str(ours), "--out",
                           str(tmp_path / "o.ckpt"), "--num-customers", "6")
    assert code == 2 and err.count("\n") == 1 and f"{ours} is not an N2S checkpoint" in err
    code, _, err = run_cli(capsys, "import-checkpoint", "--from", "n2s", str(ours), "--out",
                           str(tmp_path / "o.ckpt"))
    assert code == 2 and "--num_customers" in err
    code, _, err = run_cli(capsys, "import-checkpoint", "--from", "lkh", str(ours), "--out",
                           str(tmp_path / "o.ckpt"))
    assert code == 2 and "invalid choice: 'lkh'" in err and err.count("\n") == 1
    code, _, err = run_cli(capsys, "import-checkpoint", "--from", "nds", str(tmp_path / "no.pt"),
                           "--out", str(tmp_path / "o.ckpt"))
    assert code == 2 and "no.pt" in err and not (tmp_path / "o.ckpt").exists()
