"""Train a DACT policy with IPE+XPE on CVRP-20 with Lightning, then improve held-out
instances with it and compare against random moves and PyVRP.

Run: python examples/train_dact_cvrp.py [--epochs 4] [--out runs/example]
(about 5 minutes on 2 CPU cores with the defaults; add --accelerator gpu on a GPU).
"""

from __future__ import annotations

import argparse

import lightning as L
import torch
from lightning.pytorch.loggers import CSVLogger

from pyg_routing.data import RoutingData, RoutingDataset, make_generator
from pyg_routing.search import improve
from pyg_routing.training import DACTLightning, RoutingDataModule, load_policy


def main(out: str = "runs/example", epochs: int = 4, num_customers: int = 20,
         batch_size: int = 64, t_train: int = 40, batches_per_epoch: int = 5,
         test_instances: int = 64, steps: int = 500, dim: int = 64, num_layers: int = 3,
         accelerator: str = "cpu", progress: bool = True) -> dict[str, float]:
    # 1. Train: n-step PPO as a LightningModule, seeded weights and generated data.
    L.seed_everything(0, verbose=False)
    model = DACTLightning(problem="cvrp", num_customers=num_customers, pe="ipexpe", dim=dim,
                          num_layers=num_layers, batch_size=batch_size, t_train=t_train,
                          val_steps=50, seed=0)
    data = RoutingDataModule("cvrp", num_customers, batch_size=batch_size,
                             batches_per_epoch=batches_per_epoch, val_size=32, seed=0)
    trainer = L.Trainer(max_epochs=epochs, accelerator=accelerator, default_root_dir=out,
                        logger=CSVLogger(out, name="logs"), log_every_n_steps=batches_per_epoch,
                        enable_progress_bar=progress, enable_model_summary=progress)
    trainer.fit(model, data)
    policy = load_policy(trainer.checkpoint_callback.last_model_path or
                         trainer.checkpoint_callback.best_model_path,
                         expect_problem="cvrp", expect_pe="ipexpe")

    # 2. Evaluate: the same held-out instances and random initial solutions for all.
    test = make_generator("cvrp", num_customers, seed=1234).sample(test_instances)
    results = {}
    for name, pol in (("random moves", None), ("DACT + IPE+XPE", policy)):
        res = improve(test, pol, steps=steps, init="random",
                      generator=torch.Generator().manual_seed(0))
        for b, routes in enumerate(res.routes):        # every solution is feasible
            RoutingData.from_routes(test[b], routes).check()
        results[name] = float(res.cost.mean())
    results["initial"] = float(res.initial_cost.mean())

    # 3. The PyVRP reference on the same instances (cached under ``out``).
    ref = RoutingDataset(out, "cvrp", num_customers, test_instances, seed=1234,
                         solver="pyvrp", time_limit=0.2, progress=False)
    results["PyVRP"] = float(torch.stack([d.cost() for d in ref]).mean())
    for name, cost in results.items():
        print(f"{name:16s} {cost:8.3f}   gap {100 * (cost / results['PyVRP'] - 1):6.2f} %")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="runs/example")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--accelerator", default="cpu")
    args = parser.parse_args()
    main(args.out, args.epochs, accelerator=args.accelerator)
