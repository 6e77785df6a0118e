"""The sections of a recipe: typed dataclasses that the command line, YAML recipes and
the Python API read alike.

A recipe (:class:`~pyg_routing.training.config.BackboneConfig`) is a few top-level
values (backbone, problem, size, encoding, seed) and one section per purpose:
``encoding`` (the node code's options), ``data`` (the instance family), ``model``,
``train``, ``validate``, ``test`` (the test protocol) and ``trainer`` (Lightning).
Each section is a :class:`Section`: its fields' types (``Literal`` for choices) and
attribute docstrings are what ``--help`` shows (jsonargparse reads them), and
:func:`bound` records a field's range; a section checks itself when it is built, so a
value out of range is refused in one line naming the option as the command line spells
it (``--train.batch_size``), whether it came from a flag, a YAML file or Python.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any, ClassVar, Literal

from pyg_routing import encodings
from pyg_routing.options import (
    AGGREGATIONS,
    AMPLITUDES,
    COST_MODELS,
    DEFAULT_GRID,
    DEFAULT_ONE_WAY,
    ENCODERS,
    FREQUENCIES,
    IPE_DIRECTIONS,
    LOCAL_MPS,
    PHASES,
    PRESET_NAMES,
    XPE_REFERENCES,
    check_pe_init,
)

Frequency = Literal[FREQUENCIES]
Amplitude = Literal[tuple(AMPLITUDES)]
Direction = Literal[IPE_DIRECTIONS]
Phase = Literal[PHASES]
Aggregation = Literal[AGGREGATIONS]
XPEReference = Literal[XPE_REFERENCES]
CostModel = Literal[COST_MODELS]
Preset = Literal[PRESET_NAMES]
Encoder = Literal[ENCODERS]
LocalMP = Literal[LOCAL_MPS]


def bound(default: Any = MISSING, *, low: float | None = None, high: float | None = None,
          positive: bool = False, factory: Any = MISSING) -> Any:
    """A field with a range: ``>= low``, ``<= high``, ``> 0`` (``positive``)."""
    meta = {"low": low, "high": high, "positive": positive}
    if factory is not MISSING:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def section(cls: type[Section]) -> Any:
    """A section field of a recipe (its default: the section's defaults)."""
    return field(default_factory=cls)


@dataclass
class Section:
    """A group of options. ``key`` is the section's name in a recipe (``train``): the
    prefix of its flags (``--train.batch_size``) and of its error messages."""

    key: ClassVar[str] = ""

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Section):
                continue
            setattr(self, f.name, check_value(self.flag(f.name), value, hints[f.name],
                                              f.metadata))

    @classmethod
    def flag(cls, name: str) -> str:
        """The command-line spelling of field ``name``."""
        return f"--{cls.key}.{name}" if cls.key else f"--{name}"

    @classmethod
    def build(cls, value: Section | Mapping[str, Any] | None) -> Section:
        """The section from itself, a mapping of its fields (a YAML section), or ``None``
        (its defaults); an unknown key is refused, naming the flag it would be."""
        if isinstance(value, cls):
            return value
        if value is None:
            return cls()
        if isinstance(value, Section):
            raise ValueError(f"--{cls.key} takes a {cls.__name__}, got a "
                             f"{type(value).__name__}")
        if not isinstance(value, Mapping):
            raise ValueError(f"--{cls.key} must be a mapping of its options, got {value!r}")
        names = {f.name for f in fields(cls)}
        unknown = [k for k in value if k not in names]
        if unknown:
            raise ValueError(f"{cls.flag(unknown[0])}: no such option; --{cls.key} has "
                             f"{', '.join(sorted(names))}")
        return cls(**value)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        return {f.name: getattr(cls(), f.name) for f in fields(cls)}


def check_value(flag: str, value: Any, hint: Any, meta: Mapping[str, Any]) -> Any:
    """``value`` of the option ``flag`` checked against its type ``hint`` (a
    ``Literal``'s choices, ``int``, ``float``, ``bool``, optional or not) and its range
    (``meta``: :func:`bound`); returns it (an integral float for an ``int`` field becomes
    the int). Raises ``ValueError`` naming ``flag``."""
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType)
    kinds = [a for a in typing.get_args(hint) if a is not type(None)] if optional else [hint]
    if value is None:
        if optional or hint is Any:
            return None
        raise ValueError(f"{flag} must be set (null is not allowed)")
    kind = kinds[0] if len(kinds) == 1 else None
    if typing.get_origin(kind) is Literal:
        if value not in typing.get_args(kind):
            raise ValueError(f"{flag} must be one of {', '.join(map(str, typing.get_args(kind)))}"
                             f"; got {value!r}")
        return value
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{flag} must be true or false, got {value!r}")
        return value
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value):
            raise ValueError(f"{flag} must be a finite number, got {value!r}")
        if kind is int:
            if not float(value).is_integer():
                raise ValueError(f"{flag} must be an integer, got {value!r}")
            value = int(value)
        low, high = meta.get("low"), meta.get("high")
        if low is not None and value < low:
            raise ValueError(f"{flag} must be >= {low:g}, got {value!r}")
        if high is not None and value > high:
            raise ValueError(f"{flag} must be <= {high:g}, got {value!r}")
        if meta.get("positive") and not value > 0:
            raise ValueError(f"{flag} must be > 0, got {value!r}")
        return value
    if kind is str and not isinstance(value, str):
        raise ValueError(f"{flag} must be a string, got {value!r}")
    return value


