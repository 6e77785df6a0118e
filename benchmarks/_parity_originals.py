"""The originals' side of ``learning_parity.py``: VRP-DACT and PDP-N2S trained from an
exported copy of their code, on the CPU, with today's torch, and validated per epoch.

Nothing of their code is copied here: a child process puts the exported copy on
``sys.path``, stands in for what their code imports but does not use here
(``tensorboard_logger``), and drives their own functions (``problem.make_dataset``,
``agent.ppo.train_batch``, ``PPO.rollout``) epoch by epoch, as their ``agent.ppo.train``
does, with the validation of the benchmark in place of theirs (the mean best cost after
``val_steps`` sampled steps on the given instances, from their own initial solutions).
The only changes to their behaviour: the CPU (their ``--no_cuda``) and no TensorBoard
(``--no_tb``). Their options are passed on their own command line (``options.py``).
"""

from __future__ import annotations

import copy
import json
import pickle
import random
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import torch


def _stand_ins() -> None:
    """Modules their code imports at the top but this run does not use."""
    tb = types.ModuleType("tensorboard_logger")
    tb.Logger = object                     # only built when TensorBoard is on (--no_tb)
    sys.modules.setdefault("tensorboard_logger", tb)


class _NoBar:
    """Their ``train_batch`` updates a tqdm bar; this one counts nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def write_dact_instances(instances: Any, path: Path) -> None:
    """``RoutingInstances`` (CVRP) as VRP-DACT's dataset file: a pickled list of
    ``(depot, loc, demand, capacity)`` (their ``CVRPDataset.make_instance``)."""
    pos = instances.pos.double().tolist()
    dem = instances.demand.double().tolist()
    cap = instances.capacity.reshape(-1).double().tolist()
    rows = [(p[0], p[1:], d[1:], c) for p, d, c in zip(pos, dem, cap)]
    with open(path, "wb") as f:
        pickle.dump(rows, f)


def write_n2s_instances(instances: Any, path: Path) -> None:
    """PDTSP ``RoutingInstances`` (the standard layout: pickup ``r``, delivery ``r + P``)
    as PDP-N2S's dataset file: a pickled list of ``(depot, loc)`` (its
    ``PDPDataset.make_instance``), which uses the same layout."""
    pos = instances.pos.double().tolist()
    with open(path, "wb") as f:
        pickle.dump([(p[0], p[1:]) for p in pos], f)


def _recipe_argv(recipe: dict[str, Any], seed: int) -> list[str]:
    """The options both originals' ``options.py`` share, from ``recipe``."""
    return ["--graph_size", str(recipe["num_customers"]), "--n_step", str(recipe["n_step"]),
            "--T_train", str(recipe["t_train"]), "--K_epochs", str(recipe["ppo_epochs"]),
            "--max_grad_norm", str(recipe["max_grad_norm"]),
            "--batch_size", str(recipe["batch_size"]),
            "--epoch_size", str(recipe["batch_size"] * recipe["batches_per_epoch"]),
            "--epoch_end", str(recipe["epochs"]), "--lr_model", str(recipe["lr_actor"]),
            "--lr_critic", str(recipe["lr_critic"]), "--lr_decay", str(recipe["lr_decay"]),
            "--T_max", str(recipe["val_steps"]), "--val_size", str(recipe["val_size"]),
            "--val_m", "1", "--seed", str(seed), "--no_cuda", "--no_tb", "--no_saving",
            "--no_progress_bar", "--no_DDP"]


