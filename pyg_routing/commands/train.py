"""``pyg-routing train``, and what the training commands share: the recipe's options
on a parser built for one backbone, the recipe a command line starts from, the
reference solver's options and cached reference costs.

A command line names its backbone with ``--backbone`` or through a full recipe
(``--config dact/cvrp100``); without a full recipe it starts from the shipped recipe
of its backbone, problem and size (:func:`pyg_routing.recipes.default_for`: that size,
else the next larger), and says which on stderr. So ``train --backbone nds`` trains NDS
as released (its recipe says ``pe: none``), never another backbone's defaults.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pyg_routing import recipes
from pyg_routing.commands.grammar import (
    CommandParser,
    add_recipe,
    backbone_of,
    config_values,
    default_recipe,
    dump_yaml,
    foreign_options,
    notice,
    refuse_typed,
    typed,
)
from pyg_routing.training import backbones
from pyg_routing.training.config import BackboneConfig
from pyg_routing.training.sections import Section, bound

#: the backbone of a command line that names none
DEFAULT_BACKBONE = "dact"


@dataclass
class ReferenceOptions(Section):
    """Reference: the solver the gaps are measured against"""

    key: ClassVar[str] = "reference"

    solver: Literal["auto", "pyvrp", "ortools", "none"] = "auto"
    """auto (PyVRP), pyvrp (HGS), ortools or none (no gap)"""
    seconds: float = bound(1.0, positive=True)
    """solver seconds per instance"""


#: what the reference solvers are called in a table
REFERENCE_METHODS = {"pyvrp": "PyVRP (HGS)", "ortools": "OR-Tools"}


@dataclass
class RecipeCommand:
    """A parsed command line of a recipe command (``train``, ``compare``): its
    backbone's configuration and the command's own options."""

    config: BackboneConfig
    options: Any                      # the jsonargparse namespace (run options)
    typed: dict[str, str]             # options typed on the command line
    recipe: str | None                # the shipped recipe it started from, if any
    extra: dict[str, Any] = field(default_factory=dict)   # a command's own parse results
    default_recipe: bool = False      # the recipe was chosen for it (no --config)
    notes: list[str] = field(default_factory=list)   # notices to print when it starts


def parse_recipe_command(prog: str, description: str, argv: Sequence[str],
                         add_options: Callable[[CommandParser], None],
                         config_overrides: Callable[[dict[str, Any]], dict[str, Any]]
                         | None = None) -> RecipeCommand:
    """Parse ``argv`` (normalized) for the backbone it asks for.

    ``add_options`` adds the command's own options; ``config_overrides`` may change the
    recipe's values before the configuration is built (``compare``'s list of
    encodings).

    Raises:
        ValueError: a value the configuration refuses, naming its option.
    """
    backbone, full = backbone_of(argv, DEFAULT_BACKBONE)
    cls = backbones.config_class(backbone)
    start: list[str] = []
    recipe = full
    if full is None:
        recipe = default_recipe(backbone, argv, cls)
        if recipe is not None:
            start = ["--config", str(recipes.path(recipe))]
    parser = recipe_parser(prog, description, cls, backbones.names(), add_options)
    namespace = parser.parse_args([*start, *argv])
    values = config_values(namespace, cls)
    if config_overrides is not None:
        values = config_overrides(values)
    given = typed(argv)
    notes = []
    values, note = cpu_precision(values, given)
    if note:
        notes.append(note)
    config = cls(**values)
    if config_overrides is None:        # one encoding (compare checks its list itself)
        refuse_encoding_options(given, config.pe)
        config.check_training()
    return RecipeCommand(config, namespace, given, recipe,
                         default_recipe=full is None and recipe is not None, notes=notes)


def cpu_precision(values: dict[str, Any], given: dict[str, str]
                  ) -> tuple[dict[str, Any], str | None]:
    """A recipe's float16 mixed precision (NDS's AMP) on a run that will be on the CPU:
    full precision instead, and the notice that says so. Typed by the user, the
    precision is kept (and refused by the trainer check, naming it)."""
    import torch

    trainer = values.get("trainer") or {}
    precision, accelerator = str(trainer.get("precision")), trainer.get("accelerator", "auto")
    on_cpu = accelerator == "cpu" or (accelerator == "auto" and not torch.cuda.is_available())
    if precision not in ("16", "16-mixed") or not on_cpu or "trainer.precision" in given:
        return values, None
    return ({**values, "trainer": {**trainer, "precision": "32-true"}},
            f"the recipe's --trainer.precision {precision} needs a GPU; this CPU run uses "
            f"32-true")


def refuse_encoding_options(given: dict[str, str], names: str | Sequence[str]) -> None:
    """``ValueError`` naming the first node-encoding option typed on the command line
    that none of the encodings ``names`` takes (it would be ignored)."""
    from pyg_routing import encodings

    names = [names] if isinstance(names, str) else list(names)
    for option in encodings.OPTIONS:
        key = f"encoding.{option}"
        if key in given and not set(encodings.takers(option)) & set(names):
            raise ValueError(f"{given[key]} is an option of the "
                             f"{' and '.join(encodings.takers(option))} encodings; --pe "
                             f"{','.join(names)} has none of them")


def announce(command: RecipeCommand) -> None:
    """Say on stderr which shipped recipe a command line without ``--config`` started
    from (after its options were checked, so that a refusal stays one line)."""
    c = command.config
    if command.default_recipe:
        notice(f"recipe {command.recipe} (the shipped recipe of {c.backbone} {c.problem}-"
               f"{c.num_customers}; --config chooses another)")
    for note in command.notes:
        notice(note)


@functools.lru_cache(maxsize=32)
def recipe_parser(prog: str, description: str, cls: type[BackboneConfig],
                  registered: tuple[str, ...],
                  add_options: Callable[[CommandParser], None]) -> CommandParser:
    """The parser of a recipe command for one backbone's configuration ``cls`` (built
    once per process: reading the dataclasses' docstrings is most of the cost)."""
    others = {b: backbones.config_class(b) for b in registered if b != cls.backbone}
    parser = CommandParser(prog=prog, description=description,
                           foreign=foreign_options(cls, others), backbone=cls.backbone)
    add_recipe(parser, cls, list(registered))
    add_options(parser)
    return parser


