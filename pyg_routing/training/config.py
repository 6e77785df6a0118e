"""Hyper-parameters as dataclasses: one object per backbone feeds the CLI and the
LightningModule.

A field's metadata says how the command line spells it (``flag``), explains it
(``help``) and bounds it (``low``: the smallest value allowed, ``positive``: > 0);
:func:`add_config_options` declares every field on an argparse parser and
:meth:`TrainConfig.from_options` reads them back, so an option, its default and its
check are written once. A value out of range is refused when the object is built,
naming the option as the command line spells it.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any, ClassVar

from pyg_routing import encodings
from pyg_routing.data.cost_models import (
    COST_MODELS,
    DEFAULT_GRID,
    DEFAULT_ONE_WAY,
    check_cost_model,
)
from pyg_routing.data.problems import OPEN_ROUTE_PROBLEMS, Problem
from pyg_routing.functional.route_angle import AGGREGATIONS
from pyg_routing.functional.route_pe import AMPLITUDES, FREQUENCIES, PHASES
from pyg_routing.models.gps_encoder import ENCODERS, LOCAL_MPS, check_local_mp, check_pe_init
from pyg_routing.transforms.ipe import IPE_DIRECTIONS


def option(default: Any, help: str, *, flag: str | None = None, low: float | None = None,
           positive: bool = False, choices: tuple[str, ...] | None = None,
           cli: bool = True) -> Any:
    """A config field with its command-line spelling, help and bounds."""
    return field(default=default, metadata={"help": help, "flag": flag, "low": low,
                                            "positive": positive, "choices": choices,
                                            "cli": cli})


def flag_of(f: Any) -> str:
    """``--batch-size`` for the field ``batch_size`` (or the field's own ``flag``)."""
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


@dataclass
class TrainConfig:
    """What every backbone's training shares: the problem, the encoder and the
    encoding, the data per batch, validation and the seed."""

    #: the backbone this configuration belongs to (set by subclasses)
    backbone: ClassVar[str] = ""

    problem: str = option("cvrp", "routing problem", cli=False)
    num_customers: int = option(20, "customers per instance", low=1, cli=False)
    pe: str = option("ipexpe", "positional encoding", cli=False)
    dim: int = option(64, "model width", low=1)
    heads: int = option(4, "attention heads (must divide --dim)", low=1)
    num_layers: int = option(3, "encoder layers", flag="--layers", low=1)
    pe_dim: int = option(32, "width of node encodings", low=1)
    num_bands: int = option(4, "XPE frequency bands", low=1)
    batch_size: int = option(512, "instances per training batch", low=1)
    val_steps: int = option(200, "greedy search steps per validation instance", low=0)
    init: str | None = option(None, "initial solutions of training and validation "
                                    "(default: the backbone's)", cli=False)
    seed: int = option(0, "training seed: initial weights, batches and sampled moves",
                       cli=False)
    pe_init: str | float = option(
        "zero", "first-layer weights on the node code: zero (every encoding starts as the "
                "No-PE model of the same seed), default (PyTorch's init over the "
                "concatenated fan-in) or a number s (the No-PE model plus a code block s "
                "times PyTorch's draw)")
    ipe_frequencies: str = option(
        "harmonic", "IPE frequencies of ipe/ipexpe: harmonic (k + 1: exactly circular and "
                    "reversal-invariant) or geometric (the paper's printed lambda^(-2k/D))",
        choices=FREQUENCIES)
    ipe_amplitude: str = option(
        "inverse_square", "IPE amplitudes of ipe/ipexpe: inverse_square (frequency k scaled "
                          "by 1/k^2, so code distances follow route distance), inverse (1/k) "
                          "or flat (the paper's equal amplitudes)",
        choices=tuple(AMPLITUDES))
    ipe_direction: str = option(
        "auto", "IPE variant of ipe/ipexpe: auto (direction-aware for VRPTW/PDTSP, the "
                "reversal-invariant cosine code for TSP/CVRP), aware or invariant (the "
                "paper's direction ablation)", choices=IPE_DIRECTIONS)
    ipe_phase: str = option(
        "distance", "IPE phase of ipe/ipexpe: distance (2 pi d_i / d_L, the paper's IPE) or "
                    "index (2 pi i / L, the paper's index-based ablation, Tab. 8)",
        choices=PHASES)
    xpe_aggregation: str = option(
        "node", "XPE angle of xpe/ipexpe: node (each customer's own depot angle, the paper's "
                "XPE) or one angle per route (the paper's Tab. 9 ablation): mean, "
                "circular_mean, demand_mean, median or midpoint",
        choices=AGGREGATIONS)
    local_mp: str = option(
        "directed", "the encoder's message passing over the route graph: directed "
                    "(separate GINs for predecessor and successor), undirected (one GIN "
                    "over both arc directions) or none (the paper's plain Transformer)",
        choices=LOCAL_MPS)
    compiled: bool = option(False, "use torch.compile where no gradient flows", cli=False)
    costs: str = option(
        "euclidean", "travel costs of the training, validation and test instances: euclidean "
                     "(the paper's) or streets (an asymmetric matrix: a city grid with "
                     "one-way streets)", choices=COST_MODELS)
    grid: int = option(DEFAULT_GRID, "--costs streets: intersections per side", low=3)
    one_way: float = option(DEFAULT_ONE_WAY, "--costs streets: share of one-way inner "
                                             "streets, in [0, 1]", low=0)
    open_routes: bool = option(False, "cvrp, vrptw: open routes (vehicles end at their last "
                                      "customer)")

    #: whether validation searches greedily (argmax actions) or samples
    greedy_validation: ClassVar[bool] = True
    #: whether test-time copies (augmentation) each start from their own initial
    #: solution (:func:`pyg_routing.envs.improve`'s ``independent_starts``)
    independent_starts: ClassVar[bool] = False

    #: fields that shape the weights or what the first layer reads: a resumed run
    #: must match its checkpoint in these
    ARCHITECTURE: ClassVar[tuple[str, ...]] = (
        "problem", "pe", "dim", "heads", "num_layers", "pe_dim", "num_bands", "local_mp",
        "ipe_frequencies", "ipe_amplitude", "ipe_direction", "ipe_phase", "xpe_aggregation")

    def __post_init__(self) -> None:
        self.problem = Problem.parse(self.problem).value
        self.pe = encodings.info(self.pe).name
        self.pe_init = check_pe_init(self.pe_init)
        self.local_mp = check_local_mp(self.local_mp)
        for f in fields(self):
            self._check_field(f, getattr(self, f.name))
        if self.dim % self.heads:
            raise ValueError(f"--heads {self.heads} must divide --dim {self.dim}")
        check_cost_model(self.costs, self.grid, self.one_way)
        if self.open_routes and Problem.parse(self.problem) not in OPEN_ROUTE_PROBLEMS:
            raise ValueError(f"--open-routes applies to "
                             f"{' and '.join(p.value for p in OPEN_ROUTE_PROBLEMS)}, not "
                             f"{self.problem}")
        if self.xpe_aggregation == "demand_mean" \
                and not Problem.parse(self.problem).has_capacity:
            raise ValueError(f"--xpe-aggregation demand_mean weighs by demand; {self.problem} "
                             f"has no demands")

    def encoding_options(self) -> dict[str, Any]:
        """The node-encoding options of this configuration's ``pe``, as its transform's
        keyword arguments (:data:`ENCODING_OPTIONS`)."""
        return {keyword: getattr(self, name)
                for name, (keyword, takers) in ENCODING_OPTIONS.items() if self.pe in takers}

    def _check_field(self, f: Any, value: Any) -> None:
        meta, flag = f.metadata, flag_of(f)
        if value is None:
            return
        if meta.get("choices") and value not in meta["choices"]:
            raise ValueError(f"{flag} must be one of {meta['choices']}, got {value!r}")
        low, positive = meta.get("low"), meta.get("positive")
        if low is None and not positive:
            return
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value):
            raise ValueError(f"{flag} must be a finite number, got {value!r}")
        if f.type in ("int", int) and not float(value).is_integer():
            raise ValueError(f"{flag} must be an integer, got {value!r}")
        if low is not None and value < low:
            raise ValueError(f"{flag} must be >= {low:g}, got {value!r}")
        if positive and not value > 0:
            raise ValueError(f"{flag} must be > 0, got {value!r}")

    @classmethod
    def from_options(cls, options: argparse.Namespace | dict[str, Any],
                     **given: Any) -> TrainConfig:
        """The configuration from parsed options (fields not among them keep their
        defaults) and explicit keyword values (which win).

        Raises:
            ValueError: an option the user gave on the command line
                (:func:`add_config_options`) belongs to other backbones, naming the
                option, the backbones it belongs to and this one.
        """
        opts = vars(options) if isinstance(options, argparse.Namespace) else dict(options)
        names = {f.name for f in fields(cls)}
        refuse_foreign_options(opts, cls.backbone)
        return cls(**{k: v for k, v in {**opts, **given}.items() if k in names})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def data_options(self) -> dict[str, Any]:
        """Extra ``make_generator`` arguments of the training, validation and test data:
        the cost model and open routes, only where they differ from the paper's (so a
        Euclidean configuration asks for exactly the generators it always did)."""
        out: dict[str, Any] = {}
        if self.costs != "euclidean":
            out.update(costs=self.costs, grid=self.grid, one_way=self.one_way)
        if self.open_routes:
            out["open_routes"] = True
        return out


