"""DACT against its arithmetic floor: a search step at the size users run (CVRP-100,
batch 512; ``--problem tsp --customers 50 --batch 64`` for the issue's TSP row), with
the GPS network (``--encoder gps``, the default here) or DACT's own network
(``--encoder native``, the recipes' default), each against its own floor.

Rows, interleaved round by round (medians of ``--rounds``, one torch thread, CPU
time; see ``_floor.py``):

* ``ours: search step``: what :class:`~pyg_routing.search.StepSearch` does per step:
  the observation (features, masks, route quantities), the policy's move (encoder
  with its node code, pair decoder, sampling) and the environment's step;
* ``ours: policy``: the policy's move alone on a fixed observation;
* with ``--compiled``, ``compiled: search step`` and ``compiled: policy``: the same
  policy with its search path (encoder and decoder) under ``torch.compile``
  (:mod:`pyg_routing.models.compiled`);
* ``floor``: the architecture's arithmetic at the same shapes (``M`` nodes with the
  depot copies, ``N = B * M`` rows): the input projection of features and node code
  (``N x (F + W) x D``, ``N x D x D``); per layer the two directed GINs (4 products
  ``N x D x D``), the attention's ``N x D x 3D`` and ``N x D x D`` projections and
  its fused kernel over ``B x H`` heads of ``M x D/H``, the feed-forward block
  (``N x D x 2D``, ``N x 2D x D``) and 3 layer norms; the decoder's query and key
  projections, the per-head compatibilities (``B H x M x D/H x M``), the pair MLP
  over all ``B M^2`` pairs (``H -> hidden`` and ``hidden -> 1``) and the softmax over
  the ``M^2`` moves.
* ``floor`` of ``--encoder native``: the input projection (``N x F x D``; a node code
  of another width than ``D`` through ``N x W x D``); per layer and aspect the
  per-head queries and keys (``N x D x D`` each) and the two value sets (``N x D x
  2D``), the fused attention kernel for each of the four (aspect, value set) reads
  (``B x H`` heads of ``M x D/H``), the output map (``N x 2D x D``), the feed-forward
  block (``N x D x F``, ``N x F x D``) and two instance norms; the decoder's
  refinement per aspect (``N x D x D``, ``B x D x D``), its full-width per-head
  queries and keys (``N x D x H D`` each), the compatibilities (``B H x M x D x M``),
  the aggregation MLP over all ``B M^2`` pairs (``2H -> 32 -> 32 -> 1``) and the
  softmax over the moves.

``--train`` adds a PPO update of the same batch: the forward with gradients of the
actor and the critic scoring the sampled moves, and the backward (``ours: PPO
update``), against the floor's forward and two products per product for the
backward (the input and the weight gradient), the attention as its forward and
twice its products (``floor: PPO update``).
"""

from __future__ import annotations

import argparse

import torch
from _floor import (
    add_device_arguments,
    as_a_command,
    attention,
    backward_shapes,
    compiled_copy,
    gemms,
    interleaved,
    layer_norm,
    machine_line,
    print_table,
    run_ops,
    search_runners,
    softmax,
    under_precision,
    use_device,
)

from pyg_routing.data.generators import make_generator
from pyg_routing.envs.two_opt import TwoOptEnv
from pyg_routing.functional.chunks import keeps_activations
from pyg_routing.models import DACTPolicy


