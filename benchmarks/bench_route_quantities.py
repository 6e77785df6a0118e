"""Route quantities of 1 024 CVRP-100 solutions: batched pointer jumping vs a naive
per-instance Python loop (and vs our own function called instance by instance)."""

from __future__ import annotations

import argparse
import random

import torch
from _timing import best_of

from pyg_routing.data import dense_route_quantities
from pyg_routing.data.generators import CVRPGenerator
from pyg_routing.data.naive import naive_route_quantities


def random_tours(b: int, n: int, rng: random.Random) -> tuple[torch.Tensor, list]:
    """Random CVRP-like solutions: a shuffled giant tour cut every ~10 customers."""
    all_routes, tours = [], []
    for _ in range(b):
        perm = list(range(1, n + 1))
        rng.shuffle(perm)
        routes = [perm[i:i + 10] for i in range(0, n, 10)]
        all_routes.append(routes)
        tour = [0]
        for r in routes:
            tour += r + [0]
        tours.append(tour)
    return torch.tensor(tours), all_routes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--customers", type=int, default=100)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    b, n, dev = args.batch, args.customers, args.device
    pos = CVRPGenerator(n, seed=0).sample(b).pos
    tours, routes = random_tours(b, n, random.Random(0))
    pos_d, tours_d = pos.to(dev), tours.to(dev)

    batched = best_of(lambda: dense_route_quantities(pos_d, tours_d), device=dev)
    per_instance = best_of(lambda: [dense_route_quantities(pos_d[i:i + 1], tours_d[i:i + 1])
                                    for i in range(b)], repeat=2, device=dev)
    naive = best_of(lambda: [naive_route_quantities(pos[i], routes[i]) for i in range(b)],
                    repeat=2)
    print(f"route quantities, {b} x CVRP-{n} solutions, device {dev}")
    print(f"  batched (one call)            : {batched * 1e3:9.2f} ms")
    print(f"  our function, instance loop   : {per_instance * 1e3:9.2f} ms "
          f"-> batched is {per_instance / batched:7.1f}x faster")
    print(f"  naive Python loop (reference) : {naive * 1e3:9.2f} ms "
          f"-> batched is {naive / batched:7.1f}x faster")


if __name__ == "__main__":
    main()