#: the node-encoding options: config field -> (the transform's keyword, the encodings
#: that take it)
ENCODING_OPTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "ipe_frequencies": ("frequencies", ("ipe", "ipexpe")),
    "ipe_amplitude": ("amplitude", ("ipe", "ipexpe")),
    "ipe_direction": ("direction", ("ipe", "ipexpe")),
    "ipe_phase": ("phase", ("ipe", "ipexpe")),
    "xpe_aggregation": ("aggregation", ("xpe", "ipexpe")),
}


def refuse_encoding_options(options: argparse.Namespace | dict[str, Any],
                            names: list[str]) -> None:
    """``ValueError`` naming the first node-encoding option the user gave on the command
    line (:class:`GivenOption`) that none of the encodings ``names`` takes."""
    opts = vars(options) if isinstance(options, argparse.Namespace) else options
    for name, (flag, _) in opts.get(GIVEN_OPTIONS, {}).items():
        if name not in ENCODING_OPTIONS:
            continue
        takers = ENCODING_OPTIONS[name][1]
        if not set(takers) & set(names):
            raise ValueError(f"{flag} is an option of the {' and '.join(takers)} encodings; "
                             f"--pe {','.join(names)} has none of them")


#: options of the GPS encoder and their defaults: other encoders refuse them
GPS_OPTIONS = {"local_mp": "directed", "pe_init": "zero"}
#: options of DACT's pair decoder: other decoders refuse them
DACT_DECODER_OPTIONS = {"compiled": False}


