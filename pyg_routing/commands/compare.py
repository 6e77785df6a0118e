"""``pyg-routing compare``: the paper's controlled comparison (Tab. 2) for one setting.

Every encoding gets the same treatment: the same training seed and therefore the
same training batches (``RoutingDataModule``), the same model and PPO options, the
same budget (``--budget-minutes`` of wall time and/or ``--epochs``), then the same
search on the same held-out instances (same initial solutions, steps and
augmentation). Only ``pe`` differs. The backbone's non-learned baselines (random
moves; NDS: random and SISR destroys) and the PyVRP reference are added as rows.

The test search is the backbone's (:meth:`ImprovementLightning.test_search`, the
search of ``pyg-routing evaluate``), run as evaluate runs it (Lightning ``predict``
over :class:`~pyg_routing.training.search_predictor.SearchJob`s): the test
instances as one batch, or one instance per job for a backbone whose budget is per
instance (NDS), each under ``--steps`` iterations and/or ``--search-seconds``.

Results go to ``<out>/compare_<backbone>_<problem><n>/``: ``table.csv``,
``table.md``, ``curves.csv`` and ``gap_vs_time.png`` (validation gap against
training time per encoding), rewritten after every encoding so an interrupted run
keeps what it finished.

Gaps are the paper's: the relative gap of the MEAN objective to the mean
reference objective (Tab. 2: 17.42 / 15.58 - 1 = 11.81 %); the mean of
per-instance gaps is in the CSV too. A wall-time budget is only fair when the
machine is otherwise idle; ``--epochs`` alone gives a load-independent budget.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pyg_routing import encodings
from pyg_routing.commands.evaluate import SEARCH_OPTIONS as EVALUATE_SEARCH_OPTIONS
from pyg_routing.commands.evaluate import build_test_search, check_init
from pyg_routing.commands.jobs import generated_jobs, search_jobs
from pyg_routing.commands.search import write_tables
from pyg_routing.commands.train import (
    REFERENCE_METHODS,
    add_problem_options,
    add_reference_option,
    reference_costs,
)
from pyg_routing.search import gap_percent, instance_gap_percent
from pyg_routing.training import backbones
from pyg_routing.training.backbones import init_choices
from pyg_routing.training.config import GivenOption, refuse_encoding_options
from pyg_routing.training.fit import (
    VAL_SEED_OFFSET,
    add_backbone_option,
    add_training_options,
    check_trainer,
    count,
    fit,
    positive,
    refuse_given,
    seed_value,
    training_seeds,
)

#: CSV columns, in order.
COLUMNS = ("encoding", "method", "family", "objective", "objective_std", "gap_percent",
           "instance_gap_percent",
           "initial_objective", "train_seconds", "epochs", "optimizer_steps", "eval_seconds",
           "paper_objective", "paper_gap_percent", "checkpoint")
#: the backbones' test-search options (``evaluate``'s) that ``compare`` takes, spelled
#: ``--search-<name>`` (the training options own the plain names); a backbone whose
#: ``search_options`` lack one refuses it
SEARCH_OPTIONS = ("rollouts",)


def parse_encodings(value: str) -> list[str]:
    """``"all"`` -> the 14 encodings and ``none`` in the paper's order; otherwise a
    comma-separated list of registry names (``ValueError`` lists the valid ones)."""
    names = list(encodings.available())
    if value.strip().lower() == "all":
        return names
    out: list[str] = []
    for item in value.split(","):
        key = encodings.info(item.strip()).name      # raises with the valid names
        if key not in out:
            out.append(key)
    return out


def add_compare_parser(sub: Any) -> None:
    p = sub.add_parser(
        "compare", help="train one model per encoding and compare them (paper Tab. 2)",
        description="Train one policy per encoding with identical budget, seed, data and "
                    "search; print the objective and gap to PyVRP per encoding (plus No PE "
                    "and random moves) and write CSV, Markdown and a plot of gap against "
                    "training time.")
    add_backbone_option(p)
    add_problem_options(p)
    p.add_argument("--pe", default="all",
                   help="'all' or a comma-separated list of: " + ", ".join(encodings.available()))
    p.add_argument("--budget-minutes", type=positive, default=None,
                   help="training wall time per encoding (validation included)")
    # CPU-sized PPO defaults: DACT's 512 x 200 steps per batch take minutes on 2 cores.
    add_training_options(p, {"batch_size": 64, "t_train": 40, "val_steps": 100},
                         batches_per_epoch=5, val_size=64)
    p.set_defaults(epochs=1000)
    p.add_argument("--seeds", type=training_seeds, default=None,
                   help="comma-separated training seeds (default: --seed); every encoding "
                        "is trained once per seed, the table gives mean ± std over seeds")
    p.add_argument("--instances", type=count(1), default=256, help="held-out test instances")
    p.add_argument("--steps", type=count(0), default=500, help="improvement steps at test time")
    p.add_argument("--augment", type=count(1), default=1,
                   help="symmetric copies at test (1..8)")
    p.add_argument("--init", choices=init_choices(), default=None,
                   help="initial test solutions (default: those of training, the "
                        "backbone's: dact first_fit on CVRP, random on TSP and PDTSP, "
                        "nearest_neighbor on VRPTW)")
    p.add_argument("--test-seed", type=seed_value, default=1234,
                   help="seed of the test instances")
    add_reference_option(p)
    p.add_argument("--time-limit", type=positive, default=0.2,
                   help="reference solver seconds per instance")
    p.add_argument("--root", default="data", help="dataset cache for the references")
    p.add_argument("--select", choices=("last", "best"), default="last",
                   help="checkpoint each run is tested with: last (default; the end of the "
                        "budget) or best (lowest validation cost, checkpoints/best.ckpt)")
    p.add_argument("--no-random", action="store_true",
                   help="skip the random-move row (nds: the random and SISR destroy rows)")
    per_instance = [b for b in backbones.available() if backbones.get(b).budget_per_instance]
    p.add_argument("--search-seconds", type=positive, default=None,
                   help="wall-clock seconds of the test search, start solutions included: "
                        "of the batch of test instances, or of every instance ("
                        + ", ".join(per_instance) + ") (default: only --steps iterations)")
    for name in SEARCH_OPTIONS:
        kwargs = EVALUATE_SEARCH_OPTIONS[name][1]
        has = tuple(b for b in backbones.available() if name in backbones.get(b).search_options)
        p.add_argument(f"--search-{name}", dest=f"search_{name}", action=GivenOption,
                       backbones=has, **{**kwargs, "help": f"[{', '.join(has)}] test search: "
                                                          f"{kwargs['help']}"})
    p.add_argument("--out", default="runs", help="folder for models, tables and the plot")
    p.add_argument("--json", action="store_true", help="print a JSON object")


class CompareSearch:
    """The backbone's test search (:meth:`ImprovementLightning.test_search` with
    ``--augment``, ``--init`` and the ``--search-*`` options) on the held-out
    instances (``--test-seed``, the training preset), under ``--steps`` and/or
    ``--search-seconds``; :meth:`row` searches with a trained policy or a baseline."""

    def __init__(self, args: argparse.Namespace, config: Any, preset: str, out: Path,
                 generator_kwargs: dict[str, Any] | None = None) -> None:
        from pyg_routing.search import budget

        self.lightning = backbones.get(args.backbone)
        options = {"init": args.init,
                   **{name: getattr(args, f"search_{name}") for name in SEARCH_OPTIONS}}
        self.search = build_test_search(self.lightning, config, args.augment, options)
        # every row but the baselines'
        self.lightning.check_policy_search(self.search, {"rollouts": "--search-rollouts"})
        self.stop = budget(args.steps, args.search_seconds)
        # evaluate's job options: one worker on --accelerator, the test instances
        self.args = argparse.Namespace(
            problem=args.problem, num_customers=args.num_customers, instances=args.instances,
            seed=args.test_seed, preset=preset, exact=False, accelerator=args.accelerator,
            devices=1, num_nodes=1, threads=None, no_progress=args.no_progress,
            generator_kwargs=generator_kwargs or {})
        size = 1 if self.lightning.budget_per_instance else args.instances
        self.jobs = generated_jobs(self.args, size)
        self.out = out

    def settings(self) -> dict[str, Any]:
        """What the result says of the search (:meth:`ImprovementLightning.search_settings`)."""
        return self.lightning.search_settings(self.search)

    def baseline(self, name: str) -> Any:
        """What the search's policy slot gets for the baseline ``name`` (removing as many
        customers per set as the search's learned policy, where it has such a size)."""
        return self.lightning.baselines[name][1](getattr(self.search, "remove", 15))

    def row(self, policy: Any, trained: bool, reference: torch.Tensor | None
            ) -> dict[str, Any]:
        """One table row: the mean best and initial cost over the test instances."""
        done, _ = search_jobs(self.args, self.jobs, self.search, self.stop, policy, trained,
                              self.out)
        assert done is not None                  # one worker: this process reports
        rows = [r for job in done for r in job["rows"]]
        cost = torch.tensor([r["search_objective"] for r in rows], dtype=torch.float64)
        # the jobs are alike (all instances, or one each): the mean of their float64 means
        starts = [float(torch.tensor([r["start_objective"] for r in job["rows"]],
                                     dtype=torch.float64).mean()) for job in done]
        row: dict[str, Any] = {"objective": float(cost.mean()),
                               "initial_objective": float(np.mean(starts)),
                               "eval_seconds": sum(job["seconds"] for job in done),
                               "iterations": float(np.mean([job["iterations"] for job in done]))}
        if reference is not None:
            row["gap_percent"] = gap_percent(cost, reference)
            row["instance_gap_percent"] = instance_gap_percent(cost, reference)
        return row


