"""The ``pyg-routing`` command line: ``generate``, ``solve``, ``info``, ``probe``,
``train``, ``evaluate``, ``compare``, ``search``, ``reproduce`` and ``import-checkpoint``."""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os.path as osp
import sys
import time
from collections.abc import Sequence
from typing import Any

from lightning.fabric.utilities.exceptions import MisconfigurationException

from pyg_routing.commands.compare import add_compare_parser, render_markdown, run_compare
from pyg_routing.commands.cost_options import COST_OPTIONS, add_cost_options, cost_kwargs
from pyg_routing.commands.evaluate import add_evaluate_parser, run_evaluate
from pyg_routing.commands.import_checkpoint import (
    add_import_checkpoint_parser,
    run_import_checkpoint,
)
from pyg_routing.commands.parser import CommandParser as _Parser
from pyg_routing.commands.probe import add_probe_parser, render_probe, run_probe
from pyg_routing.commands.reproduce import (
    add_reproduce_parser,
    render_reproduce,
    run_reproduce,
)
from pyg_routing.commands.search import add_search_parser, run_search
from pyg_routing.commands.search import render_markdown as render_search
from pyg_routing.commands.train import add_train_parser, run_train
from pyg_routing.data.generators import PROBLEMS
from pyg_routing.data.presets import PRESETS
from pyg_routing.errors import RoutingError
from pyg_routing.training.fit import (
    count,
    one_line,
    positive,
    refuse_given,
    seed_value,
)


def _dataset_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--problem", choices=PROBLEMS, default="cvrp", help="routing problem")
    p.add_argument("--num-customers", type=count(1), default=100,
                   help="customers per instance (TSP: cities)")
    p.add_argument("--num-instances", type=count(1), default=1000,
                   help="number of instances")
    p.add_argument("--seed", type=seed_value, default=0, help="generator seed")
    p.add_argument("--distribution", choices=("uniform", "clustered"), default="uniform",
                   help="customer layout")
    p.add_argument("--capacity", type=positive, default=None,
                   help="vehicle capacity (default: the paper's C(n))")
    p.add_argument("--preset", choices=tuple(PRESETS), default="paper",
                   help="data family: paper (App. F), nds (NDS's data), nds_low_capacity, "
                        "nds_clustered (Tab. 6 shifts)")
    p.add_argument("--exact", action="store_true",
                   help="nds presets: replay NDS's random streams (with --seed 1234 and "
                        "NDS's instance count this rebuilds its test file)")
    add_cost_options(p)
    p.add_argument("--root", default="data", help="dataset folder (cache)")
    p.add_argument("--json", action="store_true", help="print a JSON object")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pyg-routing",
        description="Routing data, reference solutions, probes, training and evaluation "
                    "for pyg_routing.")
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="generate a seeded dataset of instances",
                         description="Generate seeded instances and cache them under --root.")
    _dataset_args(gen)

    solve = sub.add_parser(
        "solve", help="solve a generated dataset or a benchmark instance",
        description="Compute reference solutions (PyVRP HGS, OR-Tools, or a constructive "
                    "heuristic) for a generated dataset, in parallel with a progress bar, "
                    "and cache them; or solve one benchmark instance with --instance.")
    _dataset_args(solve)
    solve.add_argument("--solver", default="auto",
                       help="auto (PyVRP), pyvrp, ortools, "
                            "nearest_neighbor, sweep, insertion")
    solve.add_argument("--time-limit", type=positive, default=1.0,
                       help="seconds per instance")
    solve.add_argument("--workers", type=count(1), default=None,
                       help="processes (default: all cores)")
    solve.add_argument("--solver-seed", type=seed_value, default=0, help="solver seed")
    solve.add_argument("--instance", default=None,
                       help="a benchmark instance path or name (e.g. X-n101-k25) to solve "
                            "instead of a generated dataset")
    solve.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    info = sub.add_parser("info", help="describe a dataset folder, cache file or instance",
                          description="Describe a dataset folder made by generate/solve, one "
                                      "of its cache files, or a benchmark instance.")
    info.add_argument("dataset", help="dataset folder, .pt/.json cache file, or instance")
    info.add_argument("--json", action="store_true", help="print a JSON object")

    add_probe_parser(sub)
    add_train_parser(sub)
    add_evaluate_parser(sub)
    add_compare_parser(sub)
    add_search_parser(sub)
    add_import_checkpoint_parser(sub)
    add_reproduce_parser(sub)
    return parser


def _generator_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"capacity": args.capacity} if args.capacity is not None else {}
    if args.exact:
        if args.preset == "paper":
            raise ValueError("--exact replays NDS's random streams; it needs an nds preset")
        kwargs["exact"] = True
    if args.preset != "paper":
        kwargs["preset"] = args.preset   # RoutingDataset keys its cache on it
    kwargs.update(cost_kwargs(args))
    return kwargs


def _dataset_report(ds) -> dict[str, Any]:
    return {"path": ds.processed_paths[0], **ds.meta}


def cmd_generate(args: argparse.Namespace) -> dict[str, Any]:
    from pyg_routing.data.dataset import RoutingDataset

    ds = RoutingDataset(args.root, args.problem, args.num_customers, args.num_instances,
                        seed=args.seed, distribution=args.distribution,
                        generator_kwargs=_generator_kwargs(args))
    return _dataset_report(ds)


