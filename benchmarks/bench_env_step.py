"""One step of the DACT-style 2-opt environment for 512 CVRP-100 instances: apply the
move, update costs and best-so-far, recompute the route quantities and IPE+XPE, build
the feasibility masks (and node features) -- batched vs a per-instance Python loop of
the same step (our functions called on ``B = 1`` slices). Then the same step on the
same layouts with an asymmetric cost matrix (``costs="streets"``: every reversed arc
changes cost), as a ratio to the Euclidean step measured in the same run (the issue's
bound: within 1.5x), and the exact deltas of all ``M^2`` moves (``move_deltas``)."""

from __future__ import annotations

import argparse

import torch
from _timing import best_of

from pyg_routing.data.generators import CVRPGenerator
from pyg_routing.envs.two_opt import (
    TwoOptState,
    action_mask,
    node_features,
    positional_encoding,
    random_action,
    reset,
    step,
)
from pyg_routing.envs.two_opt.moves import move_deltas


def env_step(state: TwoOptState, action: torch.Tensor) -> tuple:
    """Everything a policy needs after one move."""
    state, reward = step(state, action)
    return state, reward, positional_encoding(state), action_mask(state), node_features(state)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--customers", type=int, default=100)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    b, n, dev = args.batch, args.customers, args.device
    inst = CVRPGenerator(n, seed=0).sample(b).to(dev)
    state = reset(inst, "sweep")
    action = random_action(state, generator=torch.Generator().manual_seed(0))
    singles = [state[i] for i in range(b)]
    actions = [action[i:i + 1] for i in range(b)]

    batched = best_of(lambda: env_step(state, action), device=dev)
    looped = best_of(lambda: [env_step(s, a) for s, a in zip(singles, actions)],
                     repeat=2, device=dev)
    print(f"2-opt env step (move, costs, IPE+XPE, masks, features), {b} x CVRP-{n} "
          f"(M = {state.num_nodes} nodes incl. {state.num_depots} dummy depots), device {dev}")
    print(f"  batched (one call)          : {batched * 1e3:9.2f} ms")
    print(f"  per-instance Python loop    : {looped * 1e3:9.2f} ms "
          f"-> batched is {looped / batched:7.1f}x faster")
    moved, _ = step(state, action)
    parts = {"apply move + costs": lambda: step(state, action),
             "route quantities + IPE+XPE": lambda: positional_encoding(moved),
             "masks": lambda: action_mask(moved),
             "node features": lambda: node_features(moved)}
    for name, fn in parts.items():
        print(f"    batched {name:<27}: {best_of(fn, device=dev) * 1e3:9.2f} ms")

    asym = CVRPGenerator(n, seed=0, costs="streets").sample(b).to(dev)
    a_state = reset(asym, "sweep")
    a_action = random_action(a_state, generator=torch.Generator().manual_seed(0))
    euclid = best_of(lambda: env_step(state, action), device=dev)
    matrix = best_of(lambda: env_step(a_state, a_action), device=dev)
    print(f"  asymmetric matrix (streets), same step: {matrix * 1e3:9.2f} ms "
          f"-> {matrix / euclid:5.2f}x the Euclidean step ({euclid * 1e3:.2f} ms, same run)")
    deltas = best_of(lambda: move_deltas(a_state), device=dev)
    print(f"    exact deltas of all {a_state.num_nodes}^2 moves (move_deltas): "
          f"{deltas * 1e3:9.2f} ms -> {deltas / matrix:5.2f}x the step")


if __name__ == "__main__":
    main()
