"""``pyg-routing evaluate``: the one test command of every backbone.

A trained policy (``--checkpoint``) or one of the backbone's non-learned baselines
(``--policy random``; NDS also ``sisr``) searches generated instances (``--problem``,
``--preset``: the paper's data, NDS's test sets) or CVRPLib X (``--benchmark x``) with
the backbone's test search (:meth:`ImprovementLightning.test_search`: the step search
of DACT and N2S, NDS's destroy-and-repair search) under one budget: ``--steps``
iterations and/or ``--search-seconds`` of wall time. The jobs run as Lightning
``predict`` steps over ``--devices`` workers
(:func:`~pyg_routing.training.search_predictor.run_jobs`): a step backbone searches
its generated instances as one batch per worker; NDS gives every instance its own
budget, as NDS does; benchmark instances (their sizes differ) are one job each.

Options of another backbone's search are refused, naming the option and the
backbones it belongs to. The result: the mean initial and best cost, the gap to a
reference (PyVRP / OR-Tools on generated instances, the BKS on X) and one row per
instance, also written to ``--out`` as ``table.csv`` and ``result.json``.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

import torch

from pyg_routing.commands.jobs import (
    add_instance_options,
    add_reference,
    check_remove,
    generated_jobs,
    refuse_instance_options,
    search_jobs,
    x_jobs,
)
from pyg_routing.commands.train import add_reference_option, problem_defaults
from pyg_routing.data.generators import PROBLEMS
from pyg_routing.training import backbones
from pyg_routing.training.config import GivenOption, refuse_foreign_options
from pyg_routing.training.fit import count, given, positive, refuse_given

#: the test-search options, each declared for the backbones that list it
SEARCH_OPTIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "init": ("--init", {"choices": backbones.init_choices(), "default": None,
                        "help": "starting solutions (default: the environment's first)"}),
    "starts": ("--starts", {"choices": ("shared", "independent"), "default": None,
                            "help": "augmented copies start from the same solutions or each "
                                    "from its own (default: the backbone's)"}),
    "compile": ("--compile", {"nargs": 0, "default": False,
                              "help": "score move pairs with torch.compile"}),
    "rollouts": ("--rollouts", {"type": count(1), "default": None,
                                "help": "removal sets per slot and iteration (NDS: 200)"}),
    "recreate": ("--recreate", {"type": count(1), "default": None,
                                "help": "repairs per removal set (default: as trained)"}),
    "remove": ("--remove", {"type": count(1), "default": None,
                            "help": "customers per removal set (default: as trained; the "
                                    "baselines: 15)"}),
    "threads": ("--threads", {"type": count(1), "default": None,
                              "help": "repair threads per worker (default: cores / devices)"}),
}


class _Flag(GivenOption):
    """``--compile``: a flag that records it was given."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None
                 ) -> None:
        super().__call__(parser, namespace, True, option_string)


