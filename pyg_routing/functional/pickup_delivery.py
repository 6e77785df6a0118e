"""Tensor rules of pickup-and-delivery tours (PDTSP), shared by the environments that
move PDTSP tours and by the policies that score those moves.

Layout (N2S's, and :class:`~pyg_routing.data.PDTSPGenerator`'s): ``M = 2P + 1`` nodes,
node 0 the depot, pickup ``r`` (``1 .. P``) paired with delivery ``r + P``. A tour is
an ``order [B, M]`` starting at the depot; ``rank [B, M]`` is its inverse (the
position of every node). A tour is feasible iff every pickup precedes its delivery.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pyg_routing.errors import InfeasibleSolutionError, InvalidSolutionError


def num_pairs(num_nodes: int) -> int:
    """``P`` of a PDTSP layout of ``M = 2P + 1`` nodes (``ValueError`` otherwise)."""
    if num_nodes < 3 or num_nodes % 2 == 0:
        raise ValueError(f"a PDTSP layout has 2P + 1 nodes (depot + P pairs), got {num_nodes}")
    return (num_nodes - 1) // 2


def random_feasible_orders(batch: int, pairs: int, generator: torch.Generator | None = None,
                           device: torch.device | str = "cpu") -> Tensor:
    """``[B, 2P + 1]`` random feasible tours, uniform over all feasible tours.

    A uniform random sequence of the multiset ``{1, 1, 2, 2, .., P, P}`` (each pair's
    two slots) whose first occurrence of ``r`` becomes pickup ``r`` and second
    delivery ``r + P``: every feasible tour arises from exactly one sequence. No loop
    over nodes. (N2S draws its random tours sequentially, uniform over the current
    candidates at each step; that law favours tours whose pickups come early. This
    one does not depend on the order of drawing.)
    """
    m = 2 * pairs
    slots = (torch.arange(m) % pairs).expand(batch, m)
    keys = torch.rand(batch, m, generator=generator)
    seq = slots.gather(1, keys.argsort(1))                               # pair per slot
    first = torch.full((batch, pairs), m, dtype=torch.long)
    first.scatter_reduce_(1, seq, torch.arange(m).expand(batch, m), "amin")
    is_pickup = first.gather(1, seq) == torch.arange(m)
    node = seq + 1 + torch.where(is_pickup, 0, pairs)
    return torch.cat([torch.zeros(batch, 1, dtype=torch.long), node], 1).to(device)


def reinsertion_mask(rank: Tensor, pickup: Tensor, delivery: Tensor) -> Tensor:
    """``[B, M, M]`` bool: where the removed pair ``(pickup, delivery)`` (``[B]`` each)
    may go back. Entry ``(i, j)`` inserts the pickup right after node ``i`` and the
    delivery right after node ``j`` of the tour without the pair; allowed iff neither
    ``i`` nor ``j`` is the pair itself and ``i`` comes no later than ``j`` (``i == j``:
    the delivery right after the pickup). Positions of the current tour (``rank [B,
    M]``) order the reduced tour too. ``P (2P - 1)`` entries per row are allowed, every
    one a feasible tour, exactly one of them the tour itself.
    """
    b, m = rank.shape
    node = torch.arange(m, device=rank.device)
    free = (node != pickup.unsqueeze(1)) & (node != delivery.unsqueeze(1))       # [B, M]
    return (rank.unsqueeze(2) <= rank.unsqueeze(1)) & free.unsqueeze(2) & free.unsqueeze(1)


def reinsert(order: Tensor, rank: Tensor, pickup: Tensor, delivery: Tensor, first: Tensor,
             second: Tensor) -> Tensor:
    """``[B, M]`` tours after removing ``(pickup, delivery)`` and reinserting the pickup
    after node ``first`` and the delivery after node ``second`` (``[B]`` each; an
    allowed entry of :func:`reinsertion_mask`). Two gathers, no loop.
    """
    b, m = order.shape
    k = torch.arange(m, device=order.device).expand(b, m)
    rp, rd = rank.gather(1, pickup.unsqueeze(1)), rank.gather(1, delivery.unsqueeze(1))
    lo, hi = torch.minimum(rp, rd), torch.maximum(rp, rd)
    # Position in the reduced tour (the pair taken out) of the two anchors.
    ra, rb = rank.gather(1, first.unsqueeze(1)), rank.gather(1, second.unsqueeze(1))
    a = ra - (lo < ra).long() - (hi < ra).long()
    c = rb - (lo < rb).long() - (hi < rb).long()
    # Reduced tour position q sits at position q + [q >= lo] + [q >= hi - 1] of ``order``;
    # output position t reads reduced position t - [t > a + 1] - [t > c + 2].
    q = k - (k > a + 1).long() - (k > c + 2).long()
    src = q + (q >= lo).long() + (q >= hi - 1).long()
    out = order.gather(1, src.clamp(max=m - 1))
    out = torch.where(k == a + 1, pickup.unsqueeze(1), out)
    return torch.where(k == c + 2, delivery.unsqueeze(1), out)


def check_tours(order: Tensor, pairs: int, what: str = "initial solution",
                node_ids: Tensor | None = None) -> None:
    """Refuse tours ``[B, 2P + 1]`` (standard layout) that are not PDTSP tours from the
    depot, naming the first offending instance and node or pair; ``node_ids [M]``
    gives the ids to name nodes by (default: the layout's own).

    Raises:
        InvalidSolutionError: wrong shape, not starting at the depot, not a
            permutation of all nodes.
        InfeasibleSolutionError: a delivery before its pickup.
    """
    m = 2 * pairs + 1
    name = (lambda v: v) if node_ids is None else (lambda v: int(node_ids[v]))
    if order.dim() != 2 or order.size(1) != m or order.dtype != torch.long:
        raise InvalidSolutionError(f"{what}: expected long tours [B, {m}] (depot first), got "
                                   f"{order.dtype} {tuple(order.shape)}")
    bad = order[:, 0] != 0
    if bool(bad.any()):
        raise InvalidSolutionError(f"{what}: instance {int(bad.nonzero()[0])} does not "
                                   f"start at the depot 0")
    out = (order < 0) | (order >= m)
    if bool(out.any()):
        b, t = (int(v) for v in out.nonzero()[0])
        raise InvalidSolutionError(f"{what}: instance {b}: node id {int(order[b, t])} out of "
                                   f"range 0..{m - 1}")
    seen = torch.zeros(order.size(0), m, dtype=torch.long, device=order.device)
    seen.scatter_add_(1, order, torch.ones_like(order))
    if bool((seen != 1).any()):
        b, v = (int(x) for x in (seen != 1).nonzero()[0])
        kind = "missing" if seen[b, v] == 0 else "visited more than once"
        raise InvalidSolutionError(f"{what}: instance {b}: node {name(v)} {kind}")
    rank = torch.empty_like(order).scatter_(
        1, order, torch.arange(m, device=order.device).expand_as(order))
    late = rank[:, 1:pairs + 1] > rank[:, pairs + 1:]
    if bool(late.any()):
        b, r = (int(x) for x in late.nonzero()[0])
        raise InfeasibleSolutionError(f"{what}: instance {b}: delivery {name(r + 1 + pairs)} "
                                      f"comes before its pickup {name(r + 1)}")


def reinsertion_candidates(order: Tensor, rank: Tensor, pickup: Tensor, delivery: Tensor
                           ) -> tuple[Tensor, Tensor]:
    """The allowed entries of :func:`reinsertion_mask` as a list: ``(first, second)``,
    each ``[B, K]`` with ``K = P (2P - 1)`` (the same for every instance), enumerating
    the anchor positions ``a <= c`` of the tour without the pair in row-major order
    (:func:`candidate_index` inverts it). A policy scores these ``K`` entries only,
    not all ``M^2``."""
    b, m = order.shape
    n = m - 2
    q = torch.arange(n, device=order.device).expand(b, n)
    rp, rd = rank.gather(1, pickup.unsqueeze(1)), rank.gather(1, delivery.unsqueeze(1))
    lo, hi = torch.minimum(rp, rd), torch.maximum(rp, rd)
    reduced = order.gather(1, q + (q >= lo).long() + (q >= hi - 1).long())      # [B, M-2]
    a, c = torch.triu_indices(n, n, device=order.device)
    return reduced[:, a], reduced[:, c]


def candidate_index(rank: Tensor, pickup: Tensor, delivery: Tensor, first: Tensor,
                    second: Tensor) -> Tensor:
    """``[B]`` index into :func:`reinsertion_candidates` of the entry ``(first,
    second)`` (allowed entries only)."""
    n = rank.size(1) - 2
    rp, rd = rank.gather(1, pickup.unsqueeze(1)), rank.gather(1, delivery.unsqueeze(1))
    reduced = []
    for node in (first, second):
        r = rank.gather(1, node.unsqueeze(1))
        reduced.append((r - (rp < r).long() - (rd < r).long()).squeeze(1))
    a, c = reduced
    return a * n - a * (a - 1) // 2 + (c - a)
