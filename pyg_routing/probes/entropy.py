"""Hierarchy entropy of routes (paper Sec. 3.1, "Hierarchy").

The paper measures "the entropy of the depot-relative polar-angle distribution" of
the customers at within-route position ``k``, normalized, averaged over
``k = 2..15`` (0.992, minimum 0.953). It does not say how angles are binned or
whether instances are pooled; :data:`DEFINITION` states our fixed choice.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Batch, Data

from pyg_routing.probes.anisometry import as_batch, node_route_id
from pyg_routing.probes.definitions import ENTROPY, MIN_SAMPLES, NUM_BINS, POSITIONS

DEFINITION = ENTROPY

__doc__ = f"{__doc__}\n{DEFINITION}\n"


def normalized_entropy(angles: Tensor, num_bins: int = NUM_BINS) -> float:
    """Normalized plug-in entropy of ``angles`` (radians, any range: wrapped to
    ``[-pi, pi)``) binned into ``num_bins`` equal bins; NaN for no angles."""
    if angles.numel() == 0:
        return math.nan
    counts = torch.bincount(angle_bins(angles, num_bins), minlength=num_bins)
    return float(_entropy(counts.double().unsqueeze(0), num_bins)[0])


def angle_bins(angles: Tensor, num_bins: int) -> Tensor:
    """Bin index in ``0..num_bins-1`` of each angle (wrapped to ``[-pi, pi)``)."""
    frac = torch.remainder(angles.double() + math.pi, 2 * math.pi) / (2 * math.pi)
    return (frac * num_bins).long().clamp(0, num_bins - 1)


def _entropy(counts: Tensor, num_bins: int) -> Tensor:
    """Row-wise normalized entropy of a ``[K, B]`` count matrix."""
    total = counts.sum(-1, keepdim=True)
    p = counts / total.clamp(min=1)
    h = -(torch.where(p > 0, p * p.log(), torch.zeros_like(p))).sum(-1)
    return h / math.log(num_bins)


def hierarchy_entropy(data: Data | Batch | Iterable[Data],
                      positions: Sequence[int] = POSITIONS, num_bins: int = NUM_BINS,
                      min_samples: int = MIN_SAMPLES) -> dict[str, Any]:
    """Normalized depot-angle entropy per within-route position (see :data:`DEFINITION`).

    Args:
        data: a solution, a ``Batch`` of solutions, or an iterable of solutions;
            all are pooled.
        positions: the within-route positions ``k`` (1-based).
        num_bins: angle bins ``B``.
        min_samples: positions with fewer customers are skipped (value ``None``).

    Returns:
        ``positions`` (list of k), ``per_k`` (normalized entropy or ``None``),
        ``counts`` (customers at each k), ``mean`` and ``min`` over the kept k
        (``None`` if none is kept), ``num_bins``, ``min_samples``, ``num_instances``.
    """
    data = as_batch(data)
    ks = torch.tensor(list(positions), dtype=torch.long)
    visited = node_route_id(data) >= 0
    route_pos = data.route_pos.cpu()
    bins = angle_bins(data.depot_angle.cpu(), num_bins)
    # Row of each customer in the [K, B] histogram (-1: position not probed).
    lookup = torch.full((int(max(int(route_pos.max()), int(ks.max()))) + 2,), -1,
                        dtype=torch.long)
    lookup[ks] = torch.arange(ks.numel())
    row = torch.where(visited.cpu() & (route_pos >= 0), lookup[route_pos.clamp(min=0)],
                      torch.full_like(route_pos, -1))
    keep = row >= 0
    hist = torch.bincount(row[keep] * num_bins + bins[keep],
                          minlength=ks.numel() * num_bins).view(ks.numel(), num_bins)
    counts = hist.sum(-1)
    ent = _entropy(hist.double(), num_bins)
    ok = counts >= max(min_samples, 1)
    per_k = [float(e) if o else None for e, o in zip(ent.tolist(), ok.tolist())]
    kept = ent[ok]
    batch = getattr(data, "batch", None)
    return {
        "positions": ks.tolist(),
        "per_k": per_k,
        "counts": counts.tolist(),
        "mean": float(kept.mean()) if kept.numel() else None,
        "min": float(kept.min()) if kept.numel() else None,
        "num_bins": num_bins,
        "min_samples": min_samples,
        "num_instances": int(batch.max()) + 1 if batch is not None else 1,
    }


__all__ = ["DEFINITION", "MIN_SAMPLES", "NUM_BINS", "POSITIONS", "angle_bins",
           "hierarchy_entropy", "normalized_entropy"]
