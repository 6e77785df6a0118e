"""``pyg-routing search``: NDS's augmented simulated annealing
(:class:`~pyg_routing.search.DestroyRepairSearch`) on generated
instances or on CVRPLib X, with a non-learned destroy (``random``, ``sisr``) or a
trained NDS removal policy (``policy``, from a ``train --backbone nds`` checkpoint).

Every instance is one prediction of a Lightning :class:`SearchPredictor`, so
``--devices`` and ``--num-nodes`` spread the instances over worker processes (each
running its repairs on ``--threads`` CPU cores) and Lightning's progress bar counts
instances. Every instance gets the whole ``--time-limit``, its start solutions
included (as in NDS). With a policy, each worker runs it on its accelerator
(``--accelerator auto``: a GPU when there is one) and the repairs on its CPU cores.

CVRPLib X protocol: the search reads the coordinates divided by 1000 (NDS's scale, for
which its absolute temperatures are set) with float distances; the reported cost is
that of the returned routes under CVRPLib's convention (every arc rounded to the
nearest integer, :meth:`RoutingData.cost`), against the best-known value in
``bks.csv``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyg_routing.commands.jobs import (
    add_instance_options,
    add_reference,
    check_remove,
    data_options,
    generated_jobs,
    refuse_instance_options,
    search_jobs,
    x_jobs,
)
from pyg_routing.probes.paper_nds_values import X_AVERAGE_GAP, caption, setting_values, x_table
from pyg_routing.training.backbones import add_trust_option
from pyg_routing.training.fit import (
    count,
    positive,
    refuse_given,
)

#: the ``--destroy`` providers (``policy``: a trained NDS removal policy, ``--checkpoint``)
DESTROYS = ("random", "sisr", "policy")
#: the problems of the search (NDS's)
SEARCH_PROBLEMS = ("cvrp", "vrptw", "pcvrp")


def make_destroy(name: str, size: int) -> Any:
    """The destroy provider ``name`` removing about ``size`` customers per set."""
    from pyg_routing.training import backbones

    baselines = backbones.get("nds").baselines
    if name in baselines:
        return baselines[name][1](size)
    if name == "policy":
        raise ValueError("the policy destroy is built per instance from --checkpoint "
                         "(load_destroy_policy)")
    raise ValueError(f"unknown destroy {name!r}; choose from {', '.join(DESTROYS)}")


def add_search_parser(sub: Any) -> None:
    p = sub.add_parser(
        "search", help="NDS's augmented simulated annealing on instances or CVRPLib X",
        description="Destroy-and-repair search (NDS): removal sets from --destroy, greedy "
                    "repair, simulated annealing over 8 augmentations, per instance for "
                    "--time-limit seconds; writes a per-instance table (CSV, Markdown, "
                    "JSON) with the gap to a reference or the best-known values.")
    p.add_argument("--problem", choices=SEARCH_PROBLEMS, default=None,
                   help="generated instances' problem (default: the --checkpoint's, else "
                        "cvrp)")
    p.add_argument("--num-customers", type=count(2), default=500)
    p.add_argument("--instances", type=count(1), default=16, help="generated instances")
    add_instance_options(p)
    p.add_argument("--destroy", choices=DESTROYS, default="sisr",
                   help="removal sets: random, sisr or policy (a trained NDS policy)")
    p.add_argument("--checkpoint", default=None,
                   help="--destroy policy: a `pyg-routing train --backbone nds` checkpoint")
    add_trust_option(p)
    p.add_argument("--accelerator", choices=("auto", "cpu", "gpu"), default="auto",
                   help="--destroy policy: where the policy runs (auto: a GPU if available)")
    p.add_argument("--remove", type=count(1), default=15,
                   help="customers per removal set (SISR: its average c̄)")
    p.add_argument("--time-limit", type=positive, default=60.0, help="seconds per instance")
    p.add_argument("--iterations", type=count(1), default=None,
                   help="stop after this many iterations (with or without a time limit)")
    p.add_argument("--augment", type=count(1), default=8, help="solution slots per instance")
    p.add_argument("--rollouts", type=count(1), default=200,
                   help="removal sets per slot and iteration")
    p.add_argument("--recreate", type=count(1), default=5, help="repairs per removal set")
    p.add_argument("--reference", choices=("none", "pyvrp", "ortools"), default="none",
                   help="generated instances: solve them for the gap (cached under --root)")
    p.add_argument("--reference-time-limit", type=positive, default=None,
                   help="seconds per instance of the reference (default: --time-limit)")
    p.add_argument("--root", default="data", help="dataset cache of the references")
    p.add_argument("--devices", type=count(1), default=1, help="worker processes per node")
    p.add_argument("--num-nodes", type=count(1), default=1, help="machines")
    p.add_argument("--threads", type=count(1), default=None,
                   help="repair threads per worker (default: cores / devices)")
    p.add_argument("--out", default=None, help="folder of the table (default: runs/search_...)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--json", action="store_true", help="print a JSON object")


def load_destroy_policy(args: argparse.Namespace) -> Any:
    """The NDS policy of ``--checkpoint`` for ``--destroy policy`` (``None`` for the other
    destroys).

    Raises:
        ValueError: ``--destroy policy`` without ``--checkpoint`` (or a checkpoint with
            another destroy), a checkpoint of another backbone, or one trained on
            another problem than the instances'.
    """
    from pyg_routing.training import backbones

    if args.destroy != "policy":
        if args.checkpoint is not None:
            raise ValueError(f"--checkpoint is the policy of --destroy policy; --destroy "
                             f"{args.destroy} takes none")
        return None
    if args.checkpoint is None:
        raise ValueError("--destroy policy needs --checkpoint (a `pyg-routing train "
                         "--backbone nds` checkpoint)")
    # an unset --problem expects nothing: it becomes the checkpoint's (with_problem)
    problem = "cvrp" if args.benchmark else args.problem
    return backbones.load_policy(args.checkpoint, expect_backbone="nds",
                                 expect_problem=problem,
                                 trust=getattr(args, "trust_checkpoint", False))


def with_problem(args: argparse.Namespace, policy: Any) -> argparse.Namespace:
    """A copy of ``args`` whose unset ``--problem`` is the problem of ``policy`` (the
    ``--destroy policy`` checkpoint's, ``None`` for the other destroys), else the
    default; ``args`` itself is left as given."""
    from pyg_routing.commands.train import problem_defaults

    return problem_defaults(args, None if policy is None else policy.problem)


def run_search(args: argparse.Namespace) -> dict[str, Any] | None:
    """Search every instance (Lightning ``predict``, strategy DDP over ``--devices`` x
    ``--num-nodes`` workers, :func:`~pyg_routing.training.search_predictor.run_jobs`);
    returns the table as a dict on rank 0 (``None`` on the other ranks). The references
    of generated instances are solved afterwards, on rank 0 only, so workers never
    build one cache twice."""
    from pyg_routing.search import DestroyRepairSearch, budget
    from pyg_routing.training import backbones

    refuse_instance_options(args, ("reference_time_limit",))
    if args.destroy != "policy":
        refuse_given(args, ("accelerator", "trust_checkpoint"),
                     f"applies to --destroy policy only (the trained policy); --destroy "
                     f"{args.destroy} runs on the CPU and reads no checkpoint")
    search = DestroyRepairSearch(augment=args.augment, rollouts=args.rollouts,
                                 recreate_n=args.recreate, remove=args.remove)
    if args.destroy == "policy":
        backbones.get("nds").check_policy_search(search, {"rollouts": "--rollouts"})
    stop = budget(args.iterations, args.time_limit)
    policy = load_destroy_policy(args)
    args = with_problem(args, policy)          # the checkpoint, read once, names the problem
    searcher = policy if policy is not None else make_destroy(args.destroy, args.remove)
    jobs = x_jobs(args) if args.benchmark else generated_jobs(args)
    check_remove(args, jobs, args.remove, args.destroy)
    setting = "X" if args.benchmark else f"{args.problem}{args.num_customers}"
    out = Path(args.out or f"runs/search_{setting.lower()}_{args.destroy}")
    done, workers = search_jobs(args, jobs, search, stop, searcher, policy is not None, out)
    if done is None:
        return None
    rows = [row for job in done for row in job["rows"]]
    if not args.benchmark and args.reference != "none":
        add_reference(args, rows, args.reference_time_limit or args.time_limit)
    add_paper_values(args, rows)
    destroy = repr(searcher) if policy is None else f"PolicyDestroy(k={args.remove}, {policy!r})"
    result = {"setting": setting, "destroy": destroy,
              "checkpoint": args.checkpoint, "time_limit": args.time_limit,
              "iterations_cap": args.iterations, "augment": args.augment,
              "rollouts": args.rollouts, "recreate": args.recreate, "seed": args.seed,
              "preset": None if args.benchmark else args.preset,
              "data_options": None if args.benchmark else data_options(args),
              "reference": "BKS" if args.benchmark else args.reference,
              "devices": args.devices * args.num_nodes, "threads": workers["threads"], "rows": rows,
              "mean": summarize(rows), "out": str(out),
              "paper": None if args.benchmark else setting_values(
                  args.problem, args.num_customers, args.preset)}
    write_tables(result, out)
    return result


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over the instances (the gap of every instance that has one)."""
    def mean(key: str) -> float | None:
        vals = [r[key] for r in rows if r.get(key) is not None]
        return sum(vals) / len(vals) if vals else None

    return {key: mean(key) for key in ("objective", "target", "gap_percent", "iterations",
                                       "seconds", "start_seconds", "accepted",
                                       "paper_nds_gap", "paper_ipexpe_gap")}


def add_paper_values(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    """X: the paper's per-instance NDS and IPE+XPE gaps (Tab. 7) into ``rows``."""
    if not args.benchmark:
        return
    table = x_table()
    for row in rows:
        paper = table.get(row["instance"])
        row["paper_nds_gap"] = None if paper is None else paper["nds_gap_percent"]
        row["paper_ipexpe_gap"] = None if paper is None else paper["ipexpe_gap_percent"]


COLUMNS = ("instance", "customers", "target", "objective", "gap_percent", "start_objective",
           "iterations", "seconds", "start_seconds", "accepted", "routes", "paper_nds_gap",
           "paper_ipexpe_gap")


def render_markdown(result: dict[str, Any]) -> str:
    ref = result["reference"]
    head = ["instance", "n", ref if ref != "none" else "reference", "objective", "gap",
            "iterations", "seconds"]
    x = ref == "BKS"
    if x:
        head += ["paper NDS gap", "paper IPE+XPE gap"]
    lines = [f"**{result['setting']}**, ASA with {result['destroy']}: {result['time_limit']:g} s "
             f"per instance, augment {result['augment']}, {result['rollouts']} sets x "
             f"{result['recreate']} repairs per slot and iteration, seed {result['seed']}, "
             f"{result['threads']} thread(s) x {result['devices']} worker(s)", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    if result.get("paper"):
        table = "Tab. 6" if result.get("preset", "nds") != "nds" else "Tab. 5"
        lines.insert(1, caption(result["paper"], table) + (
            "; the paper's PCVRP objective adds the prizes of all customers"
            if result["setting"].startswith("pcvrp") else ""))
    if x:
        lines.insert(1, "Paper (Tab. 7, 84 X instances, 60 s, CVRP-500 models): average gap "
                     + ", ".join(f"{k} {v:.3f} %" for k, v in X_AVERAGE_GAP.items())
                     + "; per instance in the last columns (mean over the instances listed)")

    def fmt(v: Any, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    for r in [*result["rows"], {"instance": "**mean**", **result["mean"]}]:
        lines.append("| " + " | ".join([
            str(r["instance"]), fmt(r.get("customers"), "d"), fmt(r.get("target"), ".3f"),
            fmt(r.get("objective"), ".3f"), fmt(r.get("gap_percent"), ".2f") + (
                "%" if r.get("gap_percent") is not None else ""),
            fmt(r.get("iterations"), ".0f"), fmt(r.get("seconds"), ".1f")]
            + ([fmt(r.get("paper_nds_gap"), ".2f"), fmt(r.get("paper_ipexpe_gap"), ".2f")]
               if x else [])) + " |")
    return "\n".join(lines)


def write_tables(result: dict[str, Any], out: Path, columns: Sequence[str] = COLUMNS,
                 render: Callable[[dict[str, Any]], str] | None = None) -> None:
    """``table.csv`` (the rows' ``columns``), ``table.md`` (``render``, default this
    command's table) and ``result.json`` under ``out``."""
    import csv

    with open(out / "table.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(columns), extrasaction="ignore")
        w.writeheader()
        w.writerows(result["rows"])
    (out / "table.md").write_text((render or render_markdown)(result) + "\n")
    (out / "result.json").write_text(json.dumps(result, indent=2))
