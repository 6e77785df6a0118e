"""``GPSEncoder``: the GraphGPS-style encoder with any of the 14 encodings."""

from __future__ import annotations

import contextlib
import hashlib
import math
import numbers
from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from pyg_routing.data.route_quantities import edge_index_from_successors
from pyg_routing.functional.chunks import (
    batch_slices,
    chunk_budget,
    instances_per_chunk,
    needs_grad,
)
from pyg_routing.functional.index_pe import dense_route_inputs
from pyg_routing.models.compiled import search_body
from pyg_routing.models.gps_layer import GPSLayer
from pyg_routing.models.inplace import InplaceReLU
from pyg_routing.models.pe.positional import PositionalEncoding, accept_legacy_keys
from pyg_routing.options import ENCODERS, LOCAL_MPS, check_pe_init


def check_encoder(encoder: str) -> str:
    """``encoder`` if it is one of :data:`ENCODERS`; anything else is refused."""
    if encoder not in ENCODERS:
        raise ValueError(f"unknown encoder {encoder!r}; choose from {ENCODERS}")
    return encoder


def check_heads(owner: str, dim: int, heads: int, **layers: int) -> None:
    """Refuse, naming ``owner`` and the argument, a width or head count that is not an
    integer >= 1, a width the heads do not divide, or a layer count (``layers``: name
    -> value) that is not an integer >= 0. Constructors call it before building."""
    def integer(value: Any) -> bool:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)

    for name, value in (("dim", dim), ("heads", heads)):
        if not integer(value) or value < 1:
            raise ValueError(f"{owner}: {name} must be an integer >= 1, got {value!r}")
    if dim % heads:
        raise ValueError(f"{owner}: dim={dim} must be divisible by heads={heads}")
    for name, value in layers.items():
        if not integer(value) or value < 0:
            raise ValueError(f"{owner}: {name} must be an integer >= 0, got {value!r}")


def check_local_mp(local_mp: str) -> str:
    """``local_mp`` if it is one of :data:`LOCAL_MPS`; anything else is refused with
    the valid choices."""
    if local_mp not in LOCAL_MPS:
        raise ValueError(f"unknown local_mp {local_mp!r}; choose from {LOCAL_MPS}")
    return local_mp


@contextlib.contextmanager
def _private_rng(module: nn.Module | None = None) -> Iterator[None]:
    """Run a block on a fork of torch's RNG (CPU and the devices of ``module``'s
    parameters): what it draws does not shift the stream seen after it."""
    devices = [] if module is None else sorted(
        {p.device.index or 0 for p in module.parameters() if p.is_cuda})
    with torch.random.fork_rng(devices=devices):
        yield


def _derived_generator(like: Tensor) -> torch.Generator:
    """A generator on ``like``'s device seeded from a hash of torch's CPU RNG state:
    a function of the seed and of everything drawn so far, that advances nothing and
    does not repeat the shared stream's numbers."""
    digest = hashlib.blake2b(torch.get_rng_state().numpy().tobytes(), digest_size=8,
                             person=b"pe_init").digest()
    return torch.Generator(device=like.device).manual_seed(
        int.from_bytes(digest, "little") >> 1)


def slice_inputs(inputs: dict[str, Tensor | None], sl: slice) -> dict[str, Tensor | None]:
    """:meth:`GPSEncoder.dense_inputs` of the instances ``sl``, without ``edge_index``
    (its node ids are the whole batch's; a slice runs without it)."""
    return {k: None if v is None or k == "edge_index" else v[sl] for k, v in inputs.items()}


def _pred_succ(succ: Tensor) -> tuple[Tensor, Tensor]:
    """Flat ``(pred [B*M], succ [B*M])`` node ids from per-instance successors
    ``succ [B, M]`` (a permutation in every row)."""
    src, dst = edge_index_from_successors(succ)
    pred = torch.empty_like(dst)
    pred[dst] = src
    return pred, dst