# --------------------------------------------------------------------------- sections

@dataclass
class EncodingOptions(Section):
    """Positional encoding: the options of the node code that --pe names"""

    key: ClassVar[str] = "encoding"

    dim: int = bound(32, low=1)
    """width of node codes (IPE+XPE adds 2 x num_bands; Laplacian PE and RWSE: 8)"""
    num_bands: int = bound(4, low=1)
    """XPE frequency bands"""
    ipe_frequencies: Frequency = "harmonic"
    """ipe/ipexpe frequencies: harmonic (k + 1: exactly circular and reversal-invariant)
    or geometric (the paper's printed lambda^(-2k/D))"""
    ipe_amplitude: Amplitude = "inverse_square"
    """ipe/ipexpe amplitudes: inverse_square (frequency k scaled by 1/k^2, so code
    distances follow route distance), inverse (1/k) or flat (the paper's)"""
    ipe_direction: Direction = "auto"
    """ipe/ipexpe variant: auto (direction-aware for VRPTW/PDTSP and asymmetric costs,
    the reversal-invariant cosine code otherwise), aware or invariant (Tab. 10)"""
    ipe_phase: Phase = "distance"
    """ipe/ipexpe phase: distance (2 pi d_i / d_L, the paper's IPE) or index (2 pi i / L,
    Tab. 8's ablation)"""
    xpe_aggregation: Aggregation = "node"
    """xpe/ipexpe angle: node (each customer's own depot angle, the paper's XPE) or one
    angle per route (Tab. 9): mean, circular_mean, demand_mean, median or midpoint"""
    xpe_reference: XPEReference = "first"
    """xpe/ipexpe with several depots: the angle about node 0 (first, the paper's), about
    the route's own depot (route), or that plus 2 x num_bands channels coding the depot
    (route_code); one depot: all give the paper's angle"""

    def spec(self, pe: str) -> encodings.EncodingSpec:
        """Encoding ``pe`` resolved with these options (:func:`encodings.resolve`)."""
        # a backbone's encoding section may add options (DACT's cpe_scope)
        options = {k: getattr(self, k) for k in encodings.OPTIONS if hasattr(self, k)}
        return encodings.resolve(pe, dim=self.dim, num_bands=self.num_bands, **options)


@dataclass
class DataOptions(Section):
    """Instances: the family of the training, validation and test instances"""

    key: ClassVar[str] = "data"

    preset: Preset = "paper"
    """data family: paper (App. F), nds (NDS's generators), nds_low_capacity,
    nds_clustered (Tab. 6 shifts)"""
    costs: CostModel = "euclidean"
    """travel costs: euclidean (the paper's) or streets (an asymmetric matrix: a city
    grid with one-way streets)"""
    grid: int = bound(DEFAULT_GRID, low=3)
    """costs streets: intersections per side"""
    one_way: float = bound(DEFAULT_ONE_WAY, low=0, high=1)
    """costs streets: share of one-way inner streets"""
    open_routes: bool = False
    """cvrp, vrptw: open routes (vehicles end at their last customer)"""
    depots: int = bound(1, low=1)
    """cvrp: depots per instance (nodes 0..K-1, each uniform like App. F's depot); the
    datasets, references, probes, dact and nds (cvrp) take several, n2s searches one"""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.costs != "streets":
            for name, default in (("grid", DEFAULT_GRID), ("one_way", DEFAULT_ONE_WAY)):
                if getattr(self, name) != default:
                    raise ValueError(f"{self.flag(name)} {getattr(self, name)} applies to "
                                     f"--data.costs streets only (costs {self.costs})")

    def generator_options(self) -> dict[str, Any]:
        """Extra ``make_generator`` arguments: the preset, cost model, open routes and
        depots, only where they differ from the paper's (so a Euclidean configuration asks for
        exactly the generators it always did)."""
        out: dict[str, Any] = {}
        if self.preset != "paper":
            out["preset"] = self.preset
        if self.costs != "euclidean":
            out.update(costs=self.costs, grid=self.grid, one_way=self.one_way)
        if self.open_routes:
            out["open_routes"] = True
        if self.depots != 1:
            out["depots"] = self.depots
        return out