def encoder_option(own: str) -> Any:
    """The ``encoder`` field of a backbone with an architecture of its own (``own``)."""
    return option("native", f"the encoder: native ({own}, as in the original) or gps (the "
                            "GraphGPS-style encoder of DACT, same width; the decoders are "
                            "unchanged)", choices=ENCODERS)


def refuse_gps_options(config: TrainConfig, backbone: str) -> None:
    """Raise ``ValueError`` naming the first GPS-encoder option set away from its default
    for a ``backbone`` whose chosen encoder has no such setting (``--encoder gps``
    takes them), and the first option of DACT's decoder."""
    refused = dict(DACT_DECODER_OPTIONS)
    if getattr(config, "encoder", "native") != "gps":
        refused.update(GPS_OPTIONS)
    for name, default in refused.items():
        if getattr(config, name) != default:
            owner = "the GPS encoder (dact, or --encoder gps)" if name in GPS_OPTIONS \
                else "DACT's decoder"
            flag = "--compile" if name == "compiled" else f"--{name.replace('_', '-')}"
            raise ValueError(f"{flag} is an option of {owner}; the "
                             f"{backbone} {'encoder' if name in GPS_OPTIONS else 'decoder'} "
                             f"has no such setting")


#: the namespace attribute where :func:`add_config_options`' options record that the user
#: gave them: ``{field: (flag, backbones that have it)}``
GIVEN_OPTIONS = "_given_config_options"