class GPSEncoder(nn.Module):
    r"""Encoder of the improvement backbones (paper Sec. 3.3): ``h⁰ = FF([x ‖ PE])``,
    then ``num_layers`` :class:`GPSLayer`\ s. Changing ``pe`` changes nothing else.

    * node encodings (``sin``, ``lap``, ``rwse``, ``dact_cpe``, ``cycleformer``, ``ipe``,
      ``xpe``, ``ipexpe``): read from ``batch[pe_attr]`` when a transform already put
      them there, else computed from the batch's route quantities;
    * ``ape``: a learnable table on the within-route position, concatenated like the
      fixed node codes;
    * bias encodings (``rpe``, ``alibi``, ``spd``): one bias module shared by all
      layers, added to every layer's attention logits;
    * ``rope``: q/k rotated by the within-route position in every layer;
    * ``none``: ``h⁰ = FF(x)``.

    Args:
        in_channels: width of the raw node features (``batch.x``, or ``batch.pos``
            when the batch has no ``x``).
        dim: model width. heads: attention heads. num_layers: GPS layers.
        pe: encoding name (see :func:`pyg_routing.encodings.available`), or a built
            :class:`~pyg_routing.models.pe.PositionalEncoding` (injected as it is;
            ``pe_dim``, ``num_bands``, ``max_route_len`` and ``pe_kwargs`` then unused).
        pe_dim: width of node encodings (IPE+XPE adds ``2 * num_bands``).
        num_bands: XPE bands.
        pe_attr: attribute holding a precomputed node encoding.
        dropout: dropout rate. max_route_len: APE table size.
        pe_init: how the first layer's weights on the node code start.
            ``"zero"`` (default): at 0, with the feature weights drawn as in a
            model without encoding (fan-in ``in_channels``). At initialisation the
            model is then exactly the ``pe="none"`` model of the same seed, the same
            weights included (encoding-specific modules draw from a private RNG
            stream), and the code's weights receive a gradient from the first step.
            ``"default"``: PyTorch's default over the concatenated fan-in, where the
            many ±1 code channels dominate ``h⁰`` at the start. A number ``s >= 0``:
            the feature weights as ``"zero"`` (the No-PE model's), plus a code block
            ``s`` times PyTorch's draw for a layer over the code alone (uniform in
            ``±s/sqrt(width)``, from a generator of its own). Node encodings only
            (incl. APE); ignored otherwise. Why: ``docs/design.md``.
        local_mp: local message passing over the route graph in every layer (the
            GraphGPS design). ``"directed"`` (default): one GIN over the
            route arcs and one over their reversal (:class:`GPSLayer`), so a node's
            embedding tells its successor from its predecessor, which the 2-opt
            action ``(i, j)`` (removing ``i -> succ(i)`` and ``j -> succ(j)``) needs.
            ``"undirected"``: one GIN over the arcs in both directions (the
            encoder before the option; reversal-invariant with a reversal-invariant
            encoding). ``"none"``: the plain Transformer of the paper's
            Sec. 3.3: the solution then reaches the model only through the encoding
            (and, for CVRP, the route-load features).
        mark_depot: :meth:`forward_observation` appends a 0/1 depot channel (depot:
            within-route position 0 outside every route) to the observation's
            features, for environments whose features do not mark the depot
            (NDS's); ``in_channels`` counts it.
        compiled: :meth:`forward_dense` runs under ``torch.compile`` where nothing
            needs a gradient (:mod:`pyg_routing.models.compiled`; search only).
        pe_kwargs: extra arguments of the encoding's transform or module.

    Shapes: a ``Batch``/``RoutingData`` with ``N`` nodes -> ``[N, dim]``.
    """

    def __init__(self, in_channels: int = 2, dim: int = 128, heads: int = 8,
                 num_layers: int = 3, pe: str | PositionalEncoding = "ipexpe",
                 pe_dim: int = 64, num_bands: int = 4, pe_attr: str = "pe",
                 dropout: float = 0.0, max_route_len: int = 512,
                 pe_init: str | float = "zero", local_mp: str = "directed",
                 mark_depot: bool = False, compiled: bool = False,
                 **pe_kwargs: Any) -> None:
        super().__init__()
        check_heads("GPSEncoder", dim, heads, num_layers=num_layers)
        pe_init = check_pe_init(pe_init)
        self.pe_attr, self.mark_depot = pe_attr, bool(mark_depot)
        self.in_channels, self.dim, self.heads = in_channels, dim, heads
        self.local_mp = check_local_mp(local_mp)
        self.pe_init = pe_init
        self.compiled = bool(compiled)
        # Encoding-specific parts draw from a private stream, and the first layer is
        # built without drawing: the shared weights then come out of the RNG in the
        # same order for every encoding, as a No-PE model draws them.
        with _private_rng():
            self.positional = PositionalEncoding.build(
                pe, dim=dim, heads=heads, pe_dim=pe_dim, num_bands=num_bands,
                max_route_len=max_route_len, **pe_kwargs)
        self.pe, self.kind = self.positional.name, self.positional.kind
        rotary = self.positional.rotary
        pe_width = self.pe_width = self.positional.width
        self.input = nn.Sequential(nn.utils.skip_init(nn.Linear, in_channels + pe_width, dim),
                                   InplaceReLU(), nn.Linear(dim, dim))
        self.layers = nn.ModuleList(
            GPSLayer(dim, heads, dropout, rotary=rotary, local=self.local_mp != "none",
                     directed=self.local_mp == "directed") for _ in range(num_layers))
        accept_legacy_keys(self)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self._reset_input()
        for layer in self.layers:
            layer.reset_parameters()
        for mod in (self.positional.ape, self.positional.bias):
            if mod is not None:
                with _private_rng(mod):
                    mod.reset_parameters()

    def _reset_input(self) -> None:
        first: nn.Linear = self.input[0]
        if self.pe_init == "default" or not self.pe_width:
            first.reset_parameters()
        else:
            # A No-PE model's first layer, drawn by PyTorch's own init, then a zero
            # code block: h0 starts as the No-PE model's.
            f = self.in_channels
            plain = nn.utils.skip_init(nn.Linear, f, self.dim, device=first.weight.device,
                                       dtype=first.weight.dtype)
            plain.reset_parameters()
            with torch.no_grad():
                first.weight[:, :f].copy_(plain.weight)
                first.weight[:, f:].zero_()
                first.bias.copy_(plain.bias)
                if isinstance(self.pe_init, float) and self.pe_init > 0:
                    # Not from the shared stream (the rest of the model stays the
                    # No-PE model of the same seed), nor from a fork of it (whose
                    # numbers the next shared weights would repeat).
                    bound = self.pe_init / math.sqrt(self.pe_width)
                    first.weight[:, f:].uniform_(-bound, bound,
                                                 generator=_derived_generator(first.weight))
        self.input[2].reset_parameters()

    def _features(self, data: Data) -> Tensor:
        x = data.x if "x" in data and data.x is not None else data.pos
        if x.size(-1) != self.in_channels:
            raise ValueError(f"GPSEncoder(in_channels={self.in_channels}) got node features "
                             f"of width {x.size(-1)}")
        positional = self.positional
        if positional.ape is not None:
            return torch.cat([x, positional.ape(data.route_pos)], dim=-1)
        if positional.node_pe is None:
            return x
        pe = data[self.pe_attr] if self.pe_attr in data else positional.node_pe.encode(data)
        positional.check_code_width(pe, f"batch.{self.pe_attr}", type(self).__name__)
        return torch.cat([x, pe.to(x.dtype)], dim=-1)

    def forward(self, data: Data) -> Tensor:
        h = self.input(self._features(data))
        batch = data.batch if "batch" in data and data.batch is not None else \
            torch.zeros(data.num_nodes, dtype=torch.long, device=h.device)
        route_pos = route_id = mask = None
        if self.positional.bias is not None or self.positional.rotary is not None:
            route_pos, route_id, mask = dense_route_inputs(data)
        opened = data.open_routes if "open_routes" in data else None
        return self._layers(h, data.edge_index, batch, route_pos, route_id, mask,
                            open_routes=opened)

    def forward_dense(self, x: Tensor, edge_index: Tensor, pe: Tensor | None = None,
                      route_pos: Tensor | None = None,
                      route_id: Tensor | None = None, succ: Tensor | None = None,
                      open_routes: Tensor | None = None) -> Tensor:
        r"""The same encoder on a dense batch of equal-size instances (search loops).

        Args:
            x: ``[B, M, in_channels]`` node features.
            edge_index: ``[2, E]`` route arcs over the flattened ``B * M`` nodes.
            pe: ``[B, M, width]`` node encoding (node kinds other than APE; the caller
                computes it with :mod:`pyg_routing.functional`).
            route_pos: ``[B, M]`` within-route positions (APE, bias, rotary kinds).
            route_id: ``[B, M]`` route ids (SPD).
            succ: ``[B, M]`` long, optional: the successor of every node within its
                instance, when ``edge_index`` is exactly the arcs ``i -> succ[i]``
                (one giant tour per instance, as the search environments keep it).
                The directed encoder then gathers each node's predecessor and
                successor instead of scattering over ``edge_index``: equal output,
                less time. Other ``local_mp`` settings use ``edge_index``.
            open_routes: ``[B]`` bool, instances whose routes are open (SPD).

        Returns:
            ``[B, M, dim]``.
        """
        b, m, _ = x.shape
        if x.size(-1) != self.in_channels:
            raise ValueError(f"GPSEncoder(in_channels={self.in_channels}) got node features "
                             f"of width {x.size(-1)}")
        if self.positional.reads_positions and route_pos is None:
            raise ValueError(f"encoding {self.pe!r} needs route_pos [B, M]")
        # Search batches (no gradient) run in slices of instances: every temporary
        # stays a few MB (see functional/chunks.py); the result is the same, bit for bit.
        # The slices need no edge_index: the directed layers gather along succ, the
        # attention-only layers read no arcs.
        inputs = {"x": x, "edge_index": edge_index, "pe": pe, "route_pos": route_pos,
                  "route_id": route_id, "succ": succ, "open_routes": open_routes}
        per_chunk = self.slices_without_arcs(b, m, inputs)
        body = search_body(self, "_dense", x, pe)
        if per_chunk is not None:
            out = x.new_empty(b, m, self.dim)
            for sl in batch_slices(b, per_chunk):
                out[sl] = body(**slice_inputs(inputs, sl))
            return out
        return body(**inputs)

    def _dense(self, x: Tensor, edge_index: Tensor | None, pe: Tensor | None,
               route_pos: Tensor | None, route_id: Tensor | None, succ: Tensor | None,
               open_routes: Tensor | None) -> Tensor:
        """:meth:`forward_dense` after its checks, on the whole batch given."""
        b, m, _ = x.shape
        parts = [x]
        code = self.positional.node_code(pe, route_pos, type(self).__name__)
        if code is not None:
            parts.append(code.to(x.dtype))
        h = self.input(torch.cat(parts, dim=-1).reshape(b * m, -1))
        batch = torch.arange(b, device=x.device).repeat_interleave(m)
        if route_id is None and route_pos is not None:
            route_id = torch.zeros_like(route_pos)
        mask = torch.ones(b, m, dtype=torch.bool, device=x.device)
        neighbours = None
        if succ is not None and self.local_mp == "directed":
            neighbours = _pred_succ(succ.to(x.device))
        return self._layers(h, edge_index, batch, route_pos, route_id, mask,
                            graph_size=m, neighbours=neighbours,
                            open_routes=open_routes).view(b, m, -1)

    @property
    def feature_width(self) -> int:
        """Width of the observation's node features ``x`` this encoder reads."""
        return self.in_channels - int(self.mark_depot)

    def forward_observation(self, obs: Any) -> Tensor:
        """:meth:`forward_dense` on an environment's observation (the fields of
        :class:`pyg_routing.envs.Observation`, duck-typed): ``[B, M, dim]``. The node
        code comes from the observation's route quantities; ``succ`` is used when it
        is the successor of every node (``[B, M]``)."""
        return self.forward_dense(**self.dense_inputs(obs))

    def dense_inputs(self, obs: Any) -> dict[str, Tensor | None]:
        """The keyword arguments of :meth:`forward_dense` for an observation (what
        :meth:`forward_observation` passes): features (with the depot channel of
        ``mark_depot``), arcs, node code, positions, route ids, successors, open
        routes. Every entry but ``edge_index`` is batch-first."""
        dtype = self.input[0].weight.dtype
        x = obs.x.to(dtype)
        if self.mark_depot:
            depot = (obs.route_pos == 0) & (obs.route_id < 0)
            x = torch.cat([x, depot.unsqueeze(-1).to(dtype)], dim=-1)
        succ = getattr(obs, "succ", None)
        if succ is not None and succ.shape != x.shape[:2]:
            succ = None
        return {"x": x, "edge_index": obs.edge_index,
                "pe": self.positional.observed_code(obs, dtype), "route_pos": obs.route_pos,
                "route_id": obs.route_id, "succ": succ,
                "open_routes": getattr(obs, "open_routes", None)}

    def slices_without_arcs(self, batch: int, nodes: int, inputs: dict[str, Tensor | None]
                            ) -> int | None:
        """Instances per slice when :meth:`forward_dense` may run on slices of the batch
        (``inputs`` as from :meth:`dense_inputs`, no gradient, a batch larger than one
        slice, layers that read no ``edge_index``); ``None`` when it runs whole."""
        # A slice's temporaries alive at once: about 8 * dim per node (qkv, the two GIN
        # hidden layers, the feed-forward hidden layer, the residual).
        per_chunk = instances_per_chunk(8 * nodes * self.dim, chunk_budget(inputs["x"].device))
        sliceable = self.local_mp == "none" or (self.local_mp == "directed"
                                                and inputs.get("succ") is not None)
        if batch <= per_chunk or not sliceable or needs_grad(self, inputs["x"], inputs["pe"]):
            return None
        return per_chunk

    def _layers(self, h: Tensor, edge_index: Tensor, batch: Tensor, route_pos: Tensor | None,
                route_id: Tensor | None, mask: Tensor | None,
                graph_size: int | None = None,
                neighbours: tuple[Tensor, Tensor] | None = None,
                open_routes: Tensor | None = None) -> Tensor:
        if self.local_mp == "undirected":
            edge_index = to_undirected(edge_index, num_nodes=h.size(0))
        bias = self.positional.attention_bias(route_pos, route_id, mask, open_routes)
        position = route_pos if self.positional.rotary is not None else None
        for layer in self.layers:
            h = layer(h, edge_index, batch, bias, position, graph_size=graph_size,
                      neighbours=neighbours)
        return h

    def __repr__(self) -> str:
        extra = "" if self.local_mp == "directed" else f", local_mp={self.local_mp!r}"
        if self.pe_width and self.pe_init not in ("zero", 0.0):
            extra += f", pe_init={self.pe_init!r}"
        if self.compiled:
            extra += ", compiled=True"
        return (f"{type(self).__name__}(in_channels={self.in_channels}, dim={self.dim}, "
                f"layers={len(self.layers)}, pe={self.pe!r}{extra})")
