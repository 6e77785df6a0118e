"""The command line of the test commands (``evaluate``, ``search``): which backbone,
which test protocol, which instances, where the jobs run.

The test protocol and the instances are a recipe's ``problem``, ``num_customers``,
``data`` and ``test``, layered: the backbone's defaults, then the recipe the checkpoint
was trained with (so a model is tested as its recipe says), then ``--config`` (a
recipe or an overlay: its other sections describe training and are not read), then
the options typed. A typed option of another part of a recipe (``--train.epochs``) is
refused: the model comes from the checkpoint.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pyg_routing.commands.grammar import (
    CommandParser,
    add_config_options,
    backbone_of,
    config_values,
    count,
    foreign_options,
    option_keys,
    typed,
    value_after,
)
from pyg_routing.commands.jobs import Generated, Workers
from pyg_routing.commands.train import ReferenceOptions, add_output_options
from pyg_routing.training import backbones
from pyg_routing.training.config import BackboneConfig

#: the parts of a recipe a test command reads (everything else is the model's)
READS = ("problem", "num_customers", "data", "test")


@dataclass
class TestCommand:
    """A parsed test command line."""

    config: BackboneConfig            # the backbone's recipe: its problem, data and test
    options: Any                      # the jsonargparse namespace
    typed: dict[str, str]
    checkpoint: dict[str, Any] | None  # the checkpoint's content, read once

    @property
    def lightning(self) -> Any:
        return backbones.get(self.config.backbone)

    @property
    def reference(self) -> ReferenceOptions:
        return ReferenceOptions.build(self.options.reference.as_dict())

    def generated(self) -> Generated:
        """The generated test instances the options ask for."""
        c = self.config
        generator = c.data.generator_options()
        if getattr(c.test, "exact", False):
            generator["exact"] = True
        return Generated(c.problem, c.num_customers, c.test.instances, c.test.seed, generator)

    def workers(self) -> Workers:
        o = self.options
        return Workers(accelerator=o.accelerator, workers=o.workers, num_nodes=o.num_nodes,
                       threads=o.threads, seed=self.config.test.seed,
                       progress=not (o.no_progress or o.json))


def parse_test_command(prog: str, description: str, argv: Sequence[str],
                       add_options: Callable[[CommandParser], None], *,
                       backbone: str | None = None,
                       defaults: dict[str, Any] | None = None) -> TestCommand:
    """Parse a test command line (see the module docstring).

    ``backbone`` fixes the backbone (``search``: nds); ``defaults`` are the command's
    own defaults of recipe options (dotted keys), below the checkpoint's recipe.

    Raises:
        ValueError: the checkpoint is not ours, a backbone conflicts with it, or an
            option that does not apply was typed (each naming it).
    """
    given = typed(argv)
    ckpt = None
    path = value_after(argv, "--checkpoint")
    if path is not None:
        ckpt = backbones.read_checkpoint(path, trust="trust_checkpoint" in given)
    trained = None if ckpt is None else ckpt["hyper_parameters"]["backbone"]
    named, _ = backbone_of(argv, backbone or trained or "dact")
    if backbone is not None and named != backbone:
        raise ValueError(f"--backbone {named}: {prog} searches with the {backbone} "
                         f"backbone only")
    if trained is not None and named != trained:
        raise ValueError(f"--backbone {named} conflicts with checkpoint {path}, which is a "
                         f"{trained} policy")
    cls = backbones.config_class(named)
    parser = test_parser(prog, description, cls, backbones.names(), add_options,
                         tuple(sorted((defaults or {}).items())))
    start: list[str] = []
    model: dict[str, Any] = {}
    if ckpt is not None:                    # the model's own recipe: its test protocol
        stored = {k: v for k, v in ckpt["hyper_parameters"].items() if k != "backbone"}
        model = cls.create(**stored).to_dict()
        start = ["--config", json.dumps({k: model[k] for k in READS if k in model})]
    namespace = parser.parse_args([*start, *argv])
    mine = {key for key in option_keys(cls)
            if key.split(".")[0] in READS or key in READS}
    for key in option_keys(cls):
        if key in given and key not in mine:
            raise ValueError(f"{given[key]} does not apply to {prog.split()[-1]}: it reads "
                             f"a recipe's problem, num_customers, data and test options "
                             f"(the model comes from --checkpoint)")
    values = config_values(namespace, cls)
    if ckpt is not None:
        asked = str(values["problem"]).lower()
        if asked != model["problem"]:
            raise ValueError(f"checkpoint {path} was trained with problem "
                             f"{model['problem']!r}, but {asked!r} was expected (--problem)")
        values = {**model, **{k: values[k] for k in READS}}
    return TestCommand(cls(**values), namespace, given, ckpt)


@functools.lru_cache(maxsize=16)
def test_parser(prog: str, description: str, cls: type[BackboneConfig],
                registered: tuple[str, ...], add_options: Callable[[CommandParser], None],
                defaults: tuple[tuple[str, Any], ...]) -> CommandParser:
    """The parser of a test command for one backbone (built once per process)."""
    others = {b: backbones.config_class(b) for b in registered if b != cls.backbone}
    parser = CommandParser(prog=prog, description=description,
                           foreign=foreign_options(cls, others), backbone=cls.backbone)
    add_config_options(parser, "recipe or overlay (its problem, data and test sections)")
    parser.add_argument("--backbone", choices=registered, default=cls.backbone,
                        help="the backbone (default: the checkpoint's)")
    parser.add_class_arguments(cls, nested_key=None, sub_configs=False)
    parser.add_class_arguments(ReferenceOptions, "reference", sub_configs=False)
    workers = parser.add_argument_group("Workers: where the jobs run")
    workers.add_argument("--accelerator", choices=("auto", "cpu", "gpu"), default="auto",
                         help="where a trained policy runs (auto: a GPU if available)")
    workers.add_argument("--workers", type=count(1), default=1,
                         help="worker processes per node (with --accelerator gpu: one GPU "
                              "each)")
    workers.add_argument("--num_nodes", type=count(1), default=1, help="machines")
    workers.add_argument("--threads", type=count(1), default=None,
                         help="repair threads per worker (default: cores / workers)")
    add_options(parser)
    if defaults:
        parser.set_defaults(dict(defaults))
    return parser


def add_instance_options(p: CommandParser) -> None:
    """The instances a test searches besides generated ones, and where results go."""
    g = p.add_argument_group("Instances: generated (--problem, --num_customers, --data.*, "
                             "--test.instances, --test.seed), or")
    g.add_argument("--instance", action="append", default=None, metavar="FILE",
                   help="an instance file (VRPLIB/TSPLIB, EXPLICIT matrices too, Solomon, "
                        "Li & Lim) or a bundled instance's name, searched as it is; "
                        "repeatable; the gap where a best-known value is known (bks.csv, "
                        "a .sol file beside it, the paper's X table)")
    g.add_argument("--benchmark", type=str.lower, choices=("x",), default=None,
                   help="search CVRPLib X instead of generated instances")
    g.add_argument("--data_dir", default=None, help="folder of the benchmark files "
                   "(default: $PYG_ROUTING_DATA, else the bundled files)")
    g.add_argument("--names", default=None,
                   help="comma-separated benchmark instances, or paper: the 84 of the paper's "
                        "Tab. 7 (default: all)")
    g.add_argument("--max_customers", type=count(1), default=None,
                   help="benchmark instances with at most this many customers")
    g.add_argument("--root", default="data", help="dataset cache of the references")
    out = p.add_argument_group("Output")
    out.add_argument("--out", default=None, help="folder of the table")
    add_output_options(out)


#: the options that select benchmark instances: refused without ``--benchmark`` (or,
#: for ``data_dir``, ``--instance``: where a bundled name is looked up)
BENCHMARK_OPTIONS = ("names", "max_customers", "data_dir")
#: the options of generated instances: refused with ``--benchmark``
GENERATED_OPTIONS = ("problem", "num_customers", "test.instances", "test.exact",
                     *(f"data.{k}" for k in ("preset", "costs", "grid", "one_way",
                                             "open_routes")))


def refuse_instance_options(command: TestCommand, reference: Sequence[str] = ()) -> None:
    """Refuse, naming it, an instance option that the instances asked for do not take:
    a benchmark selection without ``--benchmark``; the problem, size, family, count or
    reference of generated instances with it (the gap is to the best-known values); the
    reference's options without a reference."""
    from pyg_routing.commands.grammar import refuse_typed

    o, given = command.options, command.typed
    if o.instance:
        if o.benchmark:
            raise ValueError("--instance and --benchmark x both name the instances; give one")
        refuse_typed(given, (*GENERATED_OPTIONS, "max_customers", "names"),
                     "does not apply with --instance (the file is searched as it is)", o)
        refuse_typed(given, ("reference.solver", "reference.seconds", *reference),
                     "does not apply with --instance (the gap is to the best-known value "
                     "where one is known)", o)
        return
    if o.benchmark:
        refuse_typed(given, GENERATED_OPTIONS, "does not apply with --benchmark x (it "
                     "searches CVRPLib's instances, whose problem and sizes are fixed)", o)
        refuse_typed(given, ("reference.solver", "reference.seconds", *reference),
                     "does not apply with --benchmark x (the gap is to the best-known "
                     "values)", o)
        return
    refuse_typed(given, BENCHMARK_OPTIONS, "applies to --benchmark x only (it selects "
                 "benchmark instances)", o)
    if command.reference.solver == "none":
        refuse_typed(given, ("reference.seconds", *reference),
                     "does not apply with --reference.solver none (no reference is solved)",
                     o)


def print_config(command: TestCommand) -> str:
    """``--print_config``: the parts of the recipe a test command reads, as YAML."""
    from pyg_routing.commands.grammar import dump_yaml

    c = command.config.to_dict()
    return dump_yaml({"backbone": command.config.backbone, **{k: c[k] for k in READS},
                      "reference": command.reference.to_dict()},
                     "pyg-routing test protocol, resolved\nread it back with --config FILE")
