"""``PositionalEncoding``: one encoding's parts, built once and injected into an encoder.

The three encoders (:class:`~pyg_routing.models.GPSEncoder` for DACT,
:class:`~pyg_routing.models.N2SEncoder`, :class:`~pyg_routing.models.NDSEncoder`) hold
one :class:`PositionalEncoding` each and never look at an encoding's name: they ask it
for a node code (:meth:`PositionalEncoding.node_code`), an attention bias
(:meth:`PositionalEncoding.attention_bias`) and a rotary part
(:attr:`PositionalEncoding.rotary`), and each answer is ``None`` for the kinds that do
not have it. The encoding's name is resolved in one place, :meth:`PositionalEncoding.build`
(an encoder given a name calls it, as PyG's ``GPSConv`` resolves its strings once).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from pyg_routing import encodings
from pyg_routing.models.pe.alibi import ALiBiBias
from pyg_routing.models.pe.ape import AbsolutePE
from pyg_routing.models.pe.base import AttentionBias
from pyg_routing.models.pe.rope import RotaryPE
from pyg_routing.models.pe.rpe import RelativePositionBias
from pyg_routing.models.pe.spd import ShortestPathBias
from pyg_routing.transforms import EncodingInputs, NodeEncoding

#: the parts of an encoding an encoder registers as submodules (their state-dict keys
#: were ``encoder.<part>.*`` before the parts moved into ``encoder.positional``)
_LEARNED_PARTS = ("ape", "bias")


def encoding_module(name: str, *, dim: int = 64, num_heads: int = 8,
                    head_dim: int | None = None, max_len: int = 128, window: int = 16,
                    max_distance: int = 64, **kwargs: Any) -> nn.Module:
    """The ``torch.nn.Module`` of a learnable node code (APE), a rotary (RoPE) or an
    attention-bias encoding (RPE, ALiBi, SPD).

    Raises:
        ValueError: an unknown name, or an encoding without a module (the fixed node
            codes are transforms: :func:`pyg_routing.encodings.node_transform`).
    """
    key = encodings.info(name).name
    builders: dict[str, Callable[[], nn.Module]] = {
        "ape": lambda: AbsolutePE(dim, max_len, **kwargs),
        "rope": lambda: RotaryPE(head_dim or dim // num_heads, **kwargs),
        "rpe": lambda: RelativePositionBias(num_heads, window=window, **kwargs),
        "alibi": lambda: ALiBiBias(num_heads, **kwargs),
        "spd": lambda: ShortestPathBias(num_heads, max_distance, **kwargs),
    }
    if key not in builders:
        raise ValueError(f"{key!r} has no module; modules exist for {', '.join(builders)} "
                         f"(fixed node encodings: encodings.node_transform)")
    return builders[key]()


class PositionalEncoding(nn.Module):
    r"""The positional parts of one encoding for an encoder (at most one is set).

    Args:
        name: the encoding's registry name (:func:`pyg_routing.encodings.available`).
        node_pe: a fixed node code (a :class:`NodeEncoding` transform).
        ape: APE's learnable table on the within-route position.
        bias: an attention bias ``[B, heads, M, M]`` (RPE, ALiBi, SPD).
        rotary: RoPE on the queries and keys.

    Shapes:
        :meth:`code`: flat :class:`EncodingInputs` of ``N`` nodes -> ``[N, width]``;
        :meth:`node_code`: ``route_pos [B, M]`` or a code ``[B, M, width]`` ->
        ``[B, M, width]``; :meth:`attention_bias`: ``route_pos, route_id [B, M]`` ->
        ``[B, heads, M, M]``.
    """

    def __init__(self, name: str = "none", *, node_pe: NodeEncoding | None = None,
                 ape: AbsolutePE | None = None, bias: AttentionBias | None = None,
                 rotary: RotaryPE | None = None) -> None:
        super().__init__()
        info = encodings.info(name)
        given = [p for p in (node_pe, ape, bias, rotary) if p is not None]
        if len(given) > 1:
            raise ValueError("a PositionalEncoding holds at most one part (node_pe, ape, "
                             f"bias or rotary); got {len(given)}")
        self.name, self.kind = info.name, info.kind
        self.node_pe, self.ape, self.bias, self.rotary = node_pe, ape, bias, rotary
        self.width = node_pe.width if node_pe is not None else ape.dim if ape is not None else 0

    @classmethod
    def build(cls, pe: str | encodings.EncodingSpec | PositionalEncoding, *, dim: int,
              heads: int, pe_dim: int = 32, num_bands: int = 4, max_route_len: int = 512,
              **pe_kwargs: Any) -> PositionalEncoding:
        """The parts of encoding ``pe`` for an encoder of width ``dim`` with ``heads``
        attention heads: node codes of width ``pe_dim`` (IPE+XPE adds
        ``2 * num_bands``), an APE table of ``max_route_len`` rows, a bias with one
        channel per head, RoPE on heads of ``dim // heads`` channels. ``pe_kwargs`` go
        to the transform or module. A resolved :class:`~pyg_routing.encodings.EncodingSpec`
        brings its own width, bands and options (``pe_dim``, ``num_bands`` and
        ``pe_kwargs`` are then not read). A built ``PositionalEncoding`` is checked
        against ``dim`` and ``heads`` and returned as it is."""
        if isinstance(pe, PositionalEncoding):
            pe.check_fits(dim, heads)
            return pe
        if isinstance(pe, encodings.EncodingSpec):
            info, pe_dim, num_bands = pe.info, pe.dim, pe.num_bands
            pe_kwargs = {**pe.options, **pe_kwargs}
        else:
            info = encodings.info(pe)
        if info.name == "ape":
            return cls("ape", ape=encoding_module("ape", dim=pe_dim, max_len=max_route_len,
                                                  **pe_kwargs))
        if info.kind == "node":
            return cls(info.name, node_pe=encodings.node_transform(
                info.name, dim=pe_dim, num_bands=num_bands, attr_name=None, **pe_kwargs))
        if info.kind == "bias":
            return cls(info.name, bias=encoding_module(info.name, num_heads=heads,
                                                       **pe_kwargs))
        if info.kind == "rotary":
            return cls(info.name, rotary=encoding_module("rope", dim=dim, num_heads=heads,
                                                         **pe_kwargs))
        return cls(info.name)

    def check_fits(self, dim: int, heads: int) -> None:
        """Refuse parts built for another width or head count, naming both."""
        if self.bias is not None and self.bias.num_heads != heads:
            raise ValueError(f"the {self.name!r} bias has {self.bias.num_heads} heads, the "
                             f"encoder {heads}")
        if self.rotary is not None and self.rotary.head_dim * heads != dim:
            raise ValueError(f"RoPE rotates heads of {self.rotary.head_dim} channels, the "
                             f"encoder's heads have {dim // heads}")

    # ------------------------------------------------------------------ the seam
    @property
    def reads_positions(self) -> bool:
        """Whether the encoder needs ``route_pos`` (APE, the biases, RoPE)."""
        return self.ape is not None or self.bias is not None or self.rotary is not None

    def code(self, inputs: EncodingInputs) -> Tensor | None:
        """The fixed node code ``[N, width]`` from batched route quantities (the same
        call a PyG transform makes on a ``RoutingData``); ``None`` for the kinds that
        read positions instead (APE, bias, RoPE) and for no encoding."""
        return None if self.node_pe is None else self.node_pe.code(inputs)

    def observed_code(self, obs: Any, dtype: torch.dtype) -> Tensor | None:
        """The fixed node code ``[B, M, width]`` of an observation: its ``pe`` when set
        (computed once, e.g. for PPO's re-evaluations), else from its route quantities
        (``obs.encoding_inputs(dtype)``)."""
        if self.node_pe is None:
            return None
        given = getattr(obs, "pe", None)
        if given is not None:
            return given
        inputs = getattr(obs, "encoding_inputs", None)
        if inputs is None:
            raise ValueError(f"encoding {self.name!r} needs the observation's route "
                             f"quantities (`encoding_inputs`) or its node code (`pe`)")
        b, m = obs.x.shape[:2]
        # Route quantities and codes are the network's inputs: full precision, also
        # under an outer torch.autocast (only the network is autocast).
        with torch.autocast(obs.x.device.type, enabled=False):
            code = self.code(inputs(dtype))
        return code.reshape(b, m, -1).to(dtype)

    def node_code(self, pe: Tensor | None, route_pos: Tensor | None,
                  owner: str = "encoder") -> Tensor | None:
        """What an encoder concatenates to its node features: APE's table at
        ``route_pos``, or the given fixed code ``pe`` (checked); ``None`` otherwise."""
        if self.ape is not None:
            if route_pos is None:
                raise ValueError("encoding 'ape' needs route_pos [B, M]")
            return self.ape(route_pos)
        if self.node_pe is None:
            return None
        if pe is None:
            raise ValueError(f"encoding {self.name!r} needs its node code `pe` [B, M, width]")
        self.check_code_width(pe, "pe", owner)
        return pe

    def check_code_width(self, pe: Tensor, name: str, owner: str = "encoder") -> None:
        """Refuse a node code ``pe`` (called ``name``) of another width than this
        encoding's, naming both widths and how to make them agree."""
        if pe.size(-1) != self.width:
            raise ValueError(
                f"{name} has {pe.size(-1)} channels, but {owner}(pe={self.name!r}) was "
                f"built for {self.node_pe!r}, {self.width} channels: build the encoder "
                f"with the transform's width (pe_dim, num_bands) or transform with "
                f"{self.node_pe!r}")

    def attention_bias(self, route_pos: Tensor | None, route_id: Tensor | None,
                       mask: Tensor | None = None,
                       open_routes: Tensor | None = None) -> Tensor | None:
        """``[B, heads, M, M]`` bias of the bias kinds (``None`` otherwise); a missing
        ``route_id`` is one route per instance; ``open_routes [B]`` marks instances
        whose routes are open (SPD's route graph)."""
        if self.bias is None:
            return None
        if route_pos is None:
            raise ValueError(f"encoding {self.name!r} needs route_pos [B, M]")
        rid = torch.zeros_like(route_pos) if route_id is None else route_id
        return self.bias(route_pos, rid, mask, open_routes)

    def train(self, mode: bool = True) -> PositionalEncoding:
        """Also switches the node transform's mode (Laplacian PE's sign flips)."""
        super().train(mode)
        if hasattr(self.node_pe, "train"):
            self.node_pe.train(mode)
        return self

    def reset_parameters(self) -> None:
        for part in (self.ape, self.bias):
            if part is not None:
                part.reset_parameters()

    def extra_repr(self) -> str:
        part = self.node_pe if self.node_pe is not None else None
        return f"{self.name!r}" + (f", {part!r}" if part is not None else "")


def _rename_legacy_keys(state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
    # A module-level function (not a closure): DDP's spawn pickles the model.
    for part in _LEARNED_PARTS:
        old = f"{prefix}{part}."
        for key in [k for k in state_dict if k.startswith(old)]:
            state_dict[f"{prefix}positional.{part}.{key[len(old):]}"] = state_dict.pop(key)


def accept_legacy_keys(encoder: nn.Module) -> None:
    """Let ``encoder`` load state dicts written before its encoding's parts moved into
    ``encoder.positional`` (keys ``<prefix>ape.*`` and ``<prefix>bias.*``)."""
    encoder._register_load_state_dict_pre_hook(_rename_legacy_keys)
