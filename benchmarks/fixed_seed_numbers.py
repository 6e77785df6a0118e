"""Fixed-seed numbers of every backbone: the yardstick of a restructuring.

Runs, on the CPU, a short seeded training and search of each backbone and prints
their numbers (full precision, JSON). A refactor that must not move numbers is
checked by running this before and after it on the same machine and comparing the
two outputs byte for byte (``diff``). The numbers depend on the machine and its
library versions (float sum order), so they are recorded with the machine in
docs/experiments.md and never asserted in tests.

1. DACT on CVRP-20: ``pyg-routing train`` (1 epoch) and a 100-step, 2-copy search.
2. N2S on PDTSP-20: the same.
3. NDS on CVRP-100: ``train --backbone nds`` (1 epoch), then the augmented search
   with the learned destroy, capped by iterations (a wall-clock temperature
   schedule would make the numbers depend on the machine's speed).
4. SISR search on two CVRPLib X instances, iteration-capped.

    python benchmarks/fixed_seed_numbers.py --data-dir ../shared/data > before.json
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from pyg_routing.cli import main as cli

COMMON = ["--trainer.accelerator", "cpu", "--no_progress", "--json", "--seed", "0",
          "--pe", "ipexpe"]
TRAIN = {
    "dact": ["--problem", "cvrp", "--num_customers", "20", "--train.epochs", "1",
             "--train.batches_per_epoch", "3", "--train.batch_size", "16",
             "--validate.instances", "16", "--validate.steps", "20", "--train.t_train", "10",
             "--train.n_step", "5"],
    "n2s": ["--problem", "pdtsp", "--num_customers", "20", "--train.epochs", "1",
            "--train.batches_per_epoch", "3", "--train.batch_size", "16",
            "--validate.instances", "16", "--validate.steps", "20", "--train.t_train", "10",
            "--train.n_step", "5", "--model.dim", "64", "--encoding.dim", "64"],
    "nds": ["--problem", "cvrp", "--num_customers", "100", "--train.epochs", "1",
            "--train.batches_per_epoch", "1", "--train.batch_size", "2",
            "--validate.instances", "2", "--validate.steps", "2", "--train.rollouts", "8",
            "--train.iterations", "2", "--train.warmup_steps", "1", "--validate.rollouts", "4",
            "--validate.augment", "2", "--model.dim", "32", "--model.heads", "4"],
}
#: the search of a step backbone's checkpoint
EVALUATE = ["--test.instances", "16", "--test.steps", "100", "--test.augment", "2",
            "--reference.solver", "none", "--accelerator", "cpu", "--json"]
#: the two X instances of the SISR row
X_NAMES = ("X-n101-k25", "X-n106-k14")


def run(*argv: str) -> dict[str, Any]:
    """``pyg-routing ARGV --json`` in-process; its JSON."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(list(argv))
    if code != 0:
        raise SystemExit(f"pyg-routing {' '.join(argv)} exited {code}")
    return json.loads(out.getvalue())              # --json: stdout holds the JSON alone


def step_backbone(name: str, root: Path) -> dict[str, Any]:
    trained = run("train", "--backbone", name, *TRAIN[name], *COMMON, "--out", str(root))
    ckpt = trained["checkpoint"]
    searched = run("evaluate", "--checkpoint", str(ckpt), "--test.seed", "1234", *EVALUATE,
                   "--out", str(root / f"eval_{name}"))
    return {"val_cost": trained.get("best_val_cost"), "train": trained["metrics"],
            "search_initial": searched["initial_cost"], "search_cost": searched["cost"]}


def asa(instances: Any, destroy: Any, iterations: int, seed: int) -> dict[str, Any]:
    from pyg_routing.search import DestroyRepairSearch, MaxIterations

    search = DestroyRepairSearch(augment=4, rollouts=20)
    res = search.run(instances, destroy, MaxIterations(iterations), seed=seed)
    return {"cost": res.cost.tolist(), "start_cost": res.initial_cost.tolist(),
            "accepted": res.accepted, "iterations": res.iterations}


def nds(root: Path) -> dict[str, Any]:
    from pyg_routing.data.generators import make_generator
    from pyg_routing.envs.deconstruction import PolicyDestroy
    from pyg_routing.training.backbones import load_policy

    trained = run("train", "--backbone", "nds", *TRAIN["nds"], *COMMON, "--out", str(root))
    policy = load_policy(trained["checkpoint"])
    inst = make_generator("cvrp", 100, seed=1234, preset="nds").sample(2)
    torch.manual_seed(0)
    searched = asa(inst, PolicyDestroy(policy, inst, k=15), iterations=4, seed=1234)
    return {"val_cost": trained.get("best_val_cost"), "train": trained["metrics"],
            "search": searched}


def sisr(data_dir: str) -> dict[str, Any]:
    from pyg_routing.data.benchmarks import BenchmarkDataset
    from pyg_routing.data.instances import RoutingInstances
    from pyg_routing.data.problems import Problem
    from pyg_routing.envs.deconstruction import SISRDestroy

    ds = BenchmarkDataset(data_dir, "x", names=list(X_NAMES), with_solutions=False)
    out = {}
    for i, name in enumerate(ds.instance_names):
        data = ds[i]
        pos = (data.raw_pos / 1000.0).to(torch.get_default_dtype()).unsqueeze(0)
        inst = RoutingInstances(Problem.CVRP, pos, demand=data.demand.unsqueeze(0),
                                capacity=data.capacity.reshape(1))
        out[name] = asa(inst, SISRDestroy(c_bar=15), iterations=10, seed=1234)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", required=True, help="folder holding cvrplib/X-n101-k25.vrp")
    p.add_argument("--only", choices=("dact", "n2s", "nds", "sisr"), nargs="*", default=None)
    args = p.parse_args()
    torch.set_num_threads(2)
    which = args.only or ("dact", "n2s", "nds", "sisr")
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in which:
            print(f"running {name} ...", file=sys.stderr, flush=True)
            if name in ("dact", "n2s"):
                result[name] = step_backbone(name, Path(tmp))
            elif name == "nds":
                result[name] = nds(Path(tmp))
            else:
                result[name] = sisr(args.data_dir)
    print(json.dumps(result, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