def add_evaluate_parser(sub: Any) -> None:
    p = sub.add_parser(
        "evaluate", help="search held-out instances with a trained policy or a baseline",
        description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--checkpoint", default=None, help="a `pyg-routing train` checkpoint")
    backbones.add_trust_option(p)
    names = sorted({n for b in backbones.available() for n in backbones.get(b).baselines})
    p.add_argument("--policy", choices=("checkpoint", *names), default="checkpoint",
                   help="checkpoint, or a non-learned baseline of the backbone")
    p.add_argument("--backbone", choices=list(backbones.available()), default=None,
                   help="the baselines' backbone (default: the checkpoint's; else "
                        f"{next(iter(backbones.available()))})")
    p.add_argument("--problem", choices=PROBLEMS, default=None,
                   help="routing problem (default: the checkpoint's; cvrp without one)")
    p.add_argument("--num-customers", type=count(1), default=None,
                   help="customers (default: the checkpoint's; 20 without one)")
    p.add_argument("--instances", type=count(1), default=256, help="generated instances")
    add_instance_options(p)
    p.add_argument("--steps", type=count(0), default=1000, help="search iterations (cap)")
    p.add_argument("--search-seconds", type=positive, default=None,
                   help="wall-clock seconds per job (a batch, or an instance), start "
                        "solutions included")
    p.add_argument("--augment", type=count(1), default=8, help="symmetric copies (slots)")
    for name, (flag, kwargs) in SEARCH_OPTIONS.items():
        has = tuple(b for b in backbones.available() if name in backbones.get(b).search_options)
        action = _Flag if name == "compile" else GivenOption
        p.add_argument(flag, dest=name, action=action, backbones=has,
                       **{**kwargs, "help": f"[{', '.join(has)}] {kwargs['help']}"})
    p.add_argument("--any-size", action="store_true",
                   help="allow a problem size other than the one trained on")
    add_reference_option(p)
    p.add_argument("--time-limit", type=positive, default=1.0,
                   help="reference solver seconds per instance")
    p.add_argument("--root", default="data", help="dataset cache of the references")
    p.add_argument("--accelerator", choices=("auto", "cpu", "gpu"), default="auto",
                   help="where a trained policy runs (auto: a GPU if available)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default=None,
                   help="the former spelling of --accelerator (cuda: gpu)")
    p.add_argument("--devices", type=count(1), default=1, help="worker processes per node")
    p.add_argument("--num-nodes", type=count(1), default=1, help="machines")
    p.add_argument("--out", default=None, help="folder of the table (default: runs/eval_...)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--json", action="store_true", help="print a JSON object")


def _policy_and_backbone(args: argparse.Namespace
                         ) -> tuple[Any, Any, Any, argparse.Namespace]:
    """The backbone's class, its configuration, the trained policy (``None`` for a
    baseline) and ``args`` with the checkpoint's problem and size where unset."""
    if args.policy != "checkpoint":
        if args.checkpoint is not None:
            raise ValueError(f"--checkpoint is the trained policy; --policy {args.policy} "
                             f"takes none")
        lightning = backbones.get(args.backbone or next(iter(backbones.available())))
        if args.policy not in lightning.baselines:
            raise ValueError(f"--policy {args.policy} is not a baseline of the "
                             f"{lightning.config_class.backbone} backbone; choose from "
                             f"{', '.join(lightning.baselines)}")
        if not args.benchmark:
            args = problem_defaults(args)
        # the backbone's defaults on the instances' problem (a problem the backbone
        # does not support is refused here, naming it)
        return lightning, lightning.config_class(problem=args.problem or "cvrp"), None, args
    if args.checkpoint is None:
        raise ValueError("evaluate needs --checkpoint (or a baseline: --policy random)")
    ckpt = backbones.read_checkpoint(args.checkpoint,
                                     trust=getattr(args, "trust_checkpoint", False))
    hp = ckpt["hyper_parameters"]
    if args.backbone is not None and args.backbone != hp["backbone"]:
        raise ValueError(f"--backbone {args.backbone} conflicts with checkpoint "
                         f"{args.checkpoint}, which is a {hp['backbone']} policy")
    lightning = backbones.get(hp["backbone"])
    trained = hp.get("num_customers")
    if not args.benchmark:
        args = problem_defaults(args, hp.get("problem"), trained)
        if trained is not None and trained != args.num_customers and not args.any_size:
            raise ValueError(f"checkpoint {args.checkpoint} was trained on "
                             f"{hp.get('problem', args.problem)}-{trained}, but "
                             f"--num-customers is {args.num_customers}; pass --any-size to "
                             f"evaluate anyway")
    policy = backbones.load_policy(args.checkpoint,
                                   expect_problem="cvrp" if args.benchmark else args.problem,
                                   compiled=True if args.compile else None, checkpoint=ckpt)
    config = lightning.config_class(**{k: v for k, v in hp.items() if k != "backbone"})
    return lightning, config, policy, args


def check_init(lightning: Any, init: str | None) -> None:
    """Refuse, naming ``--init``, initial solutions the backbone's environment does not
    start from."""
    inits = lightning.make_env().inits
    if init is not None and init not in inits:
        raise ValueError(f"--init {init}: the {lightning.config_class.backbone} backbone "
                         f"starts from {', '.join(inits)}")


def build_test_search(lightning: Any, config: Any, augment: int,
                      options: dict[str, Any]) -> Any:
    """The backbone's test search (:meth:`ImprovementLightning.test_search`) of
    ``evaluate`` and ``compare``, refusing by option name, before any search, an
    ``--init`` the backbone's environment does not start from and an ``--augment`` the
    search cannot run (the step search: 1..8 symmetric copies; NDS's slots have no
    such bound)."""
    check_init(lightning, options.get("init"))
    try:
        return lightning.test_search(config, augment, options)
    except ValueError as err:
        if str(err).startswith("augment "):
            raise ValueError(f"--augment {augment}: {err}") from None
        raise


def run_evaluate(args: argparse.Namespace) -> dict[str, Any] | None:
    from pyg_routing.search import budget, gap_percent, instance_gap_percent

    refuse_instance_options(args, ("time_limit",))
    args = argparse.Namespace(**vars(args))
    if args.device is not None:
        if given(args, "accelerator"):
            raise ValueError(f"--device {args.device} is the former spelling of "
                             f"--accelerator; give one of them")
        args.accelerator = {"cuda": "gpu"}.get(args.device, args.device)
    if args.accelerator == "gpu" and not torch.cuda.is_available():
        raise ValueError(f"--{'device cuda' if args.device else 'accelerator gpu'}: no CUDA "
                         f"device is available here")
    lightning, config, trained, args = _policy_and_backbone(args)
    backbone = lightning.config_class.backbone
    refuse_foreign_options(args, backbone)
    if trained is None:
        refuse_given(args, ("any_size", "compile", "trust_checkpoint", "accelerator",
                            "device"),
                     f"applies to a trained policy (--checkpoint) only; the --policy "
                     f"{args.policy} baseline has none and runs on the CPU")
    elif args.benchmark:
        refuse_given(args, ("any_size",), "does not apply with --benchmark x (the "
                                          "checkpoint's size is not checked there)")
    if args.augment == 1:
        refuse_given(args, ("starts",), "does not apply with --augment 1 (no copies)")
    options = {k: getattr(args, k) for k in SEARCH_OPTIONS}
    search = build_test_search(lightning, config, args.augment, options)
    if trained is not None:
        lightning.check_policy_search(search, {"rollouts": "--rollouts"})
    policy = trained if trained is not None else \
        lightning.baselines[args.policy][1](args.remove or 15)
    stop = budget(args.steps, args.search_seconds)
    if args.benchmark:
        jobs = x_jobs(args)
    else:           # a step backbone: one batch per worker; NDS: a budget per instance
        workers = args.devices * args.num_nodes
        size = 1 if lightning.budget_per_instance else -(-args.instances // workers)
        jobs = generated_jobs(args, size)
    if "remove" in lightning.search_options:        # the removal sets fit the instances
        check_remove(args, jobs, search.remove if trained is not None else args.remove or 15,
                     "policy" if trained is not None else args.policy)
    setting = "X" if args.benchmark else f"{args.problem}{args.num_customers}"
    out = Path(args.out or f"runs/eval_{backbone}_{setting.lower()}_{args.policy}")
    done, ran = search_jobs(args, jobs, search, stop, policy, trained is not None, out)
    if done is None:
        return None
    rows = [row for job in done for row in job["rows"]]
    total = sum(job["count"] for job in done)
    result: dict[str, Any] = {
        "policy": args.policy if trained is None else args.checkpoint,
        "backbone": backbone, "problem": "cvrp" if args.benchmark else args.problem,
        "num_customers": None if args.benchmark else args.num_customers,
        "benchmark": args.benchmark, "instances": total, "steps": args.steps,
        "search_seconds": args.search_seconds, "augment": args.augment,
        **lightning.search_settings(search), "device": ran["device"],
        # one job: its search's own means; several: weighted by their instances
        "initial_cost": _mean(done, "initial_cost", total), "cost": _mean(done, "cost", total),
        "seconds": sum(job["seconds"] for job in done), "rows": rows, "out": str(out)}
    if args.benchmark:
        result["reference"] = "BKS"
    elif args.reference != "none":
        add_reference(args, rows, args.time_limit)
    if all(r["target"] is not None for r in rows):
        cost = torch.tensor([r["objective"] for r in rows], dtype=torch.float64)
        ref = torch.tensor([r["target"] for r in rows], dtype=torch.float64)
        result.update(reference_cost=float(ref.mean()), gap_percent=gap_percent(cost, ref),
                      instance_gap_percent=instance_gap_percent(cost, ref))
    _write(result, out)
    return result


def _mean(done: list[dict[str, Any]], key: str, total: int) -> float:
    if len(done) == 1:
        return done[0][key]
    return sum(job[key] * job["count"] for job in done) / total


def _write(result: dict[str, Any], out: Path) -> None:
    with open(out / "table.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(result["rows"][0]), extrasaction="ignore")
        w.writeheader()
        w.writerows(result["rows"])
    (out / "result.json").write_text(json.dumps(result, indent=2))
