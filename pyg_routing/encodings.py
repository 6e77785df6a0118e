"""The 14 positional encodings by name: what kind each is and how to build it.

>>> from pyg_routing import encodings
>>> encodings.available()["ipexpe"]
'node'

Kinds:

* ``node``: a per-node code ``[N, D]`` concatenated with the coordinates before the
  first layer (paper Sec. 3.3); built by :func:`node_transform` (a PyG transform)
  or, for the learnable APE, :func:`pyg_routing.models.pe.encoding_module`.
* ``bias``: an additive attention bias ``[B, H, N, N]`` entering every layer; built
  by :func:`pyg_routing.models.pe.encoding_module`.
* ``rotary``: a rotation of queries and keys (RoPE); built by the same.

An encoder holds all of this as one :class:`pyg_routing.models.pe.PositionalEncoding`.
* ``none``: no positional information.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch_geometric.transforms import BaseTransform

KINDS = ("none", "node", "bias", "rotary")


@dataclass(frozen=True)
class EncodingInfo:
    """What an encoding is: its registry name, kind, the paper's label."""

    name: str
    kind: str
    title: str
    learnable: bool
    description: str
    family: str             # the paper's grouping in Tab. 2: NLP, Graph, Routing, Ours


_INFO = [
    EncodingInfo("none", "none", "NoPE", False, "no positional information", "Baseline"),
    EncodingInfo("ape", "node", "APE", True,
                 "learnable table indexed by the within-route position", "NLP"),
    EncodingInfo("sin", "node", "SIN", False,
                 "Transformer sinusoid of the within-route index", "NLP"),
    EncodingInfo("rope", "rotary", "RoPE", False,
                 "queries/keys rotated by the within-route index", "NLP"),
    EncodingInfo("rpe", "bias", "RPE", True,
                 "learned bias per clipped signed index offset", "NLP"),
    EncodingInfo("alibi", "bias", "ALiBi", False, "linear penalty m_h |i - j| per head", "NLP"),
    EncodingInfo("lap", "node", "Laplacian PE", False,
                 "8 smallest non-trivial Laplacian eigenvectors of the route graph", "Graph"),
    EncodingInfo("rwse", "node", "RWSE", False,
                 "random-walk return probabilities, 1..8 steps, on the route graph", "Graph"),
    EncodingInfo("spd", "bias", "SPD", True, "learned bias per route-graph hop distance",
                 "Graph"),
    EncodingInfo("dact_cpe", "node", "DACT CPE", False, "DACT's cyclic positional encoding",
                 "Routing"),
    EncodingInfo("cycleformer", "node", "CycleFormer PE", False,
                 "CycleFormer's circular positional encoding", "Routing"),
    EncodingInfo("ipe", "node", "IPE", False,
                 "distance-indexed circular in-route encoding (ours)", "Ours"),
    EncodingInfo("xpe", "node", "XPE", False, "depot-anchored angle encoding (ours)", "Ours"),
    EncodingInfo("ipexpe", "node", "IPE + XPE", False, "IPE concatenated with XPE (ours)",
                 "Ours"),
]
ENCODINGS: dict[str, EncodingInfo] = {e.name: e for e in _INFO}


def available() -> dict[str, str]:
    """The 14 encoding names (plus ``none``), each mapped to its kind."""
    return {e.name: e.kind for e in _INFO}


def info(name: str) -> EncodingInfo:
    """Describe one encoding. Raises ``ValueError`` listing the valid names."""
    key = str(name).lower()
    if key not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; valid encodings: {', '.join(ENCODINGS)}")
    return ENCODINGS[key]