def print_config(command: RecipeCommand, extra: dict[str, Any] | None = None) -> str:
    """The resolved configuration as YAML (``--print_config``)."""
    c = command.config
    head = (f"pyg-routing {c.backbone} recipe, resolved"
            + (f" from {command.recipe}" if command.recipe else "")
            + "\nread it back with --config FILE")
    return dump_yaml({"backbone": c.backbone, **c.to_dict(), **(extra or {})}, head)


def add_train_options(p: CommandParser) -> None:
    """``train``'s own options (where its output goes, resuming, the budget)."""
    run = p.add_argument_group("Run: output, resuming and the budget of this run")
    run.add_argument("--out", default="runs", help="folder for checkpoints and logs")
    run.add_argument("--resume", default=None, help="a last.ckpt to resume from")
    run.add_argument("--trust_checkpoint", action="store_true",
                     help="UNSAFE: read --resume with full unpickling, which runs code from "
                          "the file; only for files you made or trust")
    run.add_argument("--max_minutes", type=float, default=None,
                     help="stop training after this many minutes (validation included)")
    add_output_options(run)


def add_output_options(group: Any) -> None:
    """``--json``, ``--no_progress``, ``--verbose``: what reaches the terminal."""
    group.add_argument("--json", action="store_true",
                       help="print a JSON object on stdout (notices go to stderr)")
    group.add_argument("--no_progress", action="store_true", help="hide progress bars")
    group.add_argument("--verbose", action="store_true",
                       help="show Lightning's own notices and model summary")


def parse_train(argv: Sequence[str]) -> RecipeCommand:
    return parse_recipe_command(
        "pyg-routing train", "Train an improvement policy with Lightning as a recipe says: "
        "checkpoints and CSV logs go to --out.", argv, add_train_options)


def run_train(command: RecipeCommand) -> dict[str, Any] | None:
    o, c = command.options, command.config
    if o.resume is None:
        refuse_typed(command.typed, ("trust_checkpoint",),
                     "applies to --resume only (how its checkpoint is read)", o)
    if o.max_minutes is not None and not 0 < o.max_minutes < float("inf"):
        raise ValueError(f"--max_minutes must be a finite number > 0, got {o.max_minutes}")
    from pyg_routing.training.fit import fit, is_worker_rank  # torch, Lightning: not --help

    out = Path(o.out) / f"{c.backbone}_{c.problem}{c.num_customers}_{c.pe}"
    result = fit(c, out, max_minutes=o.max_minutes, resume=o.resume,
                 progress=not o.no_progress and not o.json, verbose=o.verbose,
                 trust=o.trust_checkpoint, on_start=lambda: announce(command))
    return None if is_worker_rank() else result          # rank 0 reports, once


def reference_costs(problem: str, num_customers: int, count: int, seed: int,
                    time_limit: float, root: str, solver: str = "auto",
                    preset: str = "paper", generator_kwargs: dict | None = None,
                    progress: bool = False) -> Any:
    """``[count]`` reference costs (float64 tensor) of ``make_generator(problem, n, seed,
    preset=preset, **generator_kwargs).sample(count)`` by ``solver`` (``auto``: PyVRP),
    solved once and cached under ``root`` (a :class:`RoutingDataset`)."""
    import torch

    from pyg_routing.data.dataset import RoutingDataset
    from pyg_routing.data.solvers.parallel import resolve_solver

    ref = RoutingDataset(root, problem, num_customers, count, seed=seed,
                         solver=resolve_solver(solver, problem), time_limit=time_limit,
                         progress=progress, preset=preset, generator_kwargs=generator_kwargs)
    return torch.stack([d.cost() for d in ref]).double()


parse = parse_train
run = run_train
