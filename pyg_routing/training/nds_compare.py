"""The test-time search of ``pyg-routing compare --backbone nds``: NDS's augmented
simulated annealing with a trained policy's removal sets, or with the non-learned
``random`` / ``sisr`` destroys as baseline rows, on the same held-out instances (the
training preset's generator, ``--test-seed``), one instance at a time with the same
budget each: ``--search-seconds`` of wall time (start solutions included, as in NDS)
and at most ``--steps`` iterations, ``--augment`` slots and ``--search-rollouts`` sets
per slot and iteration.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import torch

from pyg_routing.search import gap_percent, instance_gap_percent
from pyg_routing.training.config import GivenOption
from pyg_routing.training.fit import count, positive


def add_nds_compare_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--search-seconds", type=positive, default=None,
                   action=GivenOption, backbones=("nds",),
                   help="[nds] wall-clock seconds of the test search per instance (default: "
                        "only --steps iterations)")
    p.add_argument("--search-rollouts", type=count(1), default=200,
                   action=GivenOption, backbones=("nds",),
                   help="[nds] removal sets per slot and test-search iteration (NDS: 200)")


def test_instances(args: argparse.Namespace, preset: str) -> Any:
    from pyg_routing.data.generators import make_generator

    return make_generator(args.problem, args.num_customers, seed=args.test_seed,
                          preset=preset).sample(args.instances)


def deconstruction_search(args: argparse.Namespace, destroy: Any, preset: str, remove: int,
                          reference: torch.Tensor | None) -> dict[str, Any]:
    """One table row: the mean best cost over the test instances of ASA with ``destroy``
    (a trained ``NDSPolicy`` or a name of the backbone's baselines)."""
    from pyg_routing.search import DestroyRepairSearch, budget
    from pyg_routing.training import backbones

    inst = test_instances(args, preset)
    search = DestroyRepairSearch(augment=args.augment, rollouts=args.search_rollouts,
                                 remove=remove)
    stop = budget(args.steps, args.search_seconds)
    if isinstance(destroy, str):
        destroy = backbones.get("nds").baselines[destroy][1](remove)
    costs, starts, seconds, iterations = [], [], 0.0, []
    for i in range(len(inst)):         # one budget per instance, as `search` does
        res = search.run(inst[i:i + 1], destroy, stop, seed=args.test_seed + i)
        costs.append(float(res.cost[0]))
        starts.append(float(res.initial_cost[0]))
        seconds += res.seconds
        iterations.append(res.iterations)
    cost = torch.tensor(costs, dtype=torch.float64)
    row: dict[str, Any] = {"objective": float(cost.mean()),
                           "initial_objective": float(np.mean(starts)),
                           "eval_seconds": seconds, "iterations": float(np.mean(iterations))}
    if reference is not None:
        row["gap_percent"] = gap_percent(cost, reference)
        row["instance_gap_percent"] = instance_gap_percent(cost, reference)
    return row
