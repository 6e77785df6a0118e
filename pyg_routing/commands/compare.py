"""``pyg-routing compare``: the paper's controlled comparison (Tab. 2) for one setting.

Every encoding gets the same recipe (``--config``, else the shipped recipe of the
backbone, problem and size): the same training seed and therefore the same training
batches (``RoutingDataModule``), the same model and training options, the same budget
(``--budget_minutes`` of wall time and/or ``--train.epochs``), then the same test
search (the recipe's ``test`` section) on the same held-out instances (same initial
solutions, steps and augmentation). Only ``--pe`` differs: ``all`` or a
comma-separated list. The backbone's non-learned baselines (random moves; NDS: random
and SISR destroys) and the reference solver are added as rows.

The test search is the backbone's (:meth:`ImprovementLightning.test_search`, the
search of ``pyg-routing evaluate``), run as evaluate runs it (Lightning ``predict``
over :class:`~pyg_routing.training.search_predictor.SearchJob`s): the test instances
as one batch, or one instance per job for a backbone whose budget is per instance
(NDS), each under ``--test.steps`` iterations and/or ``--test.seconds``.

Results go to ``<out>/compare_<backbone>_<problem><n>/``: ``table.csv``,
``table.md``, ``curves.csv`` and ``gap_vs_time.png`` (validation gap against
training time per encoding), rewritten after every encoding so an interrupted run
keeps what it finished.

Gaps are the paper's: the relative gap of the MEAN objective to the mean
reference objective (Tab. 2: 17.42 / 15.58 - 1 = 11.81 %); the mean of
per-instance gaps is in the CSV too. A wall-time budget is only fair when the
machine is otherwise idle; ``--train.epochs`` alone gives a load-independent budget.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyg_routing import encodings
from pyg_routing.commands.grammar import CommandParser, positive, refuse_typed, training_seeds
from pyg_routing.commands.jobs import Generated, Workers, generated_jobs, search_jobs
from pyg_routing.commands.search import write_tables
from pyg_routing.commands.train import (
    REFERENCE_METHODS,
    RecipeCommand,
    ReferenceOptions,
    add_output_options,
    announce,
    parse_recipe_command,
    reference_costs,
    refuse_encoding_options,
)
from pyg_routing.commands.train import print_config as recipe_print_config
from pyg_routing.training import backbones
from pyg_routing.training.config import BackboneConfig

if TYPE_CHECKING:   # numpy, torch and Lightning come with run(), not with --help
    import torch

#: CSV columns, in order.
COLUMNS = ("encoding", "method", "family", "objective", "objective_std", "gap_percent",
           "instance_gap_percent",
           "initial_objective", "train_seconds", "epochs", "optimizer_steps", "eval_seconds",
           "paper_objective", "paper_gap_percent", "checkpoint")


def parse_encodings(value: str) -> list[str]:
    """``"all"`` -> the 14 encodings and ``none`` in the paper's order; otherwise a
    comma-separated list of registry names (``ValueError`` lists the valid ones)."""
    names = list(encodings.available())
    if value.strip().lower() == "all":
        return names
    out: list[str] = []
    for item in value.split(","):
        try:
            key = encodings.info(item.strip()).name      # raises with the valid names
        except ValueError as err:
            raise ValueError(f"--pe: {err}") from None
        if key not in out:
            out.append(key)
    return out


def _add_options(p: CommandParser) -> None:
    p.add_class_arguments(ReferenceOptions, "reference", sub_configs=False)
    p.set_defaults({"reference.seconds": 0.2})
    run = p.add_argument_group("Comparison: seeds, budget, rows")
    run.add_argument("--seeds", type=training_seeds, default=None,
                     help="comma-separated training seeds (default: --seed); every encoding "
                          "is trained once per seed, the table gives mean +- std over seeds")
    run.add_argument("--budget_minutes", type=positive, default=None,
                     help="training wall time per encoding (validation included)")
    run.add_argument("--select", choices=("last", "best"), default="last",
                     help="checkpoint each run is tested with: last (the end of the budget) "
                          "or best (lowest validation cost, checkpoints/best.ckpt)")
    run.add_argument("--no_random", action="store_true",
                     help="skip the random-move row (nds: the random and SISR destroy rows)")
    run.add_argument("--root", default="data", help="dataset cache for the references")
    run.add_argument("--out", default="runs", help="folder for models, tables and the plot")
    add_output_options(run)


def parse(argv: Sequence[str]) -> RecipeCommand:
    """``compare``'s command line: a recipe whose ``--pe`` is a list (``all`` or
    comma-separated names); each encoding's configuration is checked up front."""
    names: list[str] = []

    def encodings_of(values: dict[str, Any]) -> dict[str, Any]:
        names.extend(parse_encodings(str(values["pe"])))
        return {**values, "pe": names[0]}

    command = parse_recipe_command(
        "pyg-routing compare", "Train one policy per encoding with identical recipe, budget, "
        "seed, data and test search; print the objective and gap to the reference per "
        "encoding (plus No PE and the non-learned baselines) and write CSV, Markdown and a "
        "plot of gap against training time.", argv, _add_options, encodings_of)
    command.extra["encodings"] = names
    refuse_encoding_options(command.typed, names)
    command.config.check_training()
    for name in names[1:]:                 # each encoding's configuration, checked up front
        with_encoding(command.config, name).check_training()
    return command


