"""NDS's learned destroy against its arithmetic floor, at the sizes users run
(CVRP-500 and CVRP-1000, NDS's test search: 8 slots x 200 rollouts x 15 picks).

Rows, interleaved round by round (medians of ``--rounds``, one torch thread, CPU
time; see ``_floor.py``), with an untrained NDS policy (weights do not change the
time) on the CPU:

* ``ours: decoder``: the 15 picks of 1 600 rollouts from given encoder outputs
  (``NDSPolicy.decode`` without gradients: the search's tail, :mod:`pyg_routing.
  models.nds.tail`);
* ``ours: policy``: the encoder pass of the 8 slots and the decoder;
* ``ours: propose``: ``PolicyDestroy.propose``, what one search iteration asks
  of the policy (the observation of the slots, the policy, the sets as numpy);
* ``floor: decoder``: per pick the GRU's two products (``R x D x 3D``, ``R = 1 600``),
  the glimpse's query projection, its masked attention (``8 x 8`` heads of ``200``
  queries over ``M = N + 1`` keys) and output projection, the PolyNet MLP
  (``R x (D + 10) x 256``, ``R x 256 x D``), the compatibilities (``8 x 200 x D x M``)
  and the softmax over ``M``; once, the keys and values (``8 M x D x D`` twice);
* ``floor: policy``: that and the encoder: the embeddings, 4 Transformer layers (4
  projections ``8 M x D x D``, the attention of 8 heads of 16 over ``M``, the
  feed-forward ``D -> 512 -> D``, 2 instance norms), the tour layer (``2D -> D``,
  ``D -> D``, a norm) and the message-passing layer (the neighbour projection of
  both neighbours, ``2D -> D``, ``D -> D``, a norm).

``floor: policy`` is also the floor of ``ours: propose`` (the observation and the
conversion are not the architecture's).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from _floor import (
    add_device_arguments,
    as_a_command,
    attention,
    gemms,
    instance_norm,
    interleaved,
    machine_line,
    print_table,
    run_ops,
    softmax,
    under_precision,
    use_device,
)

from pyg_routing.data.generators import make_generator
from pyg_routing.envs.deconstruction import PolicyDestroy, ProblemArrays, start_solutions
from pyg_routing.models import NDSPolicy


def decoder_floor(policy: NDSPolicy, slots: int, rollouts: int, m: int, picks: int) -> list:
    dec = policy.decoder
    d, h, r = dec.dim, dec.heads, slots * rollouts
    poly = dec.poly_layer_1.out_features
    once = gemms([(1, slots * m, d, d)] * 2)
    step = gemms([(1, r, d, 3 * d), (1, r, d, 3 * d), (1, r, d, d), (1, r, d, d),
                  (1, r, d + dec.z_dim, poly), (1, r, poly, d), (slots, rollouts, d, m)])
    step += [attention(slots, h, rollouts, d // h, keys=m, mask=True), softmax(r, m)]
    return once + step * picks


def encoder_floor(policy: NDSPolicy, slots: int, m: int) -> list:
    enc = policy.encoder
    d, h, n = enc.dim, enc.heads, m - 1
    ff = enc.layers[0].feed_forward.W1.out_features
    ops = gemms([(1, slots, 2, d), (1, slots * n, enc.in_features + enc.pe_width, d)])
    for _ in range(len(enc.layers) + len(enc.layers_2)):
        ops += gemms([(1, slots * m, d, d)] * 4 + [(1, slots * m, d, ff),
                                                   (1, slots * m, ff, d)])
        ops += [attention(slots, h, m, d // h), instance_norm(slots, d, m),
                instance_norm(slots, d, m)]
    ops += gemms([(1, slots * n, 2 * d, d), (1, slots * n, d, d)]) + [instance_norm(slots, d, n)]
    for _ in enc.mp_layers:
        ops += gemms([(1, slots * n, d, d)] * 2 + [(1, slots * n, 2 * d, d),
                                                   (1, slots * n, d, d)])
        ops += [instance_norm(slots, d, n)]
    return ops


def rows_for(customers: int, args: argparse.Namespace) -> None:
    torch.manual_seed(0)
    instances = make_generator("cvrp", customers, seed=1234, preset="nds").sample(1)
    arrays = ProblemArrays.from_instances(instances)
    state = start_solutions(arrays, np.zeros(args.slots, np.int32),
                            rng=np.random.default_rng(0))
    device = torch.device(args.device)
    policy = NDSPolicy.build("cvrp", pe=args.pe).eval().to(device)
    # --precision, not PolicyDestroy's default (fp16 autocast on CUDA), sets every row's
    # dtype; the observation stays fp32 inside propose either way
    destroy = PolicyDestroy(policy, instances, autocast=False)
    obs = destroy.observe(state)
    m = customers + 1
    with torch.no_grad():
        h = under_precision(lambda: policy.embed(obs), args.precision)()
    gen = torch.Generator(device=device).manual_seed(0)
    rng = np.random.default_rng(0)

    def decoder() -> None:
        with torch.no_grad():
            policy.decode(h, args.rollouts, args.picks, generator=gen)

    def whole() -> None:
        with torch.no_grad():
            policy(obs, args.rollouts, args.picks, generator=gen)

    dec_floor = decoder_floor(policy, args.slots, args.rollouts, m, args.picks)
    pol_floor = encoder_floor(policy, args.slots, m) + dec_floor
    decoder = under_precision(decoder, args.precision)
    whole = under_precision(whole, args.precision)
    propose = under_precision(lambda: destroy.propose(state, arrays, args.rollouts, rng),
                              args.precision)
    runners = {"ours: decoder": (decoder, 1), "floor: decoder": (lambda: run_ops(dec_floor), 1),
               "ours: policy": (whole, 1),
               "ours: propose": (propose, 1),
               "floor: policy": (lambda: run_ops(pol_floor), 1)}
    print(f"\nNDS CVRP-{customers} (NDS preset), {args.slots} slots x {args.rollouts} rollouts "
          f"x {args.picks} picks, pe={args.pe}; {args.rounds} interleaved rounds")
    rows = interleaved(runners, args.rounds)
    print_table("decoder", {k: rows[k] for k in ("ours: decoder", "floor: decoder")},
                "floor: decoder", ["ours: decoder"])
    print_table("policy", {k: rows[k] for k in ("ours: policy", "ours: propose",
                                                "floor: policy")},
                "floor: policy", ["ours: policy", "ours: propose"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--customers", default="500,1000")
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--rollouts", type=int, default=200)
    parser.add_argument("--picks", type=int, default=15)
    parser.add_argument("--pe", default="none")
    parser.add_argument("--rounds", type=int, default=5)
    add_device_arguments(parser)
    args = parser.parse_args()
    as_a_command()
    use_device(args.device, args.precision)
    print(machine_line())
    for n in (int(x) for x in args.customers.split(",")):
        rows_for(n, args)
    print(machine_line())


if __name__ == "__main__":
    main()
