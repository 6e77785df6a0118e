"""Laplacian PE and RWSE of 512 CVRP-100 route graphs: our batched closed forms vs
PyG's ``AddLaplacianEigenvectorPE(k=8, is_undirected=True)`` and
``AddRandomWalkPE(walk_length=8)`` applied graph by graph (timed on a subset and
reported per graph), and the same routes read as open routes (paths from the depot)
against the closed ones in the same run.

Note: PyG's Laplacian transform uses the symmetric-normalized Laplacian, ours the
unnormalized ``L = D - A`` of the paper; the work (sparse ``eigsh`` of a 101-node
graph for 9 eigenpairs) is the same, so only the timings are compared here.
"""

from __future__ import annotations

import argparse

import torch
from _timing import best_of
from torch_geometric.data import Batch, Data
from torch_geometric.transforms import AddLaplacianEigenvectorPE, AddRandomWalkPE
from torch_geometric.utils import to_undirected

from pyg_routing.data import RoutingData, edge_index_from_tours
from pyg_routing.data.generators import CVRPGenerator
from pyg_routing.data.solvers import nearest_neighbor, sweep, tours_to_routes
from pyg_routing.functional.graph_pe import laplacian_pe
from pyg_routing.functional.random_walk_pe import random_walk_pe
from pyg_routing.transforms.laplacian_pe import LaplacianPE
from pyg_routing.transforms.random_walk_pe import RandomWalkPE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--customers", type=int, default=100)
    parser.add_argument("--solver", choices=("sweep", "nearest_neighbor"), default="sweep")
    parser.add_argument("--pyg-graphs", type=int, default=64,
                        help="graphs PyG is timed on (per-graph time is scaled)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    b, n, dev = args.batch, args.customers, args.device
    inst = CVRPGenerator(n, seed=0).sample(b)
    tours = (sweep if args.solver == "sweep" else nearest_neighbor)(inst)
    routes = tours_to_routes(tours)
    batch = Batch.from_data_list([RoutingData.from_routes(inst[i], routes[i])
                                  for i in range(b)]).to(dev)
    # Flat route arcs straight from the giant tours (no RoutingData at all).
    arcs = edge_index_from_tours(tours, n + 1).to(dev)
    node_batch = torch.arange(b, device=dev).repeat_interleave(n + 1)
    lap_t, rw_t = LaplacianPE(k=8).eval(), RandomWalkPE(walk_length=8)

    reps = 20                                  # ours is fast: more repeats, less noise
    ours = {
        "lap, arcs": best_of(lambda: laplacian_pe(arcs, b * (n + 1), node_batch), reps, dev),
        "lap, transform": best_of(lambda: lap_t(batch), reps, dev),
        "rw, arcs": best_of(lambda: random_walk_pe(arcs, b * (n + 1), node_batch), reps, dev),
        "rw, transform": best_of(lambda: rw_t(batch), reps, dev),
        "lap, open": best_of(lambda: laplacian_pe(arcs, b * (n + 1), node_batch,
                                                  open_routes=True), reps, dev),
        "rw, open": best_of(lambda: random_walk_pe(arcs, b * (n + 1), node_batch,
                                                   open_routes=True), reps, dev),
    }
    # PyG, graph by graph, on the undirected simple route graphs.
    m = min(args.pyg_graphs, b)
    graphs = [Data(edge_index=to_undirected(g.edge_index, num_nodes=g.num_nodes).cpu(),
                   num_nodes=g.num_nodes) for g in batch.index_select(range(m))]
    pyg_lap, pyg_rw = AddLaplacianEigenvectorPE(k=8, is_undirected=True), AddRandomWalkPE(8)
    pyg = {
        "lap": best_of(lambda: [pyg_lap(g.clone()) for g in graphs], repeat=3) / m,
        "rw": best_of(lambda: [pyg_rw(g.clone()) for g in graphs], repeat=3) / m,
    }
    print(f"graph PEs, {b} x CVRP-{n} route graphs ({args.solver}), device {dev}, "
          f"{torch.get_num_threads()} CPU threads")
    for key, label in (("lap", "Laplacian PE (k=8)"), ("rw", "RWSE (walk_length=8)")):
        print(f"  {label}: PyG graph by graph {pyg[key] * 1e3:8.3f} ms/graph "
              f"(timed on {m} graphs)")
        for how in ("arcs", "transform"):
            per = ours[f"{key}, {how}"] / b
            print(f"    ours, batched from {how:9s}: {per * 1e3:8.4f} ms/graph "
                  f"({ours[f'{key}, {how}'] * 1e3:7.2f} ms total) -> "
                  f"{pyg[key] / per:6.1f}x faster")
        print(f"    open routes (paths), from arcs: {ours[f'{key}, open'] * 1e3:7.2f} ms total "
              f"= {ours[f'{key}, open'] / ours[f'{key}, arcs']:.2f}x the closed routes")


if __name__ == "__main__":
    main()