def _train(train_batch: Any, agent: Any, problem: Any, opts: Any, val_batch: Any,
           make_data: Any) -> list[float]:
    """The original's ``agent.ppo.train`` on one rank (``make_data()``: an epoch's
    training set), with its ``validate()`` after every epoch: the mean best cost of a
    sampled rollout of ``T_max`` steps on ``val_batch``."""
    from torch.utils.data import DataLoader

    curve = []
    for epoch in range(opts.epoch_end):
        agent.lr_scheduler.step(epoch)
        loader = DataLoader(make_data(), batch_size=opts.batch_size, shuffle=False)
        step = epoch * (opts.epoch_size // opts.batch_size)
        for batch in loader:
            train_batch(0, problem, agent, epoch, step, batch, None, opts, _NoBar())
            step += 1
        agent.eval()
        if hasattr(problem, "eval"):                # VRP-DACT's problem has a mode too
            problem.eval()
        best = agent.rollout(problem, 1, copy.deepcopy(val_batch), do_sample=True)[0]
        curve.append(float(best.mean()))
    return curve


def run_pdp_n2s(root: str, recipe: dict[str, Any], val_file: str, seed: int) -> list[float]:
    """PDP-N2S on PDTSP with ``recipe``; the validation cost after every epoch."""
    sys.path.insert(0, root)
    _stand_ins()
    # their code, from the exported copy
    from agent.ppo import PPO, train_batch
    from options import get_options
    from problems.problem_pdtsp import PDTSP
    from torch.utils.data import DataLoader

    n = recipe["num_customers"]
    opts = get_options(["--problem", "pdtsp", "--warm_up", str(recipe["warm_up"]),
                        "--val_batch_size", str(recipe["val_size"]),
                        *_recipe_argv(recipe, seed)])
    opts.device = torch.device("cpu")
    torch.manual_seed(seed)                         # as their ppo.train
    random.seed(seed)
    problem = PDTSP(p_size=n, init_val_met=opts.init_val_met, with_assert=False)
    agent = PPO(problem.NAME, problem.size, opts)
    val_set = problem.make_dataset(size=n, num_samples=opts.val_size, filename=val_file)
    val_batch = next(iter(DataLoader(val_set, batch_size=opts.val_size, shuffle=False)))
    return _train(train_batch, agent, problem, opts, val_batch,
                  lambda: problem.make_dataset(size=n, num_samples=opts.epoch_size))


def run_vrp_dact(root: str, recipe: dict[str, Any], val_file: str, seed: int) -> list[float]:
    """VRP-DACT on CVRP with ``recipe``; the validation cost after every epoch."""
    sys.path.insert(0, root)
    _stand_ins()
    # their code, from the exported copy
    from agent.ppo import PPO, train_batch
    from options import get_options
    from problems.problem_vrp import CVRP
    from torch.utils.data import DataLoader

    n = recipe["num_customers"]
    opts = get_options(["--problem", "vrp", "--dummy_rate", str(recipe["depot_rate"]),
                        "--Xi_CL", str(recipe["xi_cl"]), *_recipe_argv(recipe, seed)])
    opts.device = torch.device("cpu")
    torch.manual_seed(seed)                         # as their run.py and ppo.train
    np.random.seed(seed)
    random.seed(seed)
    problem = CVRP(p_size=n, step_method="2_opt", init_val_met=opts.init_val_met,
                   with_assert=False, P=opts.P, DUMMY_RATE=opts.dummy_rate)
    agent = PPO(problem.NAME, problem.size, opts)
    val_set = problem.make_dataset(size=n, num_samples=opts.val_size, filename=val_file,
                                   DUMMY_RATE=opts.dummy_rate)
    val_batch = next(iter(DataLoader(val_set, batch_size=opts.val_size, shuffle=False)))
    return _train(train_batch, agent, problem, opts, val_batch,
                  lambda: problem.make_dataset(size=n, num_samples=opts.epoch_size,
                                               DUMMY_RATE=opts.dummy_rate))


def main(argv: list[str]) -> None:
    """``python _parity_originals.py dact|n2s ROOT RECIPE_JSON VAL_FILE SEED``: prints
    the curve as the last line (JSON)."""
    which, root, recipe, val_file, seed = argv
    torch.set_num_threads(int(json.loads(recipe).get("threads", 1)))
    runs = {"dact": run_vrp_dact, "n2s": run_pdp_n2s}
    if which not in runs:
        raise SystemExit(f"unknown original {which!r}")
    curve = runs[which](root, json.loads(recipe), val_file, int(seed))
    print(json.dumps(curve))


if __name__ == "__main__":
    main(sys.argv[1:])