@dataclass
class ModelOptions(Section):
    """Model: the policy network"""

    key: ClassVar[str] = "model"

    encoder: Encoder = "native"
    """the encoder: native (the backbone's own, as released) or gps (the GraphGPS-style
    encoder, same width; the decoders are unchanged)"""
    dim: int = bound(128, low=1)
    """model width"""
    heads: int = bound(8, low=1)
    """attention heads (must divide --model.dim)"""
    layers: int = bound(3, low=1)
    """encoder layers"""
    local_mp: LocalMP = "directed"
    """gps encoder: message passing over the route graph: directed (separate GINs for
    predecessor and successor), undirected (one GIN over both arc directions) or none
    (the paper's plain Transformer)"""
    pe_init: str | float = "zero"
    """gps encoder: first-layer weights on the node code: zero (every encoding starts as
    the No-PE model of the same seed), default (PyTorch's init) or a number s"""

    #: the options of the GPS encoder (refused with another encoder when changed)
    GPS_ONLY: ClassVar[tuple[str, ...]] = ("local_mp", "pe_init")

    def __post_init__(self) -> None:
        super().__post_init__()
        try:
            self.pe_init = check_pe_init(self.pe_init)
        except ValueError as err:
            raise ValueError(f"{self.flag('pe_init')}: {err}") from None
        if self.dim % self.heads:
            raise ValueError(f"{self.flag('heads')} {self.heads} must divide "
                             f"{self.flag('dim')} {self.dim}")
        if self.encoder != "gps":
            for name in self.GPS_ONLY:
                default = next(f.default for f in fields(self) if f.name == name)
                if getattr(self, name) != default:
                    raise ValueError(f"{self.flag(name)} is an option of the gps encoder; "
                                     f"--model.encoder {self.encoder} has no such setting")


@dataclass
class TrainOptions(Section):
    """Training: the loop every learning rule shares"""

    key: ClassVar[str] = "train"

    epochs: int = bound(100, low=1)
    """maximum number of epochs"""
    batch_size: int = bound(64, low=1)
    """instances per training batch"""
    batches_per_epoch: int = bound(20, low=1)
    """training batches per epoch (the original's epoch size / batch size)"""


@dataclass
class ValidateOptions(Section):
    """Validation: the backbone's search on a fixed set after every epoch"""

    key: ClassVar[str] = "validate"

    instances: int = bound(256, low=1)
    """validation instances (generated with the training seed + 10^9)"""
    steps: int = bound(200, low=0)
    """search iterations per validation instance"""
    batch_size: int | None = bound(None, low=1)
    """validation instances per batch (null: all in one)"""


@dataclass
class TestOptions(Section):
    """Test protocol: the search of evaluate, compare and reproduce"""

    key: ClassVar[str] = "test"

    instances: int = bound(256, low=1)
    """generated test instances"""
    seed: int = bound(1234, low=0)
    """seed of the generated test instances and of the search"""
    steps: int | None = bound(1000, low=0)
    """search iterations (null: --test.seconds alone)"""
    seconds: float | None = bound(None, positive=True)
    """wall-clock seconds of the search of a job (a batch of instances, or one instance
    where the backbone gives every instance its own budget), start solutions included
    (null: --test.steps alone)"""
    augment: int = bound(8, low=1)
    """solution copies per instance (symmetric transformations; NDS: slots)"""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.steps is None and self.seconds is None:
            raise ValueError("--test.steps and --test.seconds are both null: the search "
                             "needs a budget")


@dataclass
class TrainerOptions(Section):
    """Lightning Trainer: where and how the run computes"""

    key: ClassVar[str] = "trainer"

    accelerator: str = "auto"
    """lightning accelerator: auto, cpu, gpu ..."""
    devices: str = "1"
    """devices per node: a number or auto"""
    strategy: str = "auto"
    """lightning strategy, e.g. ddp"""
    precision: str = "32-true"
    """32-true, bf16-mixed, 16-mixed (mixed precision: a GPU)"""

    def __post_init__(self) -> None:
        if isinstance(self.devices, int) and not isinstance(self.devices, bool):
            self.devices = str(self.devices)
        if isinstance(self.precision, int) and not isinstance(self.precision, bool):
            self.precision = str(self.precision)
        super().__post_init__()
