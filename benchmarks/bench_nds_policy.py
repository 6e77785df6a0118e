"""The learned NDS destroy in the search and in training.

1. ASA (``pyg_routing.search.DestroyRepairSearch``) with the policy at N = 500 (8 slots
   x 200 sets x 5 repairs per iteration):
   iterations per second against the random destroy measured in the same run (the
   baseline: the same search without a network), and where an iteration's time goes
   (destroy = observation + encoder + 15 decoder steps; repair; sync).
2. Training at N = 100: rollouts per second of ``NDSLightning`` (B instances x K
   rollouts x I iterations per optimizer step, warm-up included) and the repairs'
   share, timed as :meth:`DeconstructionEnv.improve` on the same shapes.

Weights are untrained (the time does not depend on them). ``--device cuda`` runs the
policy on the GPU (with autocast, as ``search`` does) while the repairs stay on the
CPU cores.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numba
import numpy as np
import torch
from bench_asa import breakdown, iterations_per_second

from pyg_routing.data.generators import make_generator
from pyg_routing.envs.deconstruction import (
    DeconstructionEnv,
    PolicyDestroy,
    ProblemArrays,
    RandomDestroy,
)
from pyg_routing.models import NDSPolicy


def search_rows(args: argparse.Namespace, device: torch.device) -> None:
    instances = make_generator("cvrp", args.customers, seed=1234, preset="nds").sample(1)
    arrays = ProblemArrays.from_instances(instances)
    cores = numba.config.NUMBA_NUM_THREADS
    destroys = {"random": RandomDestroy(15)}
    for pe in args.pe:
        torch.manual_seed(0)
        policy = NDSPolicy.build("cvrp", pe=pe).to(device)
        destroys[f"policy {pe}"] = PolicyDestroy(policy, instances.to(device))
    rates: dict[str, float] = {}
    for _ in range(args.rounds):                  # interleaved: drift hits every row
        for name, d in destroys.items():
            rate, _ = iterations_per_second(arrays, instances, d, cores, args.seconds, seed=0)
            rates[name] = max(rates.get(name, 0.0), rate)
    print(f"ASA with the NDS policy, CVRP-{args.customers} (NDS preset), 8 slots x 200 sets "
          f"x 5 repairs, policy on {device}, {cores} repair threads, best of {args.rounds}")
    print(f"{'destroy':16s} {'it/s':>7s} {'vs random':>10s}   ms per iteration")
    for name, d in destroys.items():
        parts = breakdown(arrays, d, cores, iterations=5)
        total = sum(parts.values())
        share = ", ".join(f"{k} {v:.0f} ({100 * v / total:.0f} %)" for k, v in parts.items())
        print(f"{name:16s} {rates[name]:7.2f} {rates[name] / rates['random']:9.2f}x   {share}")


def training_rows(args: argparse.Namespace, device: torch.device) -> None:
    import lightning as L

    from pyg_routing.training import NDSLightning, RoutingDataModule

    b, k, i, j, n = args.batch, args.rollouts, args.iterations, 1, 100
    accelerator = "gpu" if device.type == "cuda" else "cpu"
    precision = "16-mixed" if device.type == "cuda" else "32-true"
    for pe in args.pe:
        torch.manual_seed(0)
        model = NDSLightning(problem="cvrp", num_customers=n, pe=pe, batch_size=b, rollouts=k,
                             iterations=i, warmup_steps=j)
        data = RoutingDataModule("cvrp", n, batch_size=b, batches_per_epoch=args.steps,
                                 val_size=1, seed=0, preset="nds")
        trainer = L.Trainer(max_epochs=1, accelerator=accelerator, devices=1,
                            precision=precision, logger=False, enable_checkpointing=False,
                            enable_progress_bar=False, enable_model_summary=False,
                            limit_val_batches=0, num_sanity_val_steps=0)
        t = time.perf_counter()
        trainer.fit(model, data)
        seconds = time.perf_counter() - t
        rollouts = args.steps * b * k * (i + j)
        # the repairs of the same shapes, alone
        env = DeconstructionEnv()
        inst = make_generator("cvrp", n, seed=0, preset="nds").sample(b)
        work = env.reset(inst, rng=0)
        rng = np.random.default_rng(0)
        sets = RandomDestroy(15).propose(work.state, work.arrays, k, rng)
        t = time.perf_counter()
        for _ in range(3):
            env.improve(work, sets, rng)
        repair = (time.perf_counter() - t) / 3 * args.steps * (i + j)
        print(f"training {pe:7s} CVRP-{n}, B={b} K={k} I={i} J={j} on {device} ({precision}): "
              f"{rollouts / seconds:7.0f} rollouts/s, {seconds / args.steps:.2f} s per "
              f"optimizer step, repairs ~{100 * repair / seconds:.0f} % of it")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--customers", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pe", default="none,ipexpe", help="encodings of the policy rows")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--rollouts", type=int, default=32)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps timed")
    parser.add_argument("--skip-training", action="store_true")
    args = parser.parse_args()
    args.pe = [p.strip() for p in args.pe.split(",") if p.strip()]
    warnings.filterwarnings("ignore")
    device = torch.device(args.device)
    print(f"{os.cpu_count()} cores, torch threads {torch.get_num_threads()}")
    search_rows(args, device)
    if not args.skip_training:
        training_rows(args, device)


if __name__ == "__main__":
    main()