def refuse_foreign_options(options: argparse.Namespace | dict[str, Any],
                           backbone: str) -> None:
    """``ValueError`` naming the first option the user gave (a :class:`GivenOption`) that
    belongs to other backbones than ``backbone``."""
    opts = vars(options) if isinstance(options, argparse.Namespace) else options
    for flag, owners in opts.get(GIVEN_OPTIONS, {}).values():
        if backbone not in owners:
            raise ValueError(f"{flag} is an option of the {' and '.join(owners)} backbone"
                             f"{'s' if len(owners) > 1 else ''}; the {backbone} backbone "
                             f"has no such option")


def _on_cli(cls: type[TrainConfig], name: str) -> bool:
    return any(f.name == name and f.metadata.get("cli") for f in fields(cls))


class GivenOption(argparse.Action):
    """Stores the value (converted by ``type``) and records that the option was given,
    with the backbones it belongs to, so a backbone can refuse another's option."""

    def __init__(self, *args: Any, backbones: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.backbones = backbones

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)
        given = dict(getattr(namespace, GIVEN_OPTIONS, {}))
        given[self.dest] = (option_string or self.option_strings[0], self.backbones)
        setattr(namespace, GIVEN_OPTIONS, given)


def add_config_options(p: argparse.ArgumentParser, configs: list[type[TrainConfig]],
                       defaults: dict[str, Any] | None = None) -> None:
    """Declare the command-line fields of ``configs`` (the registered backbones'
    configurations) on ``p``. An option not given stays unset, so each backbone's
    own default applies (listed in the help); ``defaults`` replaces those for every
    backbone (a command's own scale, e.g. ``compare``'s CPU-sized batches)."""
    defaults = defaults or {}
    seen: dict[str, Any] = {}
    for cfg in configs:
        for f in fields(cfg):
            if f.metadata.get("cli") and f.name not in seen:
                seen[f.name] = f
    for name, f in seen.items():
        own = {cfg.backbone: _default_of(g) for cfg in configs for g in fields(cfg)
               if g.name == name}
        shown = defaults[name] if name in defaults else \
            ", ".join(f"{b}: {v}" for b, v in own.items())
        kind = _option_type(f)
        has = tuple(cfg.backbone for cfg in configs if _on_cli(cfg, name))
        only = "" if len(has) == len(configs) else f"[{', '.join(has)}] "
        kwargs: dict[str, Any] = {"dest": name, "default": argparse.SUPPRESS,
                                  "action": GivenOption, "backbones": has,
                                  "help": f"{only}{f.metadata['help']} (default {shown})"}
        if f.metadata.get("choices"):
            kwargs["choices"] = f.metadata["choices"]
        if kind is not None:
            kwargs["type"] = kind
        if f.type in ("bool", bool):                    # a switch: given means True
            kwargs.update(nargs=0, const=True)
        p.add_argument(flag_of(f), **kwargs)
    if defaults:
        p.set_defaults(**{k: v for k, v in defaults.items() if k in seen})


def _default_of(f: Any) -> Any:
    return f.default if f.default is not MISSING else f.default_factory()


def _option_type(f: Any) -> Any:
    if f.metadata.get("choices"):
        return None
    if f.name == "pe_init":
        return _pe_init_option
    if f.type in ("int", int):
        return int
    if f.type in ("float", float, "float | None"):
        return _optional_float if "None" in str(f.type) else float
    return None


def _optional_float(value: str) -> float | None:
    """A float, or ``none``/``off`` for ``None`` (e.g. no gradient clipping)."""
    if value.lower() in ("none", "off"):
        return None
    return float(value)


def _pe_init_option(value: str) -> str | float:
    """``--pe-init`` parsed by :func:`check_pe_init`, refused as an argparse error."""
    try:
        return check_pe_init(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
