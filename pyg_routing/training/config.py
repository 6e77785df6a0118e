"""A backbone's configuration: one recipe object that the command line, YAML recipe
files (:mod:`pyg_routing.recipes`), checkpoints and the Python API share.

:class:`BackboneConfig` holds the values that name a run (backbone, problem, size,
encoding, seed) and one :class:`~pyg_routing.training.sections.Section` per purpose.
Each backbone subclasses it with its own sections (``model``, ``train``, ``validate``,
``test``), so ``pyg-routing train --backbone nds --help`` lists NDS's options only.
The encoding is resolved once, here (:attr:`BackboneConfig.encoding_spec`), into the
object every layer receives.

Build one from nested values (a YAML recipe, a checkpoint's hyper-parameters) or with
:meth:`BackboneConfig.create`, which also takes the flat names of earlier versions
(``batch_size=16``, ``val_steps=8``) and routes each to its section.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any, ClassVar

from pyg_routing import encodings
from pyg_routing.data.problems import OPEN_ROUTE_PROBLEMS, Problem
from pyg_routing.training.sections import (
    DataOptions,
    EncodingOptions,
    ModelOptions,
    Section,
    TestOptions,
    TrainerOptions,
    TrainOptions,
    ValidateOptions,
    bound,
    section,
)

#: Lightning's ``seed_everything`` takes seeds in ``0 .. MAX_SEED`` (numpy's range)
MAX_SEED = 2**32 - 1

#: flat names of earlier versions (and of the Python convenience) whose section or
#: name is not found by the rule "the one section that has a field of that name"
FLAT_NAMES = {
    "num_layers": "model.layers", "dim": "model.dim", "heads": "model.heads",
    "pe_dim": "encoding.dim", "batch_size": "train.batch_size",
    "val_steps": "validate.steps", "val_size": "validate.instances",
    "val_rollouts": "validate.rollouts", "val_augment": "validate.augment",
    "val_batch_size": "validate.batch_size", "init": "train.init",
    "rollouts": "train.rollouts", "remove": "train.remove", "recreate": "train.recreate",
}


@dataclass
class BackboneConfig(Section):
    """The recipe of a run: what it trains on, with which encoding and seed"""

    #: the backbone this configuration belongs to (set by subclasses)
    backbone: ClassVar[str] = ""
    #: the options that shape the weights or what the first layer reads (dotted;
    #: ``encoding`` stands for the options the chosen encoding reads): a resumed run
    #: must match these
    #: the names of the backbone's non-learned baselines (``--policy``; its
    #: ``LightningModule.baselines`` builds each)
    BASELINES: ClassVar[tuple[str, ...]] = ("random",)
    ARCHITECTURE: ClassVar[tuple[str, ...]] = (
        "problem", "pe", "encoding", "model.encoder", "model.dim", "model.heads",
        "model.layers", "model.local_mp")

    problem: str = "cvrp"
    """routing problem"""
    num_customers: int = bound(20, low=1)
    """customers per instance (TSP: cities; PDTSP: pickups and deliveries)"""
    pe: str = "none"
    """positional encoding: none, ape, sin, rope, rpe, alibi, lap, rwse, spd, dact_cpe,
    cycleformer, ipe, xpe or ipexpe"""
    seed: int = bound(0, low=0, high=MAX_SEED)
    """training seed: initial weights, batches and sampled moves"""
    encoding: EncodingOptions = section(EncodingOptions)
    data: DataOptions = section(DataOptions)
    model: ModelOptions = section(ModelOptions)
    train: TrainOptions = section(TrainOptions)
    validate: ValidateOptions = section(ValidateOptions)
    test: TestOptions = section(TestOptions)
    trainer: TrainerOptions = section(TrainerOptions)

    def __post_init__(self) -> None:
        for name, kind in self.section_types().items():
            setattr(self, name, kind.build(getattr(self, name)))
        super().__post_init__()
        try:
            self.problem = Problem.parse(self.problem).value
        except ValueError as err:
            raise ValueError(f"--problem: {err}") from None
        try:
            self.pe = encodings.info(self.pe).name
        except ValueError as err:
            raise ValueError(f"--pe: {err}") from None
        problem = Problem.parse(self.problem)
        if self.data.open_routes and problem not in OPEN_ROUTE_PROBLEMS:
            raise ValueError(f"--data.open_routes applies to "
                             f"{' and '.join(p.value for p in OPEN_ROUTE_PROBLEMS)}, not "
                             f"{self.problem}")

        if self.encoding.xpe_aggregation == "demand_mean" and not problem.has_capacity \
                and self.pe in encodings.takers("xpe_aggregation"):
            raise ValueError(f"--encoding.xpe_aggregation demand_mean weighs by demand; "
                             f"{self.problem} has no demands")

    def check_environment(self, env: Any) -> None:
        """Refuse what the backbone's environment ``env`` cannot start from: another
        problem, or a variant of the instance family it does not declare (``--data.depots
        K > 1`` without ``multi_depot``). Each backbone's configuration calls it with its
        environment (imported there: torch, once the configuration is built)."""
        env.check_problem(Problem.parse(self.problem))
        if self.data.depots > 1 and "multi_depot" not in env.variants:
            raise ValueError(f"--data.depots {self.data.depots}: the {self.backbone} backbone "
                             f"searches instances with one depot (its environment's "
                             f"variants: {', '.join(env.variants)})")
        if self.data.depots > 1 and encodings.info(self.pe).family == "Graph":
            # their route graph has one depot (merged copies, hops through the depot)
            raise ValueError(f"--pe {self.pe}: the graph encodings are defined on one "
                             f"depot's route graph, not on --data.depots {self.data.depots}")

    def check_training(self) -> None:
        """Refuse what this configuration cannot train, before anything is written: an
        instance family its generators do not have (``--data.costs streets`` with NDS's
        preset). Subclasses add their own checks; a test command, which reads only the
        problem, data and test sections, does not call it."""
        from pyg_routing.data.generators import make_generator

        make_generator(self.problem, self.num_customers, seed=0,
                       **self.data.generator_options())

    # ------------------------------------------------------------------ structure
    @classmethod
    def section_types(cls) -> dict[str, type[Section]]:
        """The recipe's sections by name, with their (this backbone's) types."""
        hints = typing.get_type_hints(cls)
        return {f.name: hints[f.name] for f in fields(cls)
                if isinstance(hints[f.name], type) and issubclass(hints[f.name], Section)}

    @cached_property
    def encoding_spec(self) -> encodings.EncodingSpec:
        """The encoding, resolved once (:func:`pyg_routing.encodings.resolve`)."""
        return self.encoding.spec(self.pe)

    def get(self, dotted: str) -> Any:
        """The value at ``dotted`` (``"train.batch_size"``; a section name: its dict)."""
        value: Any = self
        for part in dotted.split("."):
            value = getattr(value, part)
        return value.to_dict() if isinstance(value, Section) else value

    def architecture(self) -> dict[str, Any]:
        """The :data:`ARCHITECTURE` values of this configuration, one per option
        (``encoding.ipe_phase``); of the encoding, only what it reads."""
        out: dict[str, Any] = {}
        for key in self.ARCHITECTURE:
            if key == "encoding":
                out.update({f"encoding.{k}": v
                            for k, v in self.encoding_spec.shaping().items()})
            else:
                out[key] = self.get(key)
        return out

    def to_dict(self) -> dict[str, Any]:
        """The recipe as nested plain data (YAML, a checkpoint's hyper-parameters)."""
        out = super().to_dict()
        out.pop("encoding_spec", None)
        return out

    # ------------------------------------------------------------------ building
    @classmethod
    def create(cls, **options: Any) -> BackboneConfig:
        """The configuration from nested sections (``train={...}``) and/or flat names
        (``batch_size=16``: each routed to the one section with a field of that name,
        or by :data:`FLAT_NAMES`); flat values win over the same key in a section.

        Raises:
            ValueError: a name no section has (naming it and the sections), or one that
                several sections have (naming them).
        """
        sections = cls.section_types()
        top = {f.name for f in fields(cls)}
        nested: dict[str, Any] = {}
        flat: dict[str, tuple[str, Any]] = {}
        for key, value in options.items():
            if key in sections:
                value = value.to_dict() if isinstance(value, Section) else value
                if value is not None and not isinstance(value, Mapping):
                    raise ValueError(f"--{key} must be a mapping of its options, got "
                                     f"{value!r}")
                nested[key] = {**nested.get(key, {}), **(value or {})}
            elif key in top:
                nested[key] = value
            else:
                flat[key] = (cls._route(key, sections), value)
        for path, value in flat.values():
            name, leaf = path.split(".")
            nested[name] = {**nested.get(name, {}), leaf: value}
        return cls(**nested)

    @classmethod
    def _route(cls, key: str, sections: Mapping[str, type[Section]]) -> str:
        if key in FLAT_NAMES:
            name, leaf = FLAT_NAMES[key].split(".")
            if name in sections and leaf in {f.name for f in fields(sections[name])}:
                return FLAT_NAMES[key]
        owners = [name for name, kind in sections.items()
                  if key in {f.name for f in fields(kind)}]
        if len(owners) == 1:
            return f"{owners[0]}.{key}"
        if owners:
            raise ValueError(f"{key!r} is an option of several sections "
                             f"({', '.join(owners)}); pass it as {owners[0]}={{...}}")
        raise ValueError(f"the {cls.backbone or 'base'} configuration has no option {key!r} "
                         f"(sections: {', '.join(sections)})")
