"""What a probed encoding is: the :data:`Encoder` type and its ``node`` / ``pairwise`` tags.

Both the probe (:mod:`~pyg_routing.probes.spearman`) and the paper's encodings
(:mod:`~pyg_routing.probes.representations`) need these; they sit below both so
the imports point one way (``spearman -> representations -> encoder_kinds``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import Tensor
from torch_geometric.data import Data

#: A probe representation: a ``Batch`` of solutions -> ``[N, D]`` per-node PE
#: (distance: L2), or a pairwise dissimilarity (attention-bias encodings): flat
#: ``[N, N]`` over the batch's nodes, or dense per graph ``[B, n_max, n_max]``
#: (node ``v`` of graph ``b`` at local index ``v - ptr[b]``, padding ignored).
Encoder = Callable[[Data], Tensor]


def pe_kind(fn: Callable[..., Any]) -> str | None:
    """``"node"``, ``"pairwise"`` or ``None`` (decided from the output shape)."""
    return getattr(fn, "pe_kind", None)


def pairwise(fn: Encoder) -> Encoder:
    """Mark ``fn`` as returning an ``[N, N]`` pairwise dissimilarity (needed only
    when a per-node output could also be square)."""
    fn.pe_kind = "pairwise"  # type: ignore[attr-defined]
    return fn


def node(fn: Encoder) -> Encoder:
    """Mark ``fn`` as returning a per-node ``[N, D]`` encoding."""
    fn.pe_kind = "node"  # type: ignore[attr-defined]
    return fn


__all__ = ["Encoder", "node", "pairwise", "pe_kind"]
