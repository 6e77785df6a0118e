"""The encoder of a search step: ``GPSEncoder.forward_dense`` on dense batches of giant
tours (TSP-50 batch 64 and CVRP-100 batch 512, width 64, 3 layers, No PE so only the
layers are timed), forward alone and forward + backward.

Rows, all in the same run:

* ``directed, gather``: the default encoder as the search loops call it (``succ=``):
  each node's predecessor and successor rows are gathered;
* ``directed, scatter``: the same model given only ``edge_index``: PyG's ``GINConv``
  scatters over the arcs (the baseline of the ratio);
* ``undirected`` and ``none``: the other ``local_mp`` settings, for scale.
"""

from __future__ import annotations

import argparse
import math

import torch
from _timing import best_of

from pyg_routing.data.generators import make_generator
from pyg_routing.data.route_quantities import edge_index_from_successors
from pyg_routing.envs.two_opt import node_features, reset
from pyg_routing.models import GPSEncoder

SETTINGS = (("tsp", 50, 64), ("cvrp", 100, 512))


def timings(problem: str, n: int, b: int, device: str, rounds: int) -> dict[str, list]:
    """Best ``[forward, forward + backward]`` seconds per row; every round times every
    row once in turn, so a slow phase of the machine hits all rows alike."""
    inst = make_generator(problem, n, seed=0).sample(b).to(device)
    state = reset(inst, init="random", generator=torch.Generator().manual_seed(0))
    x = node_features(state).float()
    arcs = edge_index_from_successors(state.succ)
    calls: dict[str, tuple] = {}
    for name, local_mp, succ in (("directed, gather", "directed", state.succ),
                                 ("directed, scatter", "directed", None),
                                 ("undirected", "undirected", None),
                                 ("none", "none", None)):
        torch.manual_seed(0)
        enc = GPSEncoder(x.size(-1), 64, 4, 3, pe="none", local_mp=local_mp).to(device)

        def forward(enc=enc, succ=succ) -> None:
            with torch.no_grad():
                enc.forward_dense(x, arcs, succ=succ)

        def train(enc=enc, succ=succ) -> None:
            enc.zero_grad()
            enc.forward_dense(x, arcs, succ=succ).square().mean().backward()

        calls[name] = (forward, train)
    best = {name: [math.inf, math.inf] for name in calls}
    for _ in range(rounds):
        for name, fns in calls.items():
            for k, fn in enumerate(fns):
                best[name][k] = min(best[name][k], best_of(fn, 1, device))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    for problem, n, b in SETTINGS:
        rows = timings(problem, n, b, args.device, args.rounds)
        base_f, base_t = rows["directed, scatter"]
        print(f"\n{problem.upper()}-{n}, batch {b}, {args.device} "
              f"(ms; ratio = directed scatter / row)")
        print(f"{'encoder':<20}{'forward':>10}{'ratio':>8}{'fwd+bwd':>10}{'ratio':>8}")
        for name, (f, t) in rows.items():
            print(f"{name:<20}{1e3 * f:>10.2f}{base_f / f:>7.2f}x{1e3 * t:>10.2f}"
                  f"{base_t / t:>7.2f}x")


if __name__ == "__main__":
    main()