#: the options of a generated dataset, which ``solve --instance`` does not take
DATASET_OPTIONS = ("problem", "num_customers", "num_instances", "seed", "distribution",
                   "capacity", "preset", "exact", "workers", "root", *COST_OPTIONS)


def cmd_solve(args: argparse.Namespace) -> dict[str, Any]:
    if args.instance is not None:
        refuse_given(args, DATASET_OPTIONS, "does not apply with --instance (the benchmark "
                                            "instance is solved as it is, uncached)")
        return _solve_benchmark(args)
    from pyg_routing.data.dataset import RoutingDataset

    ds = RoutingDataset(args.root, args.problem, args.num_customers, args.num_instances,
                        seed=args.seed, distribution=args.distribution,
                        generator_kwargs=_generator_kwargs(args), solver=args.solver,
                        time_limit=args.time_limit, num_workers=args.workers,
                        solver_seed=args.solver_seed, progress=not args.no_progress)
    return _dataset_report(ds)


def _solve_benchmark(args: argparse.Namespace) -> dict[str, Any]:
    from pyg_routing.data.benchmarks import load_instance
    from pyg_routing.data.solvers import solve_instances

    inst = load_instance(args.instance)
    start = time.perf_counter()
    solved = solve_instances([inst], solver=args.solver, time_limit=args.time_limit,
                             seed=args.solver_seed, num_workers=1, progress=False)[0]
    out: dict[str, Any] = {"instance": getattr(inst, "name", args.instance),
                           "problem": inst.problem, "num_nodes": inst.num_nodes,
                           "cost": float(solved.cost()), "routes": len(solved.routes()),
                           "feasible": bool(solved.is_feasible(allow_zero_length=True)),
                           "seconds": time.perf_counter() - start}
    try:
        best = load_instance(args.instance, solution=True).cost()
        out["bks"] = float(best)
        out["gap_percent"] = 100.0 * (out["cost"] - float(best)) / abs(float(best))
    except (RoutingError, FileNotFoundError):
        pass
    return out


def cmd_info(args: argparse.Namespace) -> dict[str, Any]:
    target = args.dataset
    if osp.isdir(target):
        metas = sorted(glob.glob(osp.join(target, "processed", "*.json")))
        if not metas:
            raise RoutingError(f"{target!r} holds no dataset made by `pyg-routing generate` or "
                               f"`solve` (no processed/*.json)")
        return {"root": target, "datasets": [_read_meta(m) for m in metas]}
    if target.endswith((".pt", ".json")) and osp.exists(osp.splitext(target)[0] + ".json"):
        return _read_meta(osp.splitext(target)[0] + ".json")
    from pyg_routing.data.benchmarks import load_instance

    inst = load_instance(target)
    out = {"instance": getattr(inst, "name", target), "problem": inst.problem,
           "num_nodes": inst.num_nodes}
    if "capacity" in inst:
        out["capacity"] = float(inst.capacity)
    try:
        solved = load_instance(target, solution=True)
        out.update(solution_cost=float(solved.cost()), solution_routes=len(solved.routes()))
    except (RoutingError, FileNotFoundError):
        out["solution_cost"] = None
    return out


def _read_meta(path: str) -> dict[str, Any]:
    from pyg_routing.data.dataset import load_summary

    return {"path": osp.splitext(path)[0] + ".pt", **load_summary(path)}


def _print_text(obj: Any, indent: int = 0) -> None:
    pad = "  " * indent
    if isinstance(obj, dict):
        for key, value in obj.items():
            if isinstance(value, dict | list):
                print(f"{pad}{key}:")
                _print_text(value, indent + 1)
            else:
                shown = f"{value:.6g}" if isinstance(value, float) else value
                print(f"{pad}{key}: {shown}")
    elif isinstance(obj, list):
        for item in obj:
            _print_text(item, indent)
            print()
    else:
        print(f"{pad}{obj}")


COMMANDS = {"generate": cmd_generate, "solve": cmd_solve, "info": cmd_info,
            "probe": run_probe, "train": run_train, "evaluate": run_evaluate,
            "compare": run_compare, "search": run_search,
            "import-checkpoint": run_import_checkpoint, "reproduce": run_reproduce}
#: Commands whose text output is a custom rendering of their result dict.
RENDERERS = {"probe": render_probe,
             "compare": lambda r: f"{render_markdown(r)}\n\nwritten to {r['out']}/",
             "search": lambda r: f"{render_search(r)}\n\nwritten to {r['out']}/",
             "reproduce": render_reproduce}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # With --json, stdout carries the JSON alone: whatever the command or a library
    # prints on the way (Lightning's progress bars, tqdm, notices) goes to stderr.
    quiet = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
    # Lightning's MisconfigurationException: a Trainer option that Lightning refuses
    # after the commands' own check (fit.check_trainer) is still one line
    refused = (RoutingError, ValueError, OSError, NotImplementedError,
               MisconfigurationException)
    try:
        with quiet:
            result = COMMANDS[args.command](args)
    except refused as exc:
        print(f"pyg-routing {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    if result is None:                    # a worker rank of a distributed command
        return 0
    if args.json:
        print(json.dumps(result, indent=2))
    elif args.command in RENDERERS:
        print(RENDERERS[args.command](result))
    else:
        _print_text(result)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
