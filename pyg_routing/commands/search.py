"""``pyg-routing search``: NDS's augmented simulated annealing
(:class:`~pyg_routing.search.DestroyRepairSearch`) on generated instances or on CVRPLib
X, with a non-learned destroy (``random``, ``sisr``) or a trained NDS removal policy
(``policy``, from a ``train --backbone nds`` checkpoint).

The options are ``evaluate``'s for the nds backbone (the same ``--test.*`` budget and
search options, ``--workers``, ``--reference.*``); every instance is one prediction of
a Lightning :class:`SearchPredictor`, so ``--workers`` and ``--num_nodes`` spread the
instances over worker processes (each running its repairs on ``--threads`` CPU cores)
and Lightning's progress bar counts instances. Every instance gets the whole
``--test.seconds``, its start solutions included (as in NDS). With a policy, each
worker runs it on its accelerator (``--accelerator auto``: a GPU when there is one) and
the repairs on its CPU cores.

CVRPLib X protocol: the search reads the coordinates divided by 1000 (NDS's scale, for
which its absolute temperatures are set) with float distances; the reported cost is
that of the returned routes under CVRPLib's convention (every arc rounded to the
nearest integer, :meth:`RoutingData.cost`), against the best-known value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyg_routing.commands.grammar import refuse_typed
from pyg_routing.commands.jobs import (
    add_reference,
    check_remove,
    generated_jobs,
    instance_jobs,
    search_jobs,
    x_jobs,
)
from pyg_routing.commands.test_command import (
    TestCommand,
    add_instance_options,
    parse_test_command,
    refuse_instance_options,
)
from pyg_routing.commands.test_command import print_config as test_print_config
from pyg_routing.probes.paper_nds_values import X_AVERAGE_GAP, caption, setting_values, x_table

#: the ``--destroy`` providers (``policy``: a trained NDS removal policy, ``--checkpoint``)
DESTROYS = ("random", "sisr", "policy")
#: the search's defaults where they differ from NDS's test section: a quick run of a
#: few instances, one minute each, no step cap, no reference
DEFAULTS = {"num_customers": 500, "test.instances": 16, "test.seconds": 60.0,
            "test.steps": None, "reference.solver": "none"}


def make_destroy(name: str, size: int) -> Any:
    """The destroy provider ``name`` removing about ``size`` customers per set."""
    from pyg_routing.training import backbones

    baselines = backbones.get("nds").baselines
    if name in baselines:
        return baselines[name][1](size)
    if name == "policy":
        raise ValueError("the policy destroy is built from --checkpoint")
    raise ValueError(f"unknown destroy {name!r}; choose from {', '.join(DESTROYS)}")


def _add_options(p: Any) -> None:
    destroy = p.add_argument_group("Destroy: where the removal sets come from")
    destroy.add_argument("--destroy", choices=DESTROYS, default="sisr",
                         help="removal sets: random, sisr or policy (a trained NDS policy)")
    destroy.add_argument("--checkpoint", default=None,
                         help="--destroy policy: a `pyg-routing train --backbone nds` "
                              "checkpoint")
    destroy.add_argument("--trust_checkpoint", action="store_true",
                         help="UNSAFE: read --checkpoint with full unpickling, which runs "
                              "code from the file; only for files you made or trust")
    add_instance_options(p)


def parse(argv: Sequence[str]) -> TestCommand:
    return parse_test_command(
        "pyg-routing search", "Destroy-and-repair search (NDS): removal sets from --destroy, "
        "greedy repair, simulated annealing over --test.augment slots, per instance for "
        "--test.seconds; writes a per-instance table (CSV, Markdown, JSON) with the gap to "
        "a reference or the best-known values.", argv, _add_options, backbone="nds",
        defaults=DEFAULTS)


def load_destroy_policy(command: TestCommand) -> Any:
    """The NDS policy of ``--checkpoint`` for ``--destroy policy`` (``None`` for the other
    destroys).

    Raises:
        ValueError: ``--destroy policy`` without ``--checkpoint`` (or a checkpoint with
            another destroy), or one trained on another problem than the instances'.
    """
    from pyg_routing.training import backbones

    o = command.options
    if o.destroy != "policy":
        if o.checkpoint is not None:
            raise ValueError(f"--checkpoint is the policy of --destroy policy; --destroy "
                             f"{o.destroy} takes none")
        return None
    if o.checkpoint is None:
        raise ValueError("--destroy policy needs --checkpoint (a `pyg-routing train "
                         "--backbone nds` checkpoint)")
    problem = "cvrp" if o.benchmark else None if o.instance else command.config.problem
    return backbones.load_policy(o.checkpoint, expect_backbone="nds", expect_problem=problem,
                                 checkpoint=command.checkpoint)


def run(command: TestCommand) -> dict[str, Any] | None:
    """Search every instance (Lightning ``predict`` over ``--workers`` x
    ``--num_nodes`` workers, :func:`~pyg_routing.training.search_predictor.run_jobs`);
    returns the table as a dict on rank 0 (``None`` on the other ranks). The references
    of generated instances are solved afterwards, on rank 0 only, so workers never
    build one cache twice."""
    o, c = command.options, command.config
    refuse_instance_options(command)
    if o.destroy != "policy":
        refuse_typed(command.typed, ("accelerator", "trust_checkpoint"),
                     f"applies to --destroy policy only (the trained policy); --destroy "
                     f"{o.destroy} runs on the CPU and reads no checkpoint", o)
    policy = load_destroy_policy(command)
    search = command.lightning.test_search(c)
    if policy is not None:
        command.lightning.check_policy_search(search)
    from pyg_routing.search import budget

    stop = budget(c.test.steps, c.test.seconds)
    remove = search.remove
    searcher = policy if policy is not None else make_destroy(o.destroy, remove)
    spec = command.generated()
    jobs = (instance_jobs(o.instance, o.data_dir, command.lightning.make_env(c)) if o.instance
            else x_jobs(o.data_dir, o.names, o.max_customers) if o.benchmark
            else generated_jobs(spec))
    check_remove(jobs, remove, o.destroy, "test.remove" in command.typed,
                 "smallest benchmark instance" if o.benchmark or o.instance else "instances")
    setting = ("X" if o.benchmark else "instance" if o.instance
               else f"{c.problem}{c.num_customers}")
    out = Path(o.out or f"runs/search_{setting.lower()}_{o.destroy}")
    done, workers = search_jobs(command.workers(), jobs, search, stop, searcher,
                                policy is not None, out)
    if done is None:
        return None
    rows = [row for job in done for row in job["rows"]]
    reference = command.reference
    if not (o.benchmark or o.instance) and reference.solver != "none":
        add_reference(spec, rows, reference.solver, reference.seconds, o.root,
                      not (o.no_progress or o.json))
    add_paper_values(o.benchmark, rows)
    destroy = repr(searcher) if policy is None else f"PolicyDestroy(k={remove}, {policy!r})"
    result = {"setting": setting, "destroy": destroy, "checkpoint": o.checkpoint,
              "test": c.test.to_dict(), "time_limit": c.test.seconds,
              "iterations_cap": c.test.steps, "augment": c.test.augment,
              "rollouts": search.rollouts, "recreate": search.recreate_n,
              "seed": c.test.seed, "instance": o.instance,
              "preset": None if o.benchmark or o.instance else spec.preset,
              "data_options": None if o.benchmark or o.instance else spec.data_options(),
              "reference": "BKS" if o.benchmark or o.instance else reference.solver,
              "devices": o.workers * o.num_nodes, "threads": workers["threads"],
              "rows": rows, "mean": summarize(rows), "out": str(out),
              "paper": None if o.benchmark or o.instance else setting_values(
                  c.problem, c.num_customers, spec.preset)}
    write_tables(result, out)
    return result


print_config = test_print_config


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over the instances (the gap of every instance that has one)."""
    def mean(key: str) -> float | None:
        vals = [r[key] for r in rows if r.get(key) is not None]
        return sum(vals) / len(vals) if vals else None

    return {key: mean(key) for key in ("objective", "target", "gap_percent", "iterations",
                                       "seconds", "start_seconds", "accepted",
                                       "paper_nds_gap", "paper_ipexpe_gap")}


def add_paper_values(benchmark: str | None, rows: list[dict[str, Any]]) -> None:
    """X: the paper's per-instance NDS and IPE+XPE gaps (Tab. 7) into ``rows``."""
    if not benchmark:
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
    x = result["setting"] == "X"
    if x:
        head += ["paper NDS gap", "paper IPE+XPE gap"]
    budget = (f"{result['time_limit']:g} s" if result.get("time_limit") else
              f"{result['iterations_cap']} iterations")
    lines = [f"**{result['setting']}**, ASA with {result['destroy']}: {budget} "
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


def render(result: dict[str, Any]) -> str:
    return f"{render_markdown(result)}\n\nwritten to {result['out']}/"
