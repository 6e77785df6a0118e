"""``pyg-routing generate``, ``solve`` and ``info``: seeded datasets of instances, their
reference solutions, and what a dataset folder, cache file or instance holds."""

from __future__ import annotations

import glob
import os.path as osp
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyg_routing.commands.grammar import (
    CommandParser,
    count,
    positive,
    refuse_typed,
    seed_value,
    typed,
)
from pyg_routing.commands.train import add_output_options
from pyg_routing.data.problems import PROBLEMS
from pyg_routing.errors import RoutingError
from pyg_routing.training.sections import DataOptions

#: the options of a generated dataset, which ``solve --instance`` does not take
DATASET_OPTIONS = ("problem", "num_customers", "num_instances", "seed", "distribution",
                   "capacity", "exact", "workers", "root",
                   *(f"data.{k}" for k in DataOptions.defaults()))


@dataclass
class Parsed:
    """A parsed command line: its options and the options typed on it."""

    options: Any
    typed: dict[str, str]
    command: str = ""


def add_data_options(p: CommandParser) -> None:
    """``--data.*``: the instance family (:class:`DataOptions`)."""
    p.add_class_arguments(DataOptions, "data", sub_configs=False)


def data_kwargs(options: Any, given: dict[str, str]) -> dict[str, Any]:
    """``make_generator`` options of the family in ``options.data``; the street grid's
    options typed without ``--data.costs streets`` are refused (they would be
    ignored)."""
    data = DataOptions.build(options.data.as_dict() if hasattr(options.data, "as_dict")
                             else dict(vars(options.data)))
    if data.costs != "streets":
        refuse_typed(given, ("data.grid", "data.one_way"),
                     f"applies to --data.costs streets only (this family's costs are "
                     f"{data.costs})", options)
    return data.generator_options()


def _dataset_args(p: CommandParser) -> None:
    p.add_argument("--problem", choices=PROBLEMS, default="cvrp", help="routing problem")
    p.add_argument("--num_customers", type=count(1), default=100,
                   help="customers per instance (TSP: cities)")
    p.add_argument("--num_instances", type=count(1), default=1000,
                   help="number of instances")
    p.add_argument("--seed", type=seed_value, default=0, help="generator seed")
    p.add_argument("--distribution", choices=("uniform", "clustered"), default="uniform",
                   help="customer layout")
    p.add_argument("--capacity", type=positive, default=None,
                   help="vehicle capacity (default: the paper's C(n))")
    p.add_argument("--exact", action="store_true",
                   help="nds presets: replay NDS's random streams (with --seed 1234 and "
                        "NDS's instance count this rebuilds its test file)")
    add_data_options(p)
    p.add_argument("--root", default="data", help="dataset folder (cache)")


def parse(argv: Sequence[str], command: str) -> Parsed:
    """Parse ``generate``, ``solve`` or ``info``."""
    prog = f"pyg-routing {command}"
    if command == "info":
        p = CommandParser(prog=prog, description="Describe a dataset folder made by "
                          "generate/solve, one of its cache files, or a benchmark instance.")
        p.add_argument("dataset", help="dataset folder, .pt/.json cache file, or instance")
        p.add_argument("--json", action="store_true", help="print a JSON object")
        return Parsed(p.parse_args(list(argv)), typed(argv), command)
    if command == "generate":
        p = CommandParser(prog=prog, description="Generate seeded instances and cache "
                                                 "them under --root.")
        _dataset_args(p)
        p.add_argument("--json", action="store_true", help="print a JSON object")
        return Parsed(p.parse_args(list(argv)), typed(argv), command)
    p = CommandParser(prog=prog, description=(
        "Compute reference solutions (PyVRP HGS, OR-Tools, or a constructive heuristic) for "
        "a generated dataset, in parallel with a progress bar, and cache them; or solve one "
        "instance file with --instance."))
    _dataset_args(p)
    p.add_argument("--solver", default="auto",
                   help="auto (PyVRP), pyvrp, ortools, nearest_neighbor, sweep, insertion")
    p.add_argument("--time_limit", type=positive, default=1.0, help="seconds per instance")
    p.add_argument("--workers", type=count(1), default=None,
                   help="processes (default: all cores)")
    p.add_argument("--solver_seed", type=seed_value, default=0, help="solver seed")
    p.add_argument("--instance", default=None,
                   help="an instance file or a bundled instance's name (e.g. X-n101-k25) "
                        "to solve instead of a generated dataset")
    add_output_options(p)
    return Parsed(p.parse_args(list(argv)), typed(argv), command)


def _generator_kwargs(parsed: Parsed) -> dict[str, Any]:
    o = parsed.options
    kwargs: dict[str, Any] = {"capacity": o.capacity} if o.capacity is not None else {}
    if o.exact:
        if o.data.preset == "paper":
            raise ValueError("--exact replays NDS's random streams; it needs an nds "
                             "--data.preset")
        kwargs["exact"] = True
    kwargs.update(data_kwargs(o, parsed.typed))
    return kwargs


def run(parsed: Parsed) -> dict[str, Any]:
    return {"generate": _generate, "solve": _solve, "info": _info}[parsed.command](parsed)


def _generate(parsed: Parsed) -> dict[str, Any]:
    from pyg_routing.data.dataset import RoutingDataset

    o = parsed.options
    ds = RoutingDataset(o.root, o.problem, o.num_customers, o.num_instances, seed=o.seed,
                        distribution=o.distribution,
                        generator_kwargs=_generator_kwargs(parsed))
    return {"path": ds.processed_paths[0], **ds.meta}


def _solve(parsed: Parsed) -> dict[str, Any]:
    o = parsed.options
    if o.instance is not None:
        refuse_typed(parsed.typed, DATASET_OPTIONS, "does not apply with --instance (the "
                     "instance is solved as it is, uncached)", o)
        return _solve_instance(o)
    from pyg_routing.data.dataset import RoutingDataset

    ds = RoutingDataset(o.root, o.problem, o.num_customers, o.num_instances, seed=o.seed,
                        distribution=o.distribution,
                        generator_kwargs=_generator_kwargs(parsed), solver=o.solver,
                        time_limit=o.time_limit, num_workers=o.workers,
                        solver_seed=o.solver_seed, progress=not (o.no_progress or o.json))
    return {"path": ds.processed_paths[0], **ds.meta}


def _solve_instance(o: Any) -> dict[str, Any]:
    from pyg_routing.data.benchmarks import load_instance
    from pyg_routing.data.solvers import solve_instances

    inst = load_instance(o.instance)
    start = time.perf_counter()
    solved = solve_instances([inst], solver=o.solver, time_limit=o.time_limit,
                             seed=o.solver_seed, num_workers=1, progress=False)[0]
    out: dict[str, Any] = {"instance": getattr(inst, "name", o.instance),
                           "problem": inst.problem, "num_nodes": inst.num_nodes,
                           "cost": float(solved.cost()), "routes": len(solved.routes()),
                           "feasible": bool(solved.is_feasible(allow_zero_length=True)),
                           "seconds": time.perf_counter() - start}
    try:
        best = load_instance(o.instance, solution=True).cost()
        out["bks"] = float(best)
        out["gap_percent"] = 100.0 * (out["cost"] - float(best)) / abs(float(best))
    except (RoutingError, FileNotFoundError):
        pass
    return out


def _info(parsed: Parsed) -> dict[str, Any]:
    target = parsed.options.dataset
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

#: ``parse`` takes the command's name (this module serves three commands)
TAKES_COMMAND_NAME = True
