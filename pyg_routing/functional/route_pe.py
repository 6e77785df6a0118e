r"""IPE and XPE (paper Sec. 3, App. E) as batched, elementwise tensor functions.

They take the per-node route quantities of :mod:`pyg_routing.data.route_quantities`
in any shape (``[N]`` flat, ``[B, N]`` dense, ...) and return ``[..., dim]``, so a
search loop can recompute them every step on CPU or CUDA.

**Frequencies.** The paper prints geometric frequencies ``ω_k = λ^(-2k/D)``. With
those, IPE is *not* circular (``cos(2π ω) ≠ 1`` for non-integer ``ω``, so the depot
at the end of a route gets another code than at its start) and the cosine-only
variant is *not* reversal-invariant (``cos(ω (2π - x)) ≠ cos(ω x)``). Our default,
``frequencies="harmonic"``, uses ``ω_k = k + 1``: integer frequencies make both
properties the paper states hold exactly. ``frequencies="geometric"`` gives the
literal formula as printed, for reproduction.

**Amplitudes.** With equal amplitudes on all ``D`` channels, ``‖IPE(a) - IPE(b)‖`` is
flat once two phases differ by more than about ``2π / D``: the code tells "same
place" from "elsewhere" but not near from far along the route. Scaling channel
``k`` by ``(k + 1)^(-p)`` fixes that: for the direction-aware variant with harmonic
frequencies ``‖IPE(a) - IPE(b)‖² ∝ Σ_k (1 - cos(k Δ)) / k^(2p)``, exactly increasing
in the circular phase gap ``Δ`` on ``[0, π]`` for ``p = 1`` (``π|Δ|/2 - Δ²/4``) and
``p = 2`` (a cubic) in the limit of many channels, and still exactly circular and
reversal-invariant. ``amplitude="inverse_square"`` (``p = 2``, the default) was chosen
by the Spearman probe (``docs/design.md``); ``"inverse"`` is ``p = 1`` and ``"flat"``
the equal amplitudes of the paper.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from pyg_routing.options import AMPLITUDES, DIRECTIONS, FREQUENCIES


def ipe_frequencies(num: int, dim: int, frequencies: str = "harmonic", base: float = 1e4,
                    device: torch.device | None = None,
                    dtype: torch.dtype = torch.float32) -> Tensor:
    """``[num]`` IPE frequencies: ``k + 1`` (harmonic) or ``base^(-2k/dim)`` (geometric)."""
    k = torch.arange(num, device=device, dtype=dtype)
    if frequencies == "harmonic":
        return k + 1
    if frequencies == "geometric":
        return torch.pow(torch.tensor(base, dtype=dtype, device=device), -2 * k / dim)
    raise ValueError(f"unknown frequencies {frequencies!r}; choose from {FREQUENCIES}")


def ipe_amplitudes(num: int, amplitude: str = "inverse_square",
                   device: torch.device | None = None,
                   dtype: torch.dtype = torch.float32) -> Tensor:
    """``[num]`` amplitudes ``(k + 1)^(-p)`` of the IPE frequencies (see the module
    docstring; ``p`` from :data:`AMPLITUDES`)."""
    if amplitude not in AMPLITUDES:
        raise ValueError(f"unknown amplitude {amplitude!r}; choose from {tuple(AMPLITUDES)}")
    k = torch.arange(1, num + 1, device=device, dtype=dtype)
    return k.pow(-AMPLITUDES[amplitude])


def check_ipe_dim(dim: int, direction: str) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r}; choose from {DIRECTIONS} "
                         f"(or 'auto' in the transforms)")
    if direction == "aware" and (dim < 2 or dim % 2):
        raise ValueError(f"direction-aware IPE needs an even dim >= 2 (sin/cos pairs), "
                         f"got dim={dim}")
    if dim < 1:
        raise ValueError(f"IPE needs dim >= 1, got dim={dim}")


def ipe_phase(cum_dist: Tensor, route_length: Tensor,
              open_route: Tensor | None = None) -> Tensor:
    """``d̂ = 2π d_i / d_L``; 0 where ``d_L = 0`` (depot, unvisited, zero-length route).

    On an open route (``open_route`` ``[...]`` bool, True for its nodes) the period is
    halved, ``d̂ = π d_i / d_L``: the route ends at its last customer, not back at the
    depot, so the closed phase would give the last customer the depot's code (2π ≡ 0);
    half a period puts start and end as far apart as the circle allows
    (``docs/design.md``: the Spearman probe on open solutions)."""
    safe = torch.where(route_length > 0, route_length, torch.ones_like(route_length))
    turn = 2 * math.pi if open_route is None else \
        torch.where(open_route, math.pi, 2 * math.pi).to(cum_dist.dtype)
    return torch.where(route_length > 0, turn * cum_dist / safe,
                       torch.zeros_like(cum_dist))


def ipe(cum_dist: Tensor, route_length: Tensor, dim: int = 64, direction: str = "invariant",
        frequencies: str = "harmonic", base: float = 1e4,
        route_pos: Tensor | None = None, amplitude: str = "inverse_square",
        open_route: Tensor | None = None) -> Tensor:
    r"""In-route positional encoding, ``[..., dim]``.

    * ``direction="aware"``: ``dim / 2`` frequencies, interleaved
      ``[sin(ω_0 d̂), cos(ω_0 d̂), sin(ω_1 d̂), cos(ω_1 d̂), ...]``.
    * ``direction="invariant"``: ``dim`` frequencies, ``[cos(ω_0 d̂), ..., cos(ω_{dim-1} d̂)]``.

    Args:
        cum_dist: ``[...]`` distance from the depot along the route (d_i).
        route_length: ``[...]`` length of the node's route (d_L).
        dim: output width.
        direction: ``"aware"`` or ``"invariant"``.
        frequencies: ``"harmonic"`` (default, exact circularity and reversal
            invariance) or ``"geometric"`` (the paper's printed formula).
        base: λ of the geometric frequencies.
        route_pos: optional ``[...]`` within-route positions; nodes with a negative
            position (unvisited PCVRP customers) get an all-zero code. Without it,
            and for the depot, the phase is 0 (``d_L = 0`` counts as phase 0 too).
        amplitude: ``"inverse_square"`` (default), ``"inverse"`` or ``"flat"``: the
            ``k``-th frequency (its sin/cos pair) is scaled by ``(k + 1)^(-p)``,
            ``p = 2, 1, 0``.
        open_route: optional ``[...]`` bool, True on open routes: half-period phase
            (:func:`ipe_phase`).
    """
    check_ipe_dim(dim, direction)
    phase = ipe_phase(cum_dist, route_length, open_route).unsqueeze(-1)
    num = dim // 2 if direction == "aware" else dim
    omega = ipe_frequencies(num, dim, frequencies, base, phase.device, phase.dtype)
    angle = phase * omega
    scale = ipe_amplitudes(num, amplitude, phase.device, phase.dtype)
    # In place on fresh tensors (a search recomputes the code every step: B*M rows).
    if direction == "aware":
        out = torch.stack([torch.sin(angle).mul_(scale), angle.cos_().mul_(scale)],
                          dim=-1).flatten(-2)
    else:
        out = angle.cos_().mul_(scale)
    if route_pos is not None:
        out.masked_fill_((route_pos < 0).unsqueeze(-1), 0.0)
    return out


def index_ipe(route_pos: Tensor, route_size: Tensor, dim: int = 64,
              direction: str = "invariant", frequencies: str = "harmonic", base: float = 1e4,
              amplitude: str = "inverse_square", dtype: torch.dtype | None = None,
              open_route: Tensor | None = None) -> Tensor:
    r"""IPE with the discrete phase ``2π i / L`` in place of ``2π d_i / d_L`` (the paper's
    index-based ablation, Tab. 8), ``[..., dim]``.

    ``i`` is the within-route position (the depot 0, customers ``1..n``) and ``L = n + 1``
    the route's number of arcs, so the return to the depot is position ``L`` (phase 2π,
    the depot's code again: circular) and reversing a route maps ``i`` to ``L - i``
    (phase ``2π - φ``: the invariant cosine code is unchanged), exactly as with the
    distance phase. Customers are spaced evenly in phase whatever their distances.

    Args:
        route_pos: ``[...]`` within-route positions (depot 0, unvisited ``< 0``: zeros).
        route_size: ``[...]`` customers ``n`` on each node's route.
        dtype: floating dtype of the code (default: PyTorch's default dtype).
        open_route: optional ``[...]`` bool: on an open route ``L = n`` (no return
            arc) and the phase is halved, ``π i / n``, as in :func:`ipe`.
        dim, direction, frequencies, base, amplitude: as in :func:`ipe`.
    """
    dtype = dtype or torch.get_default_dtype()
    position = route_pos.clamp(min=0).to(dtype)
    arcs = route_size + 1 if open_route is None else route_size + (~open_route).long()
    return ipe(position, arcs.to(dtype), dim, direction, frequencies, base, route_pos,
               amplitude, open_route)


def xpe(depot_angle: Tensor, num_bands: int = 4, dim: int | None = None,
        depot_mask: Tensor | None = None) -> Tensor:
    r"""Cross-route (depot-anchored angle) encoding, ``[..., dim or 2 * num_bands]``.

    ``[sin(2^k θ), cos(2^k θ)]`` interleaved for ``k = 0..num_bands-1``, zero-padded to
    ``dim`` when given. θ is the depot-relative angle; nodes in ``depot_mask`` get
    zeros. A customer sitting exactly on the depot has θ = 0 (atan2(0, 0)).
    """
    if num_bands < 1:
        raise ValueError(f"XPE needs num_bands >= 1, got {num_bands}")
    width = 2 * num_bands if dim is None else dim
    if width < 2 * num_bands:
        raise ValueError(f"XPE with num_bands={num_bands} needs dim >= {2 * num_bands}, "
                         f"got dim={dim}")
    theta = depot_angle.unsqueeze(-1)
    scale = torch.pow(2.0, torch.arange(num_bands, device=theta.device, dtype=theta.dtype))
    angle = theta * scale
    out = torch.stack([torch.sin(angle), angle.cos_()], dim=-1).flatten(-2)
    if width > out.size(-1):
        out = torch.nn.functional.pad(out, (0, width - out.size(-1)))
    if depot_mask is not None:
        out.masked_fill_(depot_mask.unsqueeze(-1), 0.0)
    return out


def ipexpe(cum_dist: Tensor, route_length: Tensor, depot_angle: Tensor, dim: int = 64,
           num_bands: int = 4, direction: str = "invariant", frequencies: str = "harmonic",
           base: float = 1e4, route_pos: Tensor | None = None,
           depot_mask: Tensor | None = None, amplitude: str = "inverse_square",
           open_route: Tensor | None = None) -> Tensor:
    """``[IPE ‖ XPE]``, ``[..., dim + 2 * num_bands]``."""
    return torch.cat([
        ipe(cum_dist, route_length, dim, direction, frequencies, base, route_pos, amplitude,
            open_route),
        xpe(depot_angle, num_bands, None, depot_mask),
    ], dim=-1)
