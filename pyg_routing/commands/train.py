"""``pyg-routing train``, and what the training and test commands share: problem and
reference options, cached reference costs, the problem defaults of a checkpoint."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch

from pyg_routing import encodings
from pyg_routing.data.generators import PROBLEMS
from pyg_routing.training.backbones import add_trust_option
from pyg_routing.training.config import refuse_encoding_options
from pyg_routing.training.fit import (
    add_backbone_option,
    add_training_options,
    count,
    fit,
    positive,
    refuse_given,
)

#: ``--problem`` / ``--num-customers`` when neither the user nor a checkpoint says
DEFAULT_PROBLEM, DEFAULT_CUSTOMERS = "cvrp", 20


def add_problem_options(p: argparse.ArgumentParser, from_checkpoint: bool = False) -> None:
    """``--problem`` and ``--num-customers``; ``from_checkpoint``: both default to the
    checkpoint's (``evaluate``), else to cvrp-20."""
    note = " (default: the checkpoint's; cvrp-20 without one)" if from_checkpoint else ""
    p.add_argument("--problem", choices=PROBLEMS,
                   default=None if from_checkpoint else DEFAULT_PROBLEM,
                   help="routing problem" + note)
    p.add_argument("--num-customers", type=count(1),
                   default=None if from_checkpoint else DEFAULT_CUSTOMERS,
                   help="customers" + note)


#: what the ``--reference`` choices solve with, as the table names them
REFERENCE_METHODS = {"pyvrp": "PyVRP (HGS)", "ortools": "OR-Tools"}


def add_reference_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reference", choices=("auto", "pyvrp", "ortools", "none"),
                   default="auto",
                   help="reference solver of the gaps: auto (PyVRP), pyvrp, ortools or "
                        "none")


def reference_costs(problem: str, num_customers: int, count: int, seed: int,
                    time_limit: float, root: str, solver: str = "auto",
                    preset: str = "paper", generator_kwargs: dict | None = None,
                    progress: bool = False) -> torch.Tensor:
    """``[count]`` reference costs of ``make_generator(problem, n, seed, preset=preset,
    **generator_kwargs).sample(count)`` by ``solver`` (``auto``: PyVRP), solved once and
    cached under ``root`` (a :class:`RoutingDataset`)."""
    from pyg_routing.data.dataset import RoutingDataset
    from pyg_routing.data.solvers.parallel import resolve_solver

    ref = RoutingDataset(root, problem, num_customers, count, seed=seed,
                         solver=resolve_solver(solver, problem), time_limit=time_limit,
                         progress=progress, preset=preset, generator_kwargs=generator_kwargs)
    return torch.stack([d.cost() for d in ref]).double()


def add_train_parser(sub: Any) -> None:
    p = sub.add_parser("train", help="train an improvement policy with Lightning",
                       description="Train an improvement policy (DACT: n-step PPO) with any "
                                   "encoding; checkpoints and CSV logs go to --out.")
    add_backbone_option(p)
    add_problem_options(p)
    p.add_argument("--pe", choices=list(encodings.available()), default="ipexpe",
                   help="positional encoding")
    add_training_options(p)
    p.add_argument("--max-minutes", type=positive, default=None, help="stop training after this")
    p.add_argument("--out", default="runs", help="folder for checkpoints and logs")
    p.add_argument("--resume", default=None, help="checkpoint to resume from")
    add_trust_option(p)
    p.add_argument("--json", action="store_true", help="print a JSON object")


def run_train(args: argparse.Namespace) -> dict[str, Any]:
    if args.resume is None:
        refuse_given(args, ("trust_checkpoint",), "applies to --resume only (how its "
                                                  "checkpoint is read)")
    refuse_encoding_options(args, [encodings.info(args.pe).name])
    out = Path(args.out) / f"{args.backbone}_{args.problem}{args.num_customers}_{args.pe}"
    return fit(args, args.pe, out, max_minutes=args.max_minutes, resume=args.resume)


def problem_defaults(args: argparse.Namespace, problem: str | None = None,
                     num_customers: int | None = None) -> argparse.Namespace:
    """A copy of ``args`` whose unset ``--problem`` / ``--num-customers`` are the given
    ones (a checkpoint's), else cvrp-20; ``args`` itself is left as the user gave it."""
    return argparse.Namespace(**{
        **vars(args), "problem": args.problem or problem or DEFAULT_PROBLEM,
        "num_customers": args.num_customers or num_customers or DEFAULT_CUSTOMERS})
