"""Batched IPE+XPE for 512 CVRP-100 solutions (dim 128) as a share of one forward
pass of a 3-layer, 128-wide, 8-head ``torch.nn.TransformerEncoder`` on the same batch
(target: <= 5 %). Also reports the share including the route quantities themselves."""

from __future__ import annotations

import argparse

import torch
from _timing import best_of

from pyg_routing.data import CVRPGenerator, dense_route_quantities
from pyg_routing.data.solvers.constructive import sweep
from pyg_routing.functional.route_pe import ipexpe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--customers", type=int, default=100)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    dev = args.device
    inst = CVRPGenerator(args.customers, seed=0).sample(args.batch)
    tours = sweep(inst).to(dev)
    pos = inst.pos.to(dev)
    b, n = pos.shape[:2]
    rq = dense_route_quantities(pos, tours)
    depot = torch.zeros(b, n, dtype=torch.bool, device=dev)
    depot[:, 0] = True

    def pe_only():
        return ipexpe(rq.cum_dist, rq.route_length, rq.depot_angle, args.dim - 8, 4,
                      route_pos=rq.route_pos, depot_mask=depot.view(-1))

    def with_quantities():
        q = dense_route_quantities(pos, tours, depot_angle=rq.depot_angle.view(b, n))
        return ipexpe(q.cum_dist, q.route_length, q.depot_angle, args.dim - 8, 4,
                      route_pos=q.route_pos, depot_mask=depot.view(-1))

    layer = torch.nn.TransformerEncoderLayer(args.dim, 8, 4 * args.dim, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 3, enable_nested_tensor=False).to(dev).eval()
    x = torch.randn(b, n, args.dim, device=dev)

    @torch.no_grad()
    def forward():
        return model(x)

    t_pe = best_of(pe_only, device=dev)
    t_rq = best_of(with_quantities, device=dev)
    t_fw = best_of(forward, repeat=3, device=dev)
    print(f"{b} x CVRP-{args.customers}, dim {args.dim}, device {dev}")
    print(f"  transformer forward (3 layers)  : {t_fw * 1e3:8.1f} ms")
    print(f"  IPE+XPE from route quantities   : {t_pe * 1e3:8.1f} ms = {100 * t_pe / t_fw:5.2f} %")
    print(f"  route quantities + IPE+XPE      : {t_rq * 1e3:8.1f} ms = {100 * t_rq / t_fw:5.2f} %")


if __name__ == "__main__":
    main()
