"""Batched IPE+XPE for 512 CVRP-100 solutions (dim 128) as a share of one forward
pass of a 3-layer, 128-wide, 8-head ``torch.nn.TransformerEncoder`` on the same batch
(target: <= 5 %). Also reports the share including the route quantities themselves, and
the two ablation variants (index-based IPE, per-route XPE of every aggregation) beside
the paper's code: they run per search step too, batched with no loop over routes, so
their rows stay within a small factor of the per-node code at any batch size."""

from __future__ import annotations

import argparse

import torch
from _timing import best_of

from pyg_routing.data import CVRPGenerator, dense_route_quantities
from pyg_routing.data.solvers.constructive import sweep
from pyg_routing.functional.index_pe import route_sizes
from pyg_routing.functional.route_angle import route_angle
from pyg_routing.functional.route_pe import index_ipe, ipexpe, xpe
from pyg_routing.options import AGGREGATIONS


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
    # the ablation variants (Tabs. 8, 9), each against the paper's code of its part
    batch = torch.arange(b, device=dev).repeat_interleave(n)
    flat = {k: getattr(rq, k).reshape(-1) for k in ("route_pos", "route_id", "depot_angle")}
    demand = inst.demand.to(dev).reshape(-1)
    t_xpe = best_of(lambda: xpe(flat["depot_angle"], 4, depot_mask=depot.view(-1)), device=dev)
    t_idx = best_of(lambda: index_ipe(flat["route_pos"], route_sizes(
        flat["route_pos"], flat["route_id"], batch), args.dim - 8), device=dev)
    print(f"  index-based IPE (sizes included): {t_idx * 1e3:8.1f} ms = "
          f"{t_idx / t_pe:5.2f} x IPE+XPE")
    for agg in AGGREGATIONS[1:]:
        t_agg = best_of(lambda agg=agg: xpe(route_angle(
            flat["depot_angle"], flat["route_id"], agg, batch, demand, depot.view(-1)), 4,
            depot_mask=depot.view(-1)), device=dev)
        print(f"  per-route XPE, {agg:<15}  : {t_agg * 1e3:8.1f} ms = "
              f"{t_agg / t_xpe:5.2f} x per-node XPE")


if __name__ == "__main__":
    main()
