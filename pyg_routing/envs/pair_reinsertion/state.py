"""Dense, batched state of the pair-reinsertion environment (N2S's PDTSP moves).

Node layout (``M = 2P + 1``): node 0 the depot, pickup ``r`` (``1 .. P``) paired with
delivery ``r + P`` (:mod:`pyg_routing.functional.pickup_delivery`). Instances with
another pairing are relabelled into this layout at reset; ``node_ids`` maps back.

The tour is ``order [B, M]`` (from the depot) with ``rank``/``succ`` derived by one
scatter each, as in the 2-opt state. The removal history (N2S's "selection
signature") is a ring buffer of the last ``window`` removed pairs plus their
counts, so the per-step update is two scatters whatever the window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from pyg_routing.data.problems import Problem
from pyg_routing.envs.base import BatchedState

#: removals of the history features: the last ``RECENT`` one-hots (N2S: 3)
RECENT = 3


@dataclass
class PairReinsertionState(BatchedState):
    """``B`` PDTSP tours on ``M = 2P + 1`` nodes (see the module docstring).

    Attributes:
        pos: ``[B, M, 2]`` coordinates in the standard layout.
        node_ids: ``[B, M]`` long, original node id of every state node.
        order: ``[B, M]`` long tour, ``order[:, 0] == 0``.
        rank: ``[B, M]`` long, position of every node in ``order``.
        succ: ``[B, M]`` long successor of every node.
        cost: ``[B]`` tour length. best_cost: ``[B]`` best length seen.
        best_order: ``[B, M]`` tour of the best solution.
        last_pair: ``[B]`` long, the pair removed at the last step (``-1``: none);
            N2S's tabu: it may not be removed again at once.
        ring: ``[B, window]`` long, the last ``window`` removed pairs (``-1``: empty),
            written at ``steps % window``.
        counts: ``[B, P]`` float, removals of each pair within the window.
        steps: steps taken.
        costs: ``[B, M, M]`` travel costs in the standard layout (an explicit,
            possibly asymmetric matrix); ``None``: Euclidean distances of ``pos``.
        asymmetric: ``[B]`` bool, whether each matrix differs from its transpose
            (IPE's ``direction="auto"``), found once at reset; ``None`` without costs.
    """

    pos: Tensor
    node_ids: Tensor
    order: Tensor
    rank: Tensor
    succ: Tensor
    cost: Tensor
    best_cost: Tensor
    best_order: Tensor
    last_pair: Tensor
    ring: Tensor
    counts: Tensor
    steps: int = 0
    costs: Tensor | None = None
    asymmetric: Tensor | None = None

    BEST_FIELDS: ClassVar[tuple[str, ...]] = ("best_cost", "best_order")
    #: the encodings' view of the state: one route, one depot (see
    #: :func:`pyg_routing.envs.observation.tour_encoding_inputs`)
    problem: ClassVar[Problem] = Problem.PDTSP
    num_depots: ClassVar[int] = 1

    @property
    def num_nodes(self) -> int:
        return self.pos.size(1)

    @property
    def num_pairs(self) -> int:
        return (self.pos.size(1) - 1) // 2

    @property
    def window(self) -> int:
        return self.ring.size(1)

    @property
    def depot_mask(self) -> Tensor:
        """``[B, M]`` bool, True at the depot (node 0)."""
        m = self.num_nodes
        return (torch.arange(m, device=self.device) == 0).expand(len(self), m)

    def recent(self) -> Tensor:
        """``[B, RECENT]`` long: the last removed pairs, most recent first (``-1``:
        none yet)."""
        w = self.window
        slots = [(self.steps - 1 - k) % w for k in range(RECENT)]
        out = self.ring[:, slots]
        # Slots not written yet (fewer steps than RECENT, or a window below RECENT).
        taken = torch.tensor([k < min(self.steps, w) for k in range(RECENT)],
                             device=self.device)
        return torch.where(taken, out, -1)

    def history(self) -> Tensor:
        """``[B, P, RECENT + 1]`` removal features per pair: one-hots of the last
        ``RECENT`` removals and the removal frequency over the window (count /
        window; zeros count while the window fills, as in N2S)."""
        p = self.num_pairs
        recent = self.recent()
        onehot = recent.unsqueeze(1) == torch.arange(p, device=self.device).view(1, p, 1)
        freq = (self.counts / self.window).unsqueeze(-1)
        return torch.cat([onehot.to(freq.dtype), freq], -1)
