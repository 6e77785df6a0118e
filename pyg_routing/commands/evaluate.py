"""``pyg-routing evaluate``: every backbone's test search with a trained policy
(``--checkpoint``) or one of the backbone's non-learned baselines (``--policy random``;
NDS also ``sisr``), on generated instances or CVRPLib X (``--benchmark x``).

The search is the backbone's (:meth:`ImprovementLightning.test_search`: the step search
of DACT and N2S, NDS's destroy-and-repair search) as a recipe's ``test`` section says
(by default the one the checkpoint was trained with), under one budget:
``--test.steps`` iterations and/or ``--test.seconds`` of wall time. The jobs run as
Lightning ``predict`` steps over ``--workers`` processes
(:func:`~pyg_routing.training.search_predictor.run_jobs`): a step backbone searches its
generated instances as one batch per worker; NDS gives every instance its own budget,
as NDS does; benchmark instances (their sizes differ) are one job each. The result: the
mean initial and best cost, the gap to a reference (PyVRP / OR-Tools on generated
instances, the BKS on X) and one row per instance, also written to ``--out`` as
``table.csv`` and ``result.json``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
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
from pyg_routing.training import backbones


def _add_options(p: Any) -> None:
    policy = p.add_argument_group("Policy: a trained checkpoint or a baseline")
    policy.add_argument("--checkpoint", default=None, help="a `pyg-routing train` checkpoint")
    policy.add_argument("--trust_checkpoint", action="store_true",
                        help="UNSAFE: read --checkpoint with full unpickling, which runs code "
                             "from the file; only for files you made or trust")
    names = sorted({n for b in backbones.names() for n in backbones.config_class(b).BASELINES})
    policy.add_argument("--policy", choices=("checkpoint", *names), default="checkpoint",
                        help="checkpoint, or a non-learned baseline of the backbone")
    policy.add_argument("--any_size", action="store_true",
                        help="allow a problem size other than the one trained on")
    add_instance_options(p)


def parse(argv: Sequence[str]) -> TestCommand:
    return parse_test_command(
        "pyg-routing evaluate", __doc__.split("\n\n")[1].replace("\n", " "), argv,
        _add_options)


def _policy(command: TestCommand) -> Any:
    """The trained policy (``None`` for a baseline), the checks that come with it."""
    o, given = command.options, command.typed
    if o.policy != "checkpoint":
        if o.checkpoint is not None:
            raise ValueError(f"--checkpoint is the trained policy; --policy {o.policy} "
                             f"takes none")
        if o.policy not in command.lightning.baselines:
            raise ValueError(f"--policy {o.policy} is not a baseline of the "
                             f"{command.config.backbone} backbone; choose from "
                             f"{', '.join(command.lightning.baselines)}")
        refuse_typed(given, ("any_size", "trust_checkpoint", "accelerator", "test.compile"),
                     f"applies to a trained policy (--checkpoint) only; the --policy "
                     f"{o.policy} baseline has none and runs on the CPU", o)
        return None
    if command.checkpoint is None:
        raise ValueError("evaluate needs --checkpoint (or a baseline: --policy random)")
    hp = command.checkpoint["hyper_parameters"]
    trained = command.config
    stored = backbones.config_class(hp["backbone"]).create(
        **{k: v for k, v in hp.items() if k != "backbone"})
    if o.benchmark or o.instance:
        refuse_typed(given, ("any_size",), "does not apply with --benchmark x or --instance "
                                           "(the checkpoint's size is not checked there)", o)
    elif trained.num_customers != stored.num_customers and not o.any_size:
        raise ValueError(f"checkpoint {o.checkpoint} was trained on {stored.problem}-"
                         f"{stored.num_customers}, but --num_customers is "
                         f"{trained.num_customers}; pass --any_size to evaluate anyway")
    compiled = True if getattr(trained.test, "compile", False) else None
    return backbones.load_policy(o.checkpoint,
                                 expect_problem="cvrp" if o.benchmark else
                                 None if o.instance else trained.problem,
                                 compiled=compiled, checkpoint=command.checkpoint)


def run(command: TestCommand) -> dict[str, Any] | None:
    import torch

    from pyg_routing.search import budget, gap_percent, instance_gap_percent

    refuse_instance_options(command)
    o, c, lightning = command.options, command.config, command.lightning
    trained = _policy(command)
    if c.test.augment == 1:
        refuse_typed(command.typed, ("test.starts",), "does not apply with --test.augment 1 "
                                                      "(no copies)", o)
    search = lightning.test_search(c)
    if trained is not None:
        lightning.check_policy_search(search)
    remove = getattr(c.test, "remove", None)
    policy = trained if trained is not None else lightning.baselines[o.policy][1](remove or 15)
    stop = budget(c.test.steps, c.test.seconds)
    spec = command.generated()
    if o.instance:
        jobs = instance_jobs(o.instance, o.data_dir, lightning.make_env(c))
    elif o.benchmark:
        jobs = x_jobs(o.data_dir, o.names, o.max_customers)
    else:           # a step backbone: one batch per worker; NDS: a budget per instance
        workers = o.workers * o.num_nodes
        size = 1 if lightning.budget_per_instance else -(-spec.count // workers)
        jobs = generated_jobs(spec, size)
    if hasattr(search, "remove"):        # the removal sets fit the instances
        check_remove(jobs, search.remove if trained is not None else remove or 15,
                     "policy" if trained is not None else o.policy,
                     "test.remove" in command.typed,
                     "smallest benchmark instance" if o.benchmark or o.instance
                     else "instances")
    setting = ("X" if o.benchmark else "instance" if o.instance
               else f"{c.problem}{c.num_customers}")
    out = Path(o.out or f"runs/eval_{c.backbone}_{setting.lower()}_{o.policy}")
    done, ran = search_jobs(command.workers(), jobs, search, stop, policy, trained is not None,
                            out)
    if done is None:
        return None
    rows = [row for job in done for row in job["rows"]]
    total = sum(job["count"] for job in done)
    result: dict[str, Any] = {
        "policy": o.policy if trained is None else o.checkpoint,
        "backbone": c.backbone,
        "problem": "cvrp" if o.benchmark else None if o.instance else c.problem,
        "num_customers": None if o.benchmark or o.instance else c.num_customers,
        "benchmark": o.benchmark, "instance": o.instance, "instances": total,
        "test": c.test.to_dict(),
        "steps": c.test.steps, "seconds_budget": c.test.seconds, "augment": c.test.augment,
        **lightning.search_settings(search), "device": ran["device"],
        # one job: its search's own means; several: weighted by their instances
        "initial_cost": _mean(done, "initial_cost", total), "cost": _mean(done, "cost", total),
        "seconds": sum(job["seconds"] for job in done), "rows": rows, "out": str(out)}
    reference = command.reference
    if o.benchmark or o.instance:
        result["reference"] = "BKS"
    elif reference.solver != "none":
        add_reference(spec, rows, reference.solver, reference.seconds, o.root,
                      not (o.no_progress or o.json))
    if rows and all(r["target"] is not None for r in rows):
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
        # the routes are in result.json; the table keeps one line per instance
        columns = [k for k in result["rows"][0] if k != "solution"]
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(result["rows"])
    (out / "result.json").write_text(json.dumps(result, indent=2))


print_config = test_print_config
