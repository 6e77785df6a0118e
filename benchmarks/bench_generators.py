"""Sampling 10 000 CVRP-100 instances: batched generator vs one instance at a time."""

from __future__ import annotations

import argparse

import torch
from _timing import best_of

from pyg_routing.data.generators import CVRPGenerator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--instances", type=int, default=10_000)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(torch.get_num_threads())
    gen = CVRPGenerator(100, seed=0, device=args.device)
    batched = best_of(lambda: gen.sample(args.instances), device=args.device)
    one_by_one_n = min(args.instances, 1000)
    loop = best_of(lambda: [gen.sample(1) for _ in range(one_by_one_n)], repeat=2,
                   device=args.device) * args.instances / one_by_one_n
    clustered = CVRPGenerator(100, seed=0, distribution="clustered", device=args.device)
    clu = best_of(lambda: clustered.sample(args.instances), repeat=1, device=args.device)
    print(f"CVRP-100 x {args.instances} on {args.device}")
    print(f"  batched uniform     : {batched * 1e3:8.1f} ms")
    print(f"  one-by-one (scaled) : {loop * 1e3:8.1f} ms   -> batched is {loop / batched:6.1f}x")
    print(f"  batched clustered   : {clu * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
