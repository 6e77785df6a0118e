"""N2S against its arithmetic floor: a search step at PDP-101 (100 customers, batch
64, N2S's model: width 128, 3 layers, 4 heads, its cyclic code), ``--customers 50``
for PDP-51.

Rows, interleaved round by round (medians of ``--rounds``, one torch thread, CPU
time; see ``_floor.py``):

* ``ours: search step``: what :class:`~pyg_routing.search.StepSearch` does per step:
  the observation, the policy's action (encoder with the CPE scores, removal and
  reinsertion decoders, sampling) and the environment's step;
* ``ours: policy``: the policy's action alone on a fixed observation;
* ``floor``: the architecture's arithmetic at the same shapes, CPE scores, pair MLPs
  and decoders included (``_n2s_floor.py``);
* with ``--compiled``, ``compiled: search step`` and ``compiled: policy``: the same
  policy with its search path (encoder and both decoders) under ``torch.compile``
  (:mod:`pyg_routing.models.compiled`).

``--train`` adds a PPO update of the same batch (forward with gradients of actor
and critic scoring the sampled actions, and the backward) against the floor's
forward of actor and critic and two products per product for the backward.
"""

from __future__ import annotations

import argparse

import torch
from _floor import (
    add_device_arguments,
    as_a_command,
    compiled_copy,
    interleaved,
    machine_line,
    print_table,
    run_ops,
    search_runners,
    under_precision,
    use_device,
)
from _n2s_floor import N2SFloor

from pyg_routing.data.generators import make_generator
from pyg_routing.envs import PairReinsertionEnv
from pyg_routing.models import N2SPolicy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--customers", type=int, default=100)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--pe", default="dact_cpe")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--train", action="store_true", help="add the PPO-update rows")
    parser.add_argument("--compiled", action="store_true",
                        help="add the rows of the same policy with its search path under "
                             "torch.compile (pyg_routing.models.compiled; the warm-up "
                             "round compiles)")
    add_device_arguments(parser)
    args = parser.parse_args()
    as_a_command()
    device = use_device(args.device, args.precision)
    torch.manual_seed(0)
    inst = make_generator("pdtsp", args.customers, seed=0).sample(args.batch).to(device)
    env = PairReinsertionEnv()
    state = env.reset(inst, init="random", generator=torch.Generator().manual_seed(0))
    b, m = state.order.shape
    policy = N2SPolicy.build("pdtsp", pe=args.pe).to(device)
    enc = policy.encoder
    fixed = env.policy_observation(state, torch.float32)
    floor = N2SFloor(b, m, enc.dim, enc.heads, len(enc.layers),
                     enc.layers[0].ff[0].out_features, max(enc.pe_width, 1))
    runners = search_runners(env, state, policy, args.precision)
    if args.compiled:
        runners |= search_runners(env, state, compiled_copy(policy), args.precision,
                                  label="compiled")
    ours = list(runners)
    runners["floor"] = (lambda: run_ops(floor.search), 1)
    gen = torch.Generator(device=device).manual_seed(0)
    if args.train:
        prepared = policy.prepare(fixed)
        with torch.no_grad():
            actions = policy.act(prepared, generator=gen)

        def ppo_update() -> None:
            policy.train()
            policy.zero_grad(set_to_none=True)
            _, log_prob, entropy, value = policy(prepared, action=actions, detach_critic=True)
            (log_prob.mean() + entropy.mean() + value.square().mean()).backward()

        runners["ours: PPO update"] = (under_precision(ppo_update, args.precision), 1)
        runners["floor: PPO update"] = (
            lambda: (run_ops(floor.actor_critic), run_ops(floor.backward)), 1)
    print(machine_line())
    print(f"N2S PDP-{args.customers + 1}, batch {b}, {enc!r}; {args.rounds} interleaved "
          f"rounds")
    rows = interleaved(runners, args.rounds)
    print_table("search (no gradient)", {k: v for k, v in rows.items() if "PPO" not in k},
                "floor", ours)
    if args.train:
        print_table("training", {k: v for k, v in rows.items() if "PPO" in k},
                    "floor: PPO update", ["ours: PPO update"])
    print(machine_line())


if __name__ == "__main__":
    main()