def floor_shapes(policy: DACTPolicy, b: int, m: int) -> tuple[list, list]:
    """The products ``(batch, rows, inner, cols)`` of one forward, and the rest (the
    attention calls, norms and the softmax) as ``(kind, args)``."""
    enc = policy.encoder
    d, h, n = enc.dim, enc.heads, b * m
    hidden = policy.decoder.mix[0].out_features
    heads = policy.decoder.heads
    shapes = [(1, n, enc.in_channels + enc.pe_width, d), (1, n, d, d)]
    rest: list[tuple[str, tuple]] = []
    for layer in enc.layers:
        gins = sum(conv is not None for conv in (layer.local, layer.local_rev))
        shapes += [(1, n, d, d)] * (2 * gins)
        shapes += [(1, n, d, 3 * d), (1, n, d, d), (1, n, d, 2 * d), (1, n, 2 * d, d)]
        rest += [("attention", (b, h, m, d // h))]
        rest += [("norm", (n, d))] * (3 if gins else 2)
    shapes += [(1, n, d, d), (1, n, d, d), (b * heads, m, d // heads, m)]
    shapes += [(1, b * m * m, heads, hidden), (1, b * m * m, hidden, 1)]
    rest += [("softmax", (b, m * m))]
    return shapes, rest


def native_floor_shapes(policy: DACTPolicy, b: int, m: int) -> tuple[list, list]:
    """:func:`floor_shapes` of DACT's own network (``--encoder native``)."""
    enc, dec = policy.encoder, policy.decoder
    d, h, n = enc.dim, enc.heads, b * m
    shapes = [(1, n, enc.in_channels, d)]
    if enc.pos_embed is not None:
        shapes += [(1, n, enc.pos_embed.in_features, d)]
    rest: list[tuple[str, tuple]] = []
    for layer in enc.layers:
        ff = layer.ff[0][0].out_features
        per_aspect = [(1, n, d, d), (1, n, d, d), (1, n, d, 2 * d), (1, n, 2 * d, d),
                      (1, n, d, ff), (1, n, ff, d)]
        shapes += per_aspect * 2
        rest += [("attention", (b, h, m, d // h))] * 4 + [("norm", (b, m * d))] * 4
    mix = [layer for layer in dec.mix if isinstance(layer, torch.nn.Linear)]
    shapes += [(1, n, d, d), (1, b, d, d), (1, n, d, dec.heads * d),
               (1, n, d, dec.heads * d), (b * dec.heads, m, d, m)] * 2
    shapes += [(1, b * m * m, lin.in_features, lin.out_features) for lin in mix]
    rest += [("softmax", (b, m * m))]
    return shapes, rest


def native_critic(policy: DACTPolicy, b: int, m: int) -> tuple[list, list, list]:
    """DACT's critic (:class:`~pyg_routing.models.dact.DACTCritic`): its products, its
    attention and norms, and its attention's products (for the backward)."""
    critic = policy.critic
    w, h = critic.dim, critic.heads
    e, n = w // h, b * m
    value = [lin for lin in critic.value_mlp if isinstance(lin, torch.nn.Linear)]
    shapes = [(1, n, w, h * e)] * 3 + [(1, n, h * e, w), (1, n, w, critic.ff[0].out_features),
                                       (1, n, critic.ff[0].out_features, w), (1, n, w, w),
                                       (1, b, w, w)]
    shapes += [(1, b, lin.in_features, lin.out_features) for lin in value]
    rest = [("attention", (b, h, m, e))] + [("norm", (b, m * w))] * 2
    return shapes, rest, [(b * h, m, e, m), (b * h, m, m, e)]


def floor_ops(shapes: list, rest: list) -> list:
    ops = gemms(shapes)
    for kind, args in rest:
        ops.append({"attention": attention, "norm": layer_norm, "softmax": softmax}[kind](*args))
    return ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--problem", default="cvrp")
    parser.add_argument("--customers", type=int, default=100)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--pe", default="ipexpe")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--train", action="store_true", help="add the PPO-update rows")
    parser.add_argument("--encoder", default="gps", choices=["gps", "native"],
                        help="native: DACT's own network (the recipes' default), against "
                             "its own floor")
    parser.add_argument("--compiled", action="store_true",
                        help="add the rows of the same policy with its search path under "
                             "torch.compile (pyg_routing.models.compiled; the warm-up "
                             "round compiles)")
    add_device_arguments(parser)
    args = parser.parse_args()
    as_a_command()
    device = use_device(args.device, args.precision)
    torch.manual_seed(0)
    inst = make_generator(args.problem, args.customers, seed=0).sample(args.batch).to(device)
    env = TwoOptEnv()
    state = env.reset(inst, init="random", generator=torch.Generator().manual_seed(0))
    b, m = state.order.shape
    policy = DACTPolicy.build(args.problem, pe=args.pe, encoder=args.encoder).to(device)
    gen = torch.Generator(device=device).manual_seed(0)
    fixed = env.policy_observation(state, torch.float32)
    runners = search_runners(env, state, policy, args.precision)
    if args.compiled:
        runners |= search_runners(env, state, compiled_copy(policy), args.precision,
                                  label="compiled")
    ours = list(runners)
    native = args.encoder == "native"
    shapes, rest = (native_floor_shapes if native else floor_shapes)(policy, b, m)
    forward = floor_ops(shapes, rest)
    runners["floor"] = (lambda: run_ops(forward), 1)
    if args.train:
        policy.train()
        prepared = policy.prepare(fixed)
        with torch.no_grad():
            moves = policy.act(prepared, generator=gen)

        def ppo_update() -> None:
            policy.train()
            policy.zero_grad(set_to_none=True)
            _, log_prob, entropy, value = policy(prepared, action=moves, detach_critic=True)
            (log_prob.mean() + entropy.mean() + value.square().mean()).backward()

        # the attention's backward as twice its two products (scores, values)
        enc = policy.encoder
        d, h = enc.dim, enc.heads
        reads = 4 if native else 1            # DACT: four (aspect, value set) reads a layer
        att = [(b * h, m, d // h, m), (b * h, m, m, d // h)] * reads * len(enc.layers)
        if native:
            critic, critic_rest, critic_att = native_critic(policy, b, m)
            att += critic_att
        else:
            critic, critic_rest = [(1, b, 2 * d + 2, 64), (1, b, 64, 1)], []
        backward = gemms(backward_shapes(shapes + critic + att))
        training = forward + floor_ops(critic, critic_rest) + backward
        runners["floor: PPO update"] = (lambda: run_ops(training), 1)
        runners["ours: PPO update"] = (under_precision(ppo_update, args.precision), 1)
    print(machine_line())
    print(f"DACT {args.problem.upper()}-{args.customers}, batch {b}, M = {m} nodes "
          f"(incl. depot copies), {policy.encoder!r}, decoder {policy.decoder!r}; "
          f"{args.rounds} interleaved rounds")
    rows = interleaved(runners, args.rounds)
    search_rows = {k: v for k, v in rows.items() if "PPO" not in k}
    print_table("search (no gradient)", search_rows, "floor", ours)
    if args.train:
        print_table("training", {k: v for k, v in rows.items() if "PPO" in k},
                    "floor: PPO update", ["ours: PPO update"])
        if native:
            print(kept_line(policy, b, m, device))
    print(machine_line())


def kept_line(policy: DACTPolicy, b: int, m: int, device: torch.device) -> str:
    """Whether the PPO update's decoder slices keep their activations or recompute them
    (:func:`~pyg_routing.functional.chunks.keeps_activations`, judged on the memory free
    at the call: in this process the floor's tensors hold some of it)."""
    saved = policy.decoder._saved_bytes(torch.empty(b, m, 2 * policy.encoder.dim))
    kept = keeps_activations(saved, device, up_to_free=True)
    return (f"DACT's decoder in the PPO update: its slices save {saved / 2**20:,.0f} MB, "
            f"{'kept' if kept else 'recomputed in the backward'} with the memory free now")


if __name__ == "__main__":
    main()