def run_compare(args: argparse.Namespace) -> dict[str, Any]:
    """Train and evaluate every encoding of ``--pe``; returns the table as rows."""
    from pyg_routing.probes.paper_values import MAIN_COMPARISON, paper_problem_key
    from pyg_routing.training.callbacks import ValidationCurve

    names = parse_encodings(args.pe)
    # Every option is checked before the first reference solve or training run.
    if args.reference == "none":
        refuse_given(args, ("time_limit",), "does not apply with --reference none (no "
                                            "reference is solved)")
    refuse_encoding_options(args, names)
    check_init(backbones.get(args.backbone), args.init)
    config_class = backbones.get(args.backbone).config_class
    config = config_class.from_options(args, pe=names[0])
    for name in names[1:]:                 # each encoding's configuration, checked up front
        config_class.from_options(args, pe=name)
    check_trainer(args.accelerator, args.devices, strategy=args.strategy,
                  precision=args.precision)
    args.init = args.init or config.init
    data = config.data_options()               # the training family: the test's too
    preset = data.pop("preset", "paper")
    setting = paper_problem_key(args.problem, args.num_customers)
    paper = MAIN_COMPARISON.get(setting, {})
    out = Path(args.out) / f"compare_{args.backbone}_{args.problem}{args.num_customers}"
    search = CompareSearch(args, config, preset, out, data)  # builds the test instances
    out.mkdir(parents=True, exist_ok=True)
    seeds = parse_seeds(args.seeds, args.seed)
    test_ref = None
    val_ref: dict[int, float] = {}
    if args.reference != "none":
        test_ref = reference_costs(args.problem, args.num_customers, args.instances,
                                   args.test_seed, args.time_limit, args.root, args.reference,
                                   preset=preset, generator_kwargs=data)
        for seed in seeds:
            val_ref[seed] = float(reference_costs(
                args.problem, args.num_customers, args.val_size, seed + VAL_SEED_OFFSET,
                args.time_limit, args.root, args.reference, preset=preset,
                generator_kwargs=data).mean())
    result: dict[str, Any] = {
        "setting": setting, "backbone": args.backbone, "out": str(out),
        "budget_minutes": args.budget_minutes, "max_epochs": args.epochs, "seeds": seeds,
        "instances": args.instances, "steps": args.steps, "augment": args.augment,
        "init": args.init, **search.settings(), "paper_setting": bool(paper), "rows": [],
        "curves": {}, "preset": preset, "data_options": data,
        "search_seconds": args.search_seconds,
        "pe_init": config.pe_init, "ipe_frequencies": config.ipe_frequencies,
        "ipe_amplitude": config.ipe_amplitude,
        "ipe_direction": config.ipe_direction, "ipe_phase": config.ipe_phase,
        "xpe_aggregation": config.xpe_aggregation,
        "local_mp": config.local_mp, "select": args.select,
        "reference_objective": None if test_ref is None else float(test_ref.mean()),
        "validation_reference": val_ref}
    if test_ref is not None:
        ref = paper.get("reference", (None, None))
        from pyg_routing.data.solvers.parallel import resolve_solver

        method = REFERENCE_METHODS[resolve_solver(args.reference, args.problem)]
        result["rows"].append({"encoding": "reference", "method": method,
                               "family": "Reference", "objective": float(test_ref.mean()),
                               "paper_objective": ref[0]})
    if not args.no_random:
        for baseline, (method, _) in search.lightning.baselines.items():
            result["rows"].append({"encoding": baseline, "method": method, "family": "Baseline",
                                   **search.row(search.baseline(baseline), False, test_ref)})
    for name in names:
        info = encodings.info(name)
        runs, points = [], []
        for seed in seeds:
            run_args = argparse.Namespace(**{**vars(args), "seed": seed})
            curve = ValidationCurve()
            where = out / name if len(seeds) == 1 else out / name / f"seed{seed}"
            run = fit(run_args, name, where, max_minutes=args.budget_minutes,
                      callbacks=[curve])
            ckpt = run["checkpoint"]
            if args.select == "best" and run["best_checkpoint"]:
                ckpt = run["best_checkpoint"]
            policy = backbones.load_policy(ckpt, expect_problem=args.problem, expect_pe=name,
                                           expect_backbone=args.backbone)
            runs.append({**search.row(policy, True, test_ref),
                         "train_seconds": run["seconds"],
                         "epochs": run["epochs"], "optimizer_steps": run["global_step"],
                         "checkpoint": ckpt, "best_val_cost": run["best_val_cost"],
                         "seed": seed})
            for point in curve.points:
                if seed in val_ref:
                    point["gap"] = 100 * (point["cost"] / val_ref[seed] - 1)
                points.append({**point, "seed": seed})
        row = {"encoding": name, "method": info.title, "family": info.family,
               **_aggregate(runs, test_ref)}
        if name in paper:
            row["paper_objective"], row["paper_gap_percent"] = paper[name]
        result["rows"].append(row)
        result["rows"].sort(key=_row_order)           # the paper's order, whatever --pe says
        result["curves"][info.title] = points
        write_outputs(result, out)
    write_outputs(result, out)
    return result