def with_encoding(config: BackboneConfig, pe: str, seed: int | None = None) -> BackboneConfig:
    """``config`` with encoding ``pe`` (and training seed ``seed``)."""
    values = {**config.to_dict(), "pe": pe}
    if seed is not None:
        values["seed"] = seed
    return type(config).create(**values)


def print_config(command: RecipeCommand) -> str:
    return recipe_print_config(command, {"pe": ",".join(command.extra["encodings"])})


class CompareSearch:
    """The backbone's test search (the recipe's ``test`` section) on the held-out
    instances; :meth:`row` searches with a trained policy or a baseline."""

    def __init__(self, config: BackboneConfig, out: Path, progress: bool) -> None:
        from pyg_routing.search import budget

        self.lightning = backbones.get(config.backbone)
        self.search = self.lightning.test_search(config)
        self.lightning.check_policy_search(self.search)     # every row but the baselines'
        self.stop = budget(config.test.steps, config.test.seconds)
        self.spec = Generated(config.problem, config.num_customers, config.test.instances,
                              config.test.seed, config.data.generator_options())
        self.workers = Workers(accelerator=config.trainer.accelerator, seed=config.test.seed,
                               progress=progress)
        size = 1 if self.lightning.budget_per_instance else config.test.instances
        self.jobs = generated_jobs(self.spec, size)
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
        import numpy as np
        import torch

        from pyg_routing.search import gap_percent, instance_gap_percent

        done, _ = search_jobs(self.workers, self.jobs, self.search, self.stop, policy,
                              trained, self.out)
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


