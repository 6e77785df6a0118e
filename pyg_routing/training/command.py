"""``pyg-routing train`` and ``pyg-routing evaluate``: CLI glue around Lightning."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch

from pyg_routing import encodings
from pyg_routing.data.generators import PROBLEMS
from pyg_routing.training.backbones import init_choices
from pyg_routing.training.fit import (
    add_backbone_option,
    add_training_options,
    count,
    fit,
    positive,
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
    p.add_argument("--json", action="store_true", help="print a JSON object")


def add_evaluate_parser(sub: Any) -> None:
    p = sub.add_parser("evaluate", help="improve held-out instances with a trained policy",
                       description="Run T improvement steps (best-so-far, optional 8-fold "
                                   "augmentation) and report the objective, the gap to a "
                                   "cached PyVRP reference and the wall time.")
    p.add_argument("--checkpoint", default=None,
                   help="a `pyg-routing train` checkpoint (omit with --policy random)")
    p.add_argument("--policy", choices=("checkpoint", "random"), default="checkpoint",
                   help="'random': uniformly random valid moves (baseline)")
    add_backbone_option(p)
    add_problem_options(p, from_checkpoint=True)
    p.add_argument("--instances", type=count(1), default=256)
    p.add_argument("--steps", type=count(0), default=1000)
    p.add_argument("--augment", type=count(1), default=8, help="symmetric copies (1..8)")
    p.add_argument("--init", choices=init_choices(), default=None,
                   help="starting solutions (default: the environment's first: sweep for "
                        "dact, random for n2s)")
    p.add_argument("--starts", choices=("shared", "independent"), default=None,
                   help="augmented copies start from the same solutions (shared) or each "
                        "from its own (independent; default: the backbone's: dact shared, "
                        "n2s independent)")
    p.add_argument("--seed", type=int, default=1234, help="test-set seed")
    p.add_argument("--compile", action="store_true",
                   help="score move pairs with torch.compile (faster search steps)")
    p.add_argument("--any-size", action="store_true",
                   help="allow a problem size other than the one trained on")
    add_reference_option(p)
    p.add_argument("--time-limit", type=positive, default=1.0,
                   help="reference solver seconds per instance")
    p.add_argument("--root", default="data", help="dataset cache for the reference")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where the search runs (auto: cuda when available)")
    p.add_argument("--json", action="store_true", help="print a JSON object")


def search_device(choice: str) -> torch.device:
    """The device of ``--device``: ``auto`` takes CUDA when available."""
    if choice == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device is available")
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(choice)


def run_train(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out) / f"{args.backbone}_{args.problem}{args.num_customers}_{args.pe}"
    return fit(args, args.pe, out, max_minutes=args.max_minutes, resume=args.resume)


def check_step_backbone(lightning: Any) -> Any:
    """``lightning`` if its environment is step-by-step (``improve``); NDS is refused,
    naming the command that tests it."""
    from pyg_routing.envs import ImprovementEnv

    if not isinstance(lightning.make_env(), ImprovementEnv):
        name = lightning.config_class.backbone
        raise ValueError(f"evaluate runs the step-by-step backbones; a {name} policy is "
                         f"tested in its search: pyg-routing search --destroy policy "
                         f"--checkpoint CKPT")
    return lightning


def problem_defaults(args: argparse.Namespace, problem: str | None = None,
                     num_customers: int | None = None) -> argparse.Namespace:
    """A copy of ``args`` whose unset ``--problem`` / ``--num-customers`` are the given
    ones (a checkpoint's), else cvrp-20; ``args`` itself is left as the user gave it."""
    return argparse.Namespace(**{
        **vars(args), "problem": args.problem or problem or DEFAULT_PROBLEM,
        "num_customers": args.num_customers or num_customers or DEFAULT_CUSTOMERS})


def run_evaluate(args: argparse.Namespace) -> dict[str, Any]:
    from pyg_routing.data.generators import make_generator
    from pyg_routing.search import MaxIterations, StepSearch, gap_percent, instance_gap_percent
    from pyg_routing.training import backbones

    policy = None
    device = search_device(args.device)
    lightning = check_step_backbone(backbones.get(args.backbone))
    if args.policy != "checkpoint":
        args = problem_defaults(args)
    else:
        if args.checkpoint is None:
            raise ValueError("evaluate needs --checkpoint (or --policy random)")
        ckpt = backbones.read_checkpoint(args.checkpoint)
        hp = ckpt["hyper_parameters"]
        lightning = backbones.get(hp["backbone"])
        check_step_backbone(lightning)
        trained = hp.get("num_customers")
        args = problem_defaults(args, hp.get("problem"), trained)
        if trained is not None and trained != args.num_customers and not args.any_size:
            raise ValueError(f"checkpoint {args.checkpoint} was trained on "
                             f"{hp.get('problem', args.problem)}-{trained}, but "
                             f"--num-customers is {args.num_customers}; pass --any-size to "
                             f"evaluate anyway")
        policy = backbones.load_policy(args.checkpoint, expect_problem=args.problem,
                                       compiled=True if args.compile else None,
                                       checkpoint=ckpt)
    # sampled on the CPU: the same instances (and cached reference) on every device
    instances = make_generator(args.problem, args.num_customers, seed=args.seed).sample(
        args.instances).to(device)
    if policy is not None:
        policy = policy.to(device)
    env = lightning.make_env()
    init = args.init or env.inits[0]
    independent = lightning.config_class.independent_starts if args.starts is None \
        else args.starts == "independent"
    search = StepSearch(env, init=init, augment=args.augment, independent_starts=independent)
    result = search.run(instances, policy, MaxIterations(args.steps),
                        generator=torch.Generator().manual_seed(args.seed))
    out: dict[str, Any] = {
        "policy": args.policy if policy is None else args.checkpoint,
        "backbone": lightning.config_class.backbone,
        "problem": args.problem, "num_customers": args.num_customers,
        "instances": args.instances, "steps": args.steps, "augment": args.augment,
        "init": init, "starts": "independent" if independent else "shared",
        "device": device.type, "initial_cost": float(result.initial_cost.mean()),
        "cost": float(result.cost.mean()), "seconds": result.seconds}
    if args.reference != "none":
        ref_cost = reference_costs(args.problem, args.num_customers, args.instances, args.seed,
                                   args.time_limit, args.root, args.reference)
        out.update(reference_cost=float(ref_cost.mean()),
                   gap_percent=gap_percent(result.cost, ref_cost),
                   instance_gap_percent=instance_gap_percent(result.cost, ref_cost))
    return out