def node_transform(name: str, dim: int = 64, num_bands: int = 4,
                   attr_name: str | None = "pe", **kwargs: Any) -> BaseTransform:
    """The PyG transform of a fixed node encoding, storing ``[N, width]`` in
    ``attr_name``. Widths: ``dim`` for most; IPE+XPE adds ``2 * num_bands``; XPE is
    ``2 * num_bands`` padded to ``dim``; Laplacian PE and RWSE have 8 channels."""
    from pyg_routing import transforms as T

    key = info(name).name
    builders: dict[str, Callable[[], BaseTransform]] = {
        "sin": lambda: T.SinusoidalPE(dim, attr_name=attr_name, **kwargs),
        "lap": lambda: T.LaplacianPE(attr_name=attr_name, **kwargs),
        "rwse": lambda: T.RandomWalkPE(attr_name=attr_name, **kwargs),
        "dact_cpe": lambda: T.DACTCPE(dim, attr_name=attr_name, **kwargs),
        "cycleformer": lambda: T.CycleFormerPE(dim, attr_name=attr_name, **kwargs),
        "ipe": lambda: T.IPE(dim, attr_name=attr_name, **kwargs),
        "xpe": lambda: T.XPE(num_bands, dim, attr_name=attr_name, **kwargs),
        "ipexpe": lambda: T.IPEXPE(dim, num_bands, attr_name=attr_name, **kwargs),
    }
    if key not in builders:
        learnable = " (learnable: use pyg_routing.models.pe.encoding_module)"
        raise ValueError(f"{key!r} is a {ENCODINGS[key].kind} encoding"
                         + (learnable if key == "ape" else "")
                         + f"; node transforms exist for {', '.join(builders)}")
    return builders[key]()


#: the node-encoding options: option name -> (the transform's keyword, the encodings
#: that take it)
OPTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "ipe_frequencies": ("frequencies", ("ipe", "ipexpe")),
    "ipe_amplitude": ("amplitude", ("ipe", "ipexpe")),
    "ipe_direction": ("direction", ("ipe", "ipexpe")),
    "ipe_phase": ("phase", ("ipe", "ipexpe")),
    "xpe_aggregation": ("aggregation", ("xpe", "ipexpe")),
    "xpe_reference": ("reference", ("xpe", "ipexpe")),
    "cpe_scope": ("scope", ("dact_cpe",)),
}


@dataclass(frozen=True)
class EncodingSpec:
    """One encoding resolved once (:func:`resolve`): what it is, the width of its node
    code and the options of its transform. Every layer that builds or reads an encoding
    receives this object (``PositionalEncoding.build`` takes it) instead of re-reading a
    name and loose keyword arguments.

    Attributes:
        info: the registry entry (name, kind, the paper's label).
        dim: width of node codes (IPE+XPE adds ``2 * num_bands``; Laplacian PE and RWSE
            have 8 channels whatever ``dim`` says).
        num_bands: XPE frequency bands.
        options: the transform's keyword arguments, only those this encoding takes.
    """

    info: EncodingInfo
    dim: int = 32
    num_bands: int = 4
    options: Mapping[str, Any] = field(default_factory=dict)

    def shaping(self) -> dict[str, Any]:
        """What of this encoding shapes a model's weights and inputs, by option name
        (``dim`` and ``num_bands`` only where the code's width reads them, and the
        transform's options): a resumed run must match these."""
        out: dict[str, Any] = {}
        if self.kind == "node" and self.name not in ("lap", "rwse"):
            out["dim"] = self.dim
        if self.name in ("xpe", "ipexpe"):
            out["num_bands"] = self.num_bands
        names = {keyword: option for option, (keyword, _) in OPTIONS.items()}
        out.update({names[k]: v for k, v in self.options.items()})
        return out

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def kind(self) -> str:
        return self.info.kind

    def node_transform(self, attr_name: str | None = "pe") -> BaseTransform:
        """The PyG transform of this (fixed node) encoding (:func:`node_transform`)."""
        return node_transform(self.name, dim=self.dim, num_bands=self.num_bands,
                              attr_name=attr_name, **self.options)


def resolve(name: str | EncodingSpec, *, dim: int = 32, num_bands: int = 4,
            **options: Any) -> EncodingSpec:
    """The :class:`EncodingSpec` of encoding ``name`` (a spec is returned as it is).

    ``options`` are :data:`OPTIONS` by their option names (``ipe_direction=...``); those
    the encoding does not take are dropped, so one configuration can serve several
    encodings (``compare``). An unknown option name raises ``ValueError``.
    """
    if isinstance(name, EncodingSpec):
        return name
    info_ = info(name)
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"unknown encoding option(s) {', '.join(unknown)}; the options are "
                         f"{', '.join(OPTIONS)}")
    kwargs = {OPTIONS[k][0]: v for k, v in options.items() if info_.name in OPTIONS[k][1]}
    return EncodingSpec(info_, int(dim), int(num_bands), kwargs)


def takers(option: str) -> tuple[str, ...]:
    """The encodings that take the node-encoding option ``option`` (:data:`OPTIONS`)."""
    return OPTIONS[option][1]