def parse_seeds(value: str | list[int] | None, default: int) -> list[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]`` (:func:`~pyg_routing.training.fit.training_seeds`,
    the ``--seeds`` option's type; a list it made is returned as it is); ``None`` ->
    ``[default]``."""
    if value is None:
        return [default]
    if isinstance(value, list):
        return value
    try:
        return training_seeds(value)
    except argparse.ArgumentTypeError as err:
        raise ValueError(f"--seeds {err}") from None


def _aggregate(runs: list[dict[str, Any]], reference: torch.Tensor | None) -> dict[str, Any]:
    """One table row from the runs of one encoding (one per seed): means, and the
    standard deviation over seeds of the objective."""
    obj = torch.tensor([r["objective"] for r in runs], dtype=torch.float64)
    row: dict[str, Any] = {
        "objective": float(obj.mean()),
        "objective_std": float(obj.std()) if len(runs) > 1 else 0.0,
        "initial_objective": runs[0]["initial_objective"],
        "train_seconds": sum(r["train_seconds"] for r in runs) / len(runs),
        "eval_seconds": sum(r["eval_seconds"] for r in runs) / len(runs),
        "epochs": max(r["epochs"] for r in runs),
        "optimizer_steps": max(r["optimizer_steps"] for r in runs),
        "checkpoint": ";".join(r["checkpoint"] for r in runs),
        "runs": runs}
    if reference is not None:
        row["gap_percent"] = float(100 * (obj.mean() / reference.mean() - 1))
        row["instance_gap_percent"] = sum(r["instance_gap_percent"] for r in runs) / len(runs)
    return row


def _row_order(row: dict[str, Any]) -> int:
    order = ["reference", "random", "sisr", *encodings.available()]
    return order.index(row["encoding"])


_LOCAL_MP_CAPTIONS = {"none": ", plain Transformer (no route-graph message passing)",
                      "undirected": ", undirected route-graph message passing"}


def _model_options(result: dict[str, Any]) -> str:
    """The non-default model options of a comparison, for its table's caption."""
    parts = ([f", PE init {result['pe_init']}"]
             if result.get("pe_init", "zero") != "zero" else []) + (
        [f", IPE frequencies {result['ipe_frequencies']}"]
        if result.get("ipe_frequencies", "harmonic") != "harmonic" else []) + (
        [f", IPE amplitudes {result['ipe_amplitude']}"]
        if result.get("ipe_amplitude", "inverse_square") != "inverse_square" else []) + (
        [f", IPE direction-{result['ipe_direction']}"]
        if result.get("ipe_direction", "auto") != "auto" else []) + (
        [", index-based IPE phase"] if result.get("ipe_phase", "distance") != "distance"
        else []) + (
        [f", per-route XPE ({result['xpe_aggregation']})"]
        if result.get("xpe_aggregation", "node") != "node" else []) + (
        [_LOCAL_MP_CAPTIONS[mp]]
        if (mp := result.get("local_mp", "directed")) != "directed" else []) + (
        [", best-validation checkpoints"] if result.get("select", "last") == "best" else [])
    return "".join(parts)


def render_markdown(result: dict[str, Any]) -> str:
    """The comparison as a Markdown table (the paper's columns when it has the setting)."""
    paper = result.get("paper_setting", False)
    head = ["", "PE method", "Obj.", "Gap", "train min", "epochs"]
    if paper:
        head += ["paper Obj.", "paper Gap"]
    lines = [f"**{result['setting']}**, {result.get('backbone', 'dact').upper()} backbone — "
             f"{result['instances']} test instances, "
             f"T = {result['steps']}"
             + (f" (≤ {result['search_seconds']:g} s)" if result.get("search_seconds") else "")
             + f", {result['init']} initial solutions, "
             f"augment {result['augment']}, {len(result.get('seeds', [0]))} training seed(s), "
             f"budget "
             f"{result['budget_minutes'] or '-'} min / ≤ {result['max_epochs']} epochs"
             + _model_options(result),
             "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def fmt(v: Any, spec: str, suffix: str = "") -> str:
        return "-" if v is None else f"{v:{spec}}{suffix}"

    for r in result["rows"]:
        obj = fmt(r.get("objective"), ".3f")
        if len(result.get("seeds", [])) > 1 and r.get("objective_std") is not None:
            obj += f" ± {r['objective_std']:.3f}"
        cells = [r.get("family", ""), r["method"], obj,
                 fmt(r.get("gap_percent"), ".2f", "%"),
                 fmt(None if r.get("train_seconds") is None else r["train_seconds"] / 60, ".1f"),
                 fmt(r.get("epochs"), "d")]
        if paper:
            cells += [fmt(r.get("paper_objective"), ".2f"),
                      fmt(r.get("paper_gap_percent"), ".2f", "%")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_outputs(result: dict[str, Any], out: Path) -> None:
    """``table.csv``, ``table.md``, ``curves.csv``, ``result.json``, ``gap_vs_time.png``."""
    write_tables(result, out, COLUMNS, render_markdown)
    with open(out / "curves.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["method", "seed", "seconds", "epoch", "step", "cost", "gap_percent"])
        for method, points in result["curves"].items():
            for p in points:
                w.writerow([method, p.get("seed", ""), p["seconds"], int(p["epoch"]),
                            int(p["step"]), p["cost"], p.get("gap", "")])
    from pyg_routing.viz import plot_training_curves

    ax = plot_training_curves(result["curves"],
                              title=f"{result['setting']}: validation during training")
    ax.figure.savefig(out / "gap_vs_time.png", dpi=130)
