r"""Index-based baseline encodings (paper App. E) as batched tensor functions.

Everything here is indexed by the within-route position ``i`` of a node (``route_pos``:
depot 0, customers ``1..L``, unvisited ``-1``) and, for the cyclic encodings, by the
number ``L`` of customers on the node's route (:func:`route_sizes`). The functions
take flat ``[N]`` or dense ``[B, N]`` tensors, have no Python loop over nodes or
routes, and run on any device, so a search loop can recompute them every step.

Conventions (documented, never NaN):

* **Unvisited** customers (``route_pos < 0``) get an all-zero node code, are not
  rotated by RoPE, and pairs involving them get their own bias bucket (RPE, SPD)
  or no bias (ALiBi).
* **The depot** has position 0. It belongs to every route; where an encoding
  needs its route size (DACT original), :func:`route_sizes` gives it the largest
  route of its graph (for a TSP, the one route, which matches DACT exactly).
* **Pairwise** quantities (``[B, N, N]``) are limited to ``N <= MAX_BIAS_NODES``
  nodes per graph, because they grow quadratically.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable

import torch
from torch import Tensor
from torch_geometric.data import Batch, Data
from torch_geometric.utils import scatter, to_dense_batch

from pyg_routing.errors import NoSolutionError

VARIANTS = ("original", "paper")
#: Default limit on nodes per graph for ``[B, N, N]`` pairwise tensors.
MAX_BIAS_NODES = 4096


# ----------------------------------------------------------------------------- checks
def check_even_dim(dim: int, name: str = "encoding") -> None:
    """Raise ``ValueError`` naming ``dim`` unless it is an even integer ``>= 2``."""
    if not isinstance(dim, int) or dim < 2 or dim % 2:
        raise ValueError(f"{name} needs an even dim >= 2 (sin/cos channel pairs), got dim={dim}")


def check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")


def check_num_nodes(num_nodes: int, max_nodes: int = MAX_BIAS_NODES,
                    name: str = "pairwise encoding", heads: int = 1, batch: int = 1) -> None:
    """Raise ``ValueError`` if a ``[B, H, N, N]`` tensor is requested for ``N > max_nodes``."""
    if num_nodes > max_nodes:
        gib = batch * heads * num_nodes * num_nodes * 4 / 2 ** 30
        raise ValueError(
            f"{name}: N={num_nodes} nodes per graph is above the limit max_nodes={max_nodes} "
            f"(the [B, H, N, N] bias grows quadratically; here about {gib:.1f} GiB in "
            f"float32); raise max_nodes explicitly if you have the memory")


def _work_dtype(device: torch.device) -> torch.dtype:
    """float64 for the angles where supported (exact positions up to 2^53)."""
    return torch.float32 if device.type == "mps" else torch.float64


def _out_dtype(dtype: torch.dtype | None) -> torch.dtype:
    return torch.get_default_dtype() if dtype is None else dtype


def sin_frequencies(dim: int, base: float = 1e4, device: torch.device | None = None,
                    dtype: torch.dtype = torch.float64) -> Tensor:
    """``[dim // 2]`` SIN frequencies ``ω_k = base^(-2k/dim)``."""
    k = torch.arange(dim // 2, device=device, dtype=dtype)
    return torch.pow(torch.tensor(float(base), device=device, dtype=dtype), -2 * k / dim)


def _interleave(angle: Tensor, dtype: torch.dtype) -> Tensor:
    """``[..., K]`` angles -> ``[..., 2K]`` ``[sin a_0, cos a_0, sin a_1, ...]`` in ``dtype``.

    The angles are reduced mod 2π in their own (float64) precision first, so the
    sines can be taken in a cheaper output dtype without losing accuracy.
    """
    angle = torch.remainder(angle, 2 * math.pi).to(dtype)
    return torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).flatten(-2)


# ----------------------------------------------------------------------------- node inputs
def route_sizes(route_pos: Tensor, route_id: Tensor, batch: Tensor | None = None) -> Tensor:
    """Number ``L`` of customers on each node's route, same shape as ``route_pos``.

    Args:
        route_pos: ``[N]`` (or ``[B, N]``) within-route positions (depot 0, unvisited -1).
        route_id: same shape; route ids unique over the tensor (-1 depot/unvisited).
        batch: ``[N]`` graph of each node for flat input (``None``: one graph per row
            of a dense input, or one graph for flat input).

    Returns:
        Long tensor: ``L`` of the route for customers, the largest ``L`` of the graph
        for the depot (0 if the graph has no route), 0 for unvisited customers.
    """
    shape = route_pos.shape
    pos = route_pos.reshape(-1).long()
    rid = route_id.reshape(-1).long()
    if batch is None:
        rows = 1 if route_pos.dim() < 2 else shape[0]
        batch = torch.arange(rows, device=pos.device).repeat_interleave(pos.numel() // max(rows, 1))
    visited = rid >= 0
    # Route ids are unique over the tensor, so there are fewer routes than nodes.
    per_route = scatter(pos.clamp(min=0), rid.clamp(min=0), 0, dim_size=pos.numel() + 1,
                        reduce="max")
    per_graph = scatter(pos.clamp(min=0), batch, 0, reduce="max")
    size = torch.where(visited, per_route[rid.clamp(min=0)], pos.new_zeros(()))
    size = torch.where(pos == 0, per_graph[batch], size)
    return size.view(shape)


def node_route_inputs(data: Data) -> tuple[Tensor, Tensor]:
    """``(route_pos [N], route_size [N])`` of a ``RoutingData`` or ``Batch`` with a solution.

    Raises:
        NoSolutionError: ``data`` has no solution (no ``route_pos``).
    """
    _require_positions(data)
    batch = data.batch if isinstance(data, Batch) else None
    return data.route_pos, route_sizes(data.route_pos, data.route_id, batch)


def dense_route_inputs(data: Data) -> tuple[Tensor, Tensor, Tensor]:
    """Dense ``(route_pos, route_id, mask)``, each ``[B, N_max]``, from a ``RoutingData``
    or ``Batch``; padding has ``route_pos = route_id = -1`` and ``mask = False``.

    Raises:
        NoSolutionError: ``data`` has no solution (no ``route_pos``).
    """
    _require_positions(data)
    batch = data.batch if isinstance(data, Batch) else None
    pos, mask = to_dense_batch(data.route_pos, batch, fill_value=-1)
    rid, _ = to_dense_batch(data.route_id, batch, fill_value=-1)
    return pos, rid, mask


def _require_positions(data: Data) -> None:
    if "route_pos" not in data:
        raise NoSolutionError("this instance has no solution (no route_pos); build one with "
                              "RoutingData.from_routes(instance, routes)")


def max_route_length(data: Data | Iterable[Data]) -> int:
    """Largest route size ``L`` (customers on a route) over a ``RoutingData``, a ``Batch``
    or a dataset / iterable of them; the ``L_max`` of :class:`AbsolutePE`.

    Raises:
        NoSolutionError: an item has no solution.
    """
    items: Iterable[Data]
    store = getattr(data, "_data", None)
    if (isinstance(store, Data) and getattr(data, "_indices", 1) is None
            and "route_pos" in store):
        items = [store]                       # whole in-memory dataset: one collated tensor
    else:
        items = [data] if isinstance(data, Data) else data
    best = 0
    for item in items:
        _require_positions(item)
        if item.route_pos.numel():
            best = max(best, int(item.route_pos.max()))
    return best


# ----------------------------------------------------------------------------- node codes
def sinusoidal_pe(index: Tensor, dim: int, base: float = 1e4,
                  dtype: torch.dtype | None = None) -> Tensor:
    r"""SIN: ``PE_{2k} = sin(i / base^{2k/D})``, ``PE_{2k+1} = cos(i / base^{2k/D})``.

    Args:
        index: ``[...]`` integer positions ``i`` (depot 0); negative -> all-zero row.
        dim: ``D``, even ``>= 2``.
        base: ``λ`` (10,000 in the paper).
        dtype: output dtype (default: torch's default float); angles use float64.

    Returns:
        ``[..., dim]``.
    """
    check_even_dim(dim, "sinusoidal_pe")
    work = _work_dtype(index.device)
    omega = sin_frequencies(dim, base, index.device, work)
    angle = index.to(work).unsqueeze(-1) * omega
    return _interleave(angle, _out_dtype(dtype)) * (index >= 0).unsqueeze(-1)


def cycleformer_pe(position: Tensor, route_size: Tensor, dim: int,
                   variant: str = "original", base: float = 1e4,
                   dtype: torch.dtype | None = None) -> Tensor:
    r"""CycleFormer circular PE, ``[..., dim]`` (interleaved sin/cos, ``ω_k = base^{-2k/D}``).

    * ``variant="original"`` (Yook et al. 2024; repo Giventicket/CycleFormer,
      ``model.py``, ``PositionalEncoding_Circular``): SIN plus a phase that turns
      once around the closed tour of ``n = L + 1`` nodes (depot + ``L`` customers):
      ``PE_{2k} = sin(i ω_k + 2π i / n)``, ``PE_{2k+1} = cos(i ω_k + 2π i / n)``.
      CycleFormer's ``max_len`` is the TSP size, i.e. ``n`` for a TSP route. Only
      the added phase is periodic; the code is not periodic in ``i``.
    * ``variant="paper"`` (App. E): ``PE_{2k} = sin(2π i / L · ω_k)``,
      ``PE_{2k+1} = cos(2π i / L · ω_k)`` with ``L`` the number of customers; only
      the ``k = 0`` pair (``ω_0 = 1``) is exactly periodic with period ``L``.

    Args:
        position: ``[...]`` within-route positions ``i`` (depot 0; negative -> zeros).
        route_size: ``[...]`` ``L`` of each node's route (:func:`route_sizes`).
        dim: even ``>= 2``.
    """
    check_even_dim(dim, "cycleformer_pe")
    check_variant(variant)
    work = _work_dtype(position.device)
    omega = sin_frequencies(dim, base, position.device, work)
    i = position.to(work).unsqueeze(-1)
    size = route_size.to(work).unsqueeze(-1).clamp(min=1)
    if variant == "original":
        angle = i * omega + 2 * math.pi * i / (size + 1)
    else:
        angle = 2 * math.pi * i / size * omega
    return _interleave(angle, _out_dtype(dtype)) * (position >= 0).unsqueeze(-1)


def gray_code(position: Tensor, route_size: Tensor, num_bits: int,
              dtype: torch.dtype | None = None) -> Tensor:
    r"""``Gray(i mod L)`` as ``num_bits`` bits (least significant first), ``[..., num_bits]``.

    The paper's DACT CPE before its learnable projection (App. E). Depot
    (``i = 0``) and, as printed, the last customer (``i = L``) get code 0;
    unvisited nodes (``i < 0``) all-zero bits too. Consecutive positions differ in
    exactly one bit, also across the wrap ``L - 1 -> 0`` when ``L`` is a power of two.

    Raises:
        ValueError: ``num_bits < 1``, or a route needs more than ``num_bits`` bits.
    """
    if not isinstance(num_bits, int) or num_bits < 1 or num_bits > 62:
        raise ValueError(f"gray_code needs 1 <= num_bits <= 62, got num_bits={num_bits} "
                         f"(the paper variant of DACT CPE uses dim as the number of bits)")
    pos = position.long()
    idx = torch.where(pos >= 0, pos % route_size.long().clamp(min=1), 0)
    top = int(idx.max()) if idx.numel() else 0
    if top >= 2 ** num_bits:
        raise ValueError(f"Gray code of position {top} needs {top.bit_length()} bits, got "
                         f"num_bits={num_bits} (dim of the paper variant); raise it")
    code = idx ^ (idx >> 1)
    shifts = torch.arange(num_bits, device=pos.device)
    bits = (code.unsqueeze(-1) >> shifts) & 1
    return bits.to(_out_dtype(dtype))


@functools.lru_cache(maxsize=256)
def _dact_table(n: int, dim: int, device: torch.device | None = None,
                dtype: torch.dtype = torch.float64) -> Tensor:
    """DACT's cyclic pattern for a cycle of ``n`` positions, ``[n, dim]`` (cached per
    device, so a search loop does not rebuild or re-upload it every step).

    Reproduces the math of ``Cyclic_Positional_Encoding`` (yining043/VRP-DACT,
    ``nets/graph_layers.py``), vectorized over positions and channels.
    """
    half = dim // 2
    start = float(n) ** (1.0 / half)
    if half > 1:                               # numpy.linspace(start, n, half), floored
        step = (n - start) / (half - 1)
        periods = [k * step + start for k in range(half)]
        periods[-1] = float(n)
    else:
        periods = [start]
    td_set = torch.tensor([math.floor(t) for t in periods], dtype=torch.float64)
    c = torch.arange(dim)
    pick = c // 3 * 3 + 1
    td = torch.where(pick < half, td_set[pick.clamp(max=half - 1)], td_set[-1])   # [dim]
    phi = torch.where(c <= half, 0.0, 2 * math.pi * ((half - c.double()) / half))
    # Position p samples the triangle-wave sinusoid on a 0.01 grid stretched so that
    # the n positions cover ceil(n / T) whole periods T: p -> 0.01 floor(p M / n).
    stop = torch.ceil(n / td) * td
    samples = 100 * stop                       # = len(arange(0, stop, 0.01)), exactly
    p = torch.arange(n, dtype=torch.float64).unsqueeze(-1)
    x = torch.floor(p * (samples / n)) * 0.01                                      # [n, dim]
    tri = torch.abs(torch.fmod(x, 2 * td) - td)
    arg = 2 * math.pi / td * tri + phi
    pattern = torch.where(c % 2 == 1, torch.cos(arg), torch.sin(arg))
    # Mean-pool over the cyclic neighbourhood p-2..p+2, then centre every channel.
    offsets = torch.arange(-2, 3)
    pooled = pattern[(torch.arange(n).unsqueeze(-1) + offsets + n) % n].mean(1)
    return (pooled - pattern.mean(0)).to(device, dtype)


def dact_cpe(position: Tensor, route_size: Tensor, dim: int, variant: str = "original",
             dtype: torch.dtype | None = None) -> Tensor:
    r"""DACT cyclic positional encoding, ``[..., dim]``.

    * ``variant="original"`` (Ma et al. 2021; repo yining043/VRP-DACT,
      ``nets/graph_layers.py``, ``EmbeddingNet.Cyclic_Positional_Encoding``): for a
      closed tour of ``n = L + 1`` nodes (depot + ``L`` customers; DACT's
      ``seq_length`` for a TSP), channel ``c`` is a triangle-wave sinusoid
      ``sin/cos(2π/T_c · |x mod 2T_c - T_c| + φ_c)`` (sin on even, cos on odd
      channels), periods ``T_c`` from ``linspace(n^{1/(D/2)}, n, D/2)`` (floored),
      phase ``φ_c = 0`` for ``c <= D/2`` else ``2π (D/2 - c)/(D/2)``, sampled at
      ``x = 0.01 ⌊p·100⌈n/T_c⌉T_c / n⌋``; then averaged over the cyclic neighbours
      ``p-2..p+2`` and centred per channel. Position ``p`` is taken ``mod n``, so
      ``i = n`` wraps exactly onto the depot (``i = 0``).
    * ``variant="paper"`` (App. E): the raw bits of ``Gray(i mod L)``,
      :func:`gray_code` with ``num_bits = dim``; the learnable projection to the
      model width is :class:`pyg_routing.models.pe.DACTCyclicPE`.

    Unvisited nodes (``i < 0``) get all zeros. The original pattern is computed in
    float64 (DACT rounds it to float32 before pooling: differences below 1e-6).

    Args:
        position: ``[...]`` within-route positions (depot 0).
        route_size: ``[...]`` ``L`` of each node's route (:func:`route_sizes`).
        dim: original: even ``>= 2``; paper: number of Gray-code bits ``>= 1``.
    """
    check_variant(variant)
    if variant == "paper":
        return gray_code(position, route_size, dim, dtype)
    check_even_dim(dim, "dact_cpe")
    pos = position.long()
    n = route_size.long().clamp(min=0) + 1                  # closed tour: depot + L customers
    live = pos >= 0
    out = torch.zeros(*pos.shape, dim, dtype=_out_dtype(dtype), device=pos.device)
    periods = torch.unique(n[live]).tolist() if pos.numel() else []
    if not periods:
        return out
    # One pattern per distinct tour size, stacked; each node gathers its row.
    starts = torch.tensor([0, *itertools.accumulate(periods)][:-1], device=pos.device)
    table = torch.cat([_dact_table(int(m), dim, pos.device, out.dtype) for m in periods])
    sizes = torch.tensor(periods, device=pos.device)
    n = torch.where(live, n, periods[0])
    row = starts[torch.searchsorted(sizes, n)] + torch.remainder(pos.clamp(min=0), n)
    return torch.where(live.unsqueeze(-1), table[row], out)
