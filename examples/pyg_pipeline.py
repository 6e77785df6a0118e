"""A plain PyG pipeline: a dataset with ``T.Compose([IPEXPE()])``, a ``DataLoader``,
the ``GPSEncoder`` and a few gradient steps.

The toy task regresses each instance's solution cost from the pooled node
embeddings, just to show the pieces training together.

Run: python examples/pyg_pipeline.py [--root data] [--steps 20]
"""

from __future__ import annotations

import argparse

import torch
import torch_geometric.transforms as T
from torch_geometric.loader import DataLoader
from torch_geometric.nn import global_mean_pool

from pyg_routing.data import RoutingDataset
from pyg_routing.models import GPSEncoder
from pyg_routing.transforms import IPEXPE


def main(root: str = "data", steps: int = 20, seed: int = 0) -> list[float]:
    torch.manual_seed(seed)
    ds = RoutingDataset(root, problem="cvrp", num_customers=20, num_instances=64, seed=1,
                        solver="sweep", transform=T.Compose([IPEXPE(dim=32, num_bands=4)]))
    loader = DataLoader(ds, batch_size=16, shuffle=True)
    encoder = GPSEncoder(in_channels=2, dim=64, heads=4, num_layers=2, pe="ipexpe", pe_dim=32)
    head = torch.nn.Linear(64, 1)
    params = list(encoder.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=1e-3)
    losses = []
    while len(losses) < steps:
        for batch in loader:
            pred = head(global_mean_pool(encoder(batch), batch.batch)).squeeze(-1)
            loss = torch.nn.functional.mse_loss(pred, batch.cost().float())
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            print(f"step {len(losses):3d}  loss {losses[-1]:.4f}")
            if len(losses) == steps:
                break
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", default="data")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    main(args.root, args.steps)