def run(command: RecipeCommand) -> dict[str, Any] | None:
    """Train and evaluate every encoding; returns the table as rows."""
    from pyg_routing.probes.paper_values import MAIN_COMPARISON, paper_problem_key
    from pyg_routing.training.callbacks import ValidationCurve
    from pyg_routing.training.fit import VAL_SEED_OFFSET, fit, is_worker_rank

    o, config = command.options, command.config
    names = command.extra["encodings"]
    reference = ReferenceOptions.build(o.reference.as_dict())
    if reference.solver == "none":
        refuse_typed(command.typed, ("reference.seconds",), "does not apply with "
                     "--reference.solver none (no reference is solved)", o)
    from pyg_routing.training.fit import check_trainer

    t = config.trainer
    check_trainer(t.accelerator, t.devices, strategy=t.strategy, precision=t.precision)
    data = config.data.generator_options()       # the training family: the test's too
    preset = data.pop("preset", "paper")
    setting = paper_problem_key(config.problem, config.num_customers)
    paper = MAIN_COMPARISON.get(setting, {})
    out = Path(o.out) / f"compare_{config.backbone}_{config.problem}{config.num_customers}"
    progress = not (o.no_progress or o.json)
    search = CompareSearch(config, out, progress)           # builds the test instances
    announce(command)
    out.mkdir(parents=True, exist_ok=True)
    seeds = o.seeds or [config.seed]
    test_ref = None
    val_ref: dict[int, float] = {}
    if reference.solver != "none":
        test_ref = reference_costs(config.problem, config.num_customers,
                                   config.test.instances, config.test.seed, reference.seconds,
                                   o.root, reference.solver, preset=preset,
                                   generator_kwargs=data)
        for seed in seeds:
            val_ref[seed] = float(reference_costs(
                config.problem, config.num_customers, config.validate.instances,
                seed + VAL_SEED_OFFSET, reference.seconds, o.root, reference.solver,
                preset=preset, generator_kwargs=data).mean())
    result: dict[str, Any] = {
        "setting": setting, "backbone": config.backbone, "out": str(out),
        "recipe": command.recipe, "config": {"backbone": config.backbone, **config.to_dict()},
        "budget_minutes": o.budget_minutes, "max_epochs": config.train.epochs, "seeds": seeds,
        "instances": config.test.instances, "steps": config.test.steps,
        "augment": config.test.augment, "init": getattr(search.search, "init", None),
        **search.settings(), "paper_setting": bool(paper), "rows": [],
        "curves": {}, "preset": preset, "data_options": data,
        "search_seconds": config.test.seconds, **config.encoding.to_dict(),
        "pe_init": config.model.pe_init, "local_mp": config.model.local_mp,
        "select": o.select,
        "reference_objective": None if test_ref is None else float(test_ref.mean()),
        "validation_reference": val_ref}
    if test_ref is not None:
        ref = paper.get("reference", (None, None))
        from pyg_routing.data.solvers.parallel import resolve_solver

        method = REFERENCE_METHODS[resolve_solver(reference.solver, config.problem)]
        result["rows"].append({"encoding": "reference", "method": method,
                               "family": "Reference", "objective": float(test_ref.mean()),
                               "paper_objective": ref[0]})
    if not o.no_random:
        for baseline, (method, _) in search.lightning.baselines.items():
            result["rows"].append({"encoding": baseline, "method": method, "family": "Baseline",
                                   **search.row(search.baseline(baseline), False, test_ref)})
    compiled = True if getattr(config.test, "compile", False) else None
    for name in names:
        info = encodings.info(name)
        runs, points = [], []
        for seed in seeds:
            curve = ValidationCurve()
            where = out / name if len(seeds) == 1 else out / name / f"seed{seed}"
            run_ = fit(with_encoding(config, name, seed), where,
                       max_minutes=o.budget_minutes, callbacks=[curve], progress=progress,
                       verbose=o.verbose)
            ckpt = run_["checkpoint"]
            if o.select == "best" and run_["best_checkpoint"]:
                ckpt = run_["best_checkpoint"]
            policy = backbones.load_policy(ckpt, expect_problem=config.problem, expect_pe=name,
                                           expect_backbone=config.backbone, compiled=compiled)
            runs.append({**search.row(policy, True, test_ref),
                         "train_seconds": run_["seconds"],
                         "epochs": run_["epochs"], "optimizer_steps": run_["global_step"],
                         "checkpoint": ckpt, "best_val_cost": run_["best_val_cost"],
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
    return None if is_worker_rank() else result          # rank 0 reports, once


def render(result: dict[str, Any]) -> str:
    return f"{render_markdown(result)}\n\nwritten to {result['out']}/"


def _aggregate(runs: list[dict[str, Any]], reference: torch.Tensor | None) -> dict[str, Any]:
    """One table row from the runs of one encoding (one per seed): means, and the
    standard deviation over seeds of the objective."""
    import torch

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
