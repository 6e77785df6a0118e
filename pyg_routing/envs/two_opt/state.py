"""Dense, batched state of the DACT-style 2-opt environment (see :mod:`.moves`).

Node layout (``M = K + N - 1`` nodes per instance):

* ``0 .. K-1``: depot copies ("dummy depots", DACT), all at the depot position;
  each one opens one route, possibly empty (``depot -> depot``). TSP: ``K = 1``.
* ``K .. M-1``: the customers; state node ``m`` is original node ``m - K + 1``.

The solution is ONE giant cycle through all ``M`` nodes, stored twice:

* ``order [B, M]``: the cycle as a sequence, always starting with depot copy 0
  (a 2-opt move never needs to move position 0, see :func:`.moves.apply_two_opt`);
* ``succ [B, M]`` / ``rank [B, M]``: successor and position of every node, derived
  from ``order`` by one scatter each.

Keeping ``order`` makes a 2-opt move one gather (a segment reversal by index
arithmetic) and the per-step route quantities segment cumsums, with no pointer
jumping and no Python loop over instances or nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from pyg_routing.data.feasibility import time_tolerance
from pyg_routing.data.problems import Problem
from pyg_routing.envs.base import BatchedState
from pyg_routing.envs.tours import succ_from_order


@dataclass
class TwoOptState(BatchedState):
    """Batch of ``B`` solutions on ``M = K + N - 1`` nodes (see the module docstring).

    Attributes:
        problem: the routing problem (TSP, CVRP, VRPTW or PDTSP).
        num_depots: ``K``, the number of depot copies (same for the whole batch).
        pos: ``[B, M, 2]`` coordinates (depot copies at the depot).
        demand: ``[B, M]`` float demands, 0 at the depot copies (zeros for TSP).
        capacity: ``[B]`` float capacity (``inf`` for TSP).
        order: ``[B, M]`` long, the giant cycle, ``order[:, 0] == 0``.
        succ: ``[B, M]`` long, ``succ[b, order[b, t]] = order[b, t + 1 mod M]``.
        rank: ``[B, M]`` long, position of every node in ``order``.
        cost: ``[B]`` total length of the current solution.
        best_cost: ``[B]`` best cost seen so far.
        best_order: ``[B, M]`` the cycle of the best solution.
        last_action: ``[B, 2]`` long, the move that would undo the last step
            (``-1`` before the first step); masked in :func:`.moves.action_mask`.
        steps: number of steps taken.
        time_window: ``[B, M, 2]`` (VRPTW; depot copies carry the depot's window).
        service_time: ``[B, M]`` (VRPTW; 0 at the depot copies).
        pairs: ``[B, 2, P]`` long node ids of the requests' pickups (row 0) and
            deliveries (row 1) (PDTSP; ``K = 1``, so state ids are instance ids).
        costs: ``[B, M, M]`` travel costs of the state's nodes (instances with an
            explicit matrix or open routes; depot copies share the depot's row and
            column); ``None``: Euclidean distances of ``pos``.
        open_routes: ``[B]`` bool (VRPTW with open routes: the depot's closing time
            does not bind the return); ``None``: closed.
        asymmetric: ``[B]`` bool, whether each matrix differs from its transpose
            (IPE's ``direction="auto"``), found once at reset; ``None`` without costs.
        copy_depot: ``[B, K]`` long, the depot (``0 .. D-1``) of each copy on a
            multi-depot instance (:mod:`.depots`: copies at their depot's coordinates,
            ``costs`` set); ``None``: one depot.
        instance_depots: ``D``, the instances' depots (state node ``m >= K`` is
            original node ``m - K + D``).
    """

    problem: Problem
    num_depots: int
    pos: Tensor
    demand: Tensor
    capacity: Tensor
    order: Tensor
    succ: Tensor
    rank: Tensor
    cost: Tensor
    best_cost: Tensor
    best_order: Tensor
    last_action: Tensor
    steps: int = 0
    time_window: Tensor | None = None
    service_time: Tensor | None = None
    pairs: Tensor | None = None
    costs: Tensor | None = None
    open_routes: Tensor | None = None
    asymmetric: Tensor | None = None
    copy_depot: Tensor | None = None
    instance_depots: int = 1

    BEST_FIELDS: ClassVar[tuple[str, ...]] = ("best_cost", "best_order")

    @property
    def num_nodes(self) -> int:
        """``M``: depot copies plus customers."""
        return self.pos.size(1)

    @property
    def depot_mask(self) -> Tensor:
        """``[B, M]`` bool, True at the depot copies."""
        m = self.num_nodes
        return (torch.arange(m, device=self.device) < self.num_depots).expand(len(self), m)

    @property
    def best_succ(self) -> Tensor:
        """``[B, M]`` successor array of the best solution."""
        return succ_from_order(self.best_order)


def time_window_feasible(pos: Tensor, time_window: Tensor, service_time: Tensor,
                         orders: Tensor, num_depots: int, costs: Tensor | None = None,
                         open_routes: Tensor | None = None) -> Tensor:
    """Whether the cycles ``orders [B, S, M]`` (``S`` candidates per instance, each
    starting at depot copy 0) respect the time windows: ``[B, S]`` bool.

    Service starts at ``S_v = max(e_v, S_p + s_p + tau(p, v))`` (waiting allowed);
    a depot copy resets the clock to the depot's opening (its map is constant).
    The maps ``t -> max(t + c, a)`` compose associatively, so the recurrence is an
    inclusive Hillis-Steele scan: ``O(log M)`` tensor rounds, no loop over nodes.
    Feasible iff every arrival (into customers and back into depot copies,
    including the closing arc) is at most the window's end, with the tolerance of
    :meth:`RoutingData.check`.

    Args:
        pos: ``[B, M, 2]``; time_window: ``[B, M, 2]``; service_time: ``[B, M]``.
        costs: ``[B, M, M]`` travel times (``None``: Euclidean of ``pos``).
        open_routes: ``[B]`` bool: no deadline on the arrivals back at the depot.
    """
    b, s, m = orders.shape
    closed = torch.cat([orders, orders[..., :1]], -1).reshape(b, s * (m + 1))
    tw = torch.gather(time_window.double(), 1, closed.unsqueeze(-1).expand(-1, -1, 2))
    tw = tw.view(b, s, m + 1, 2)
    st = torch.gather(service_time.double(), 1, closed).view(b, s, m + 1)
    if costs is None:
        xy = torch.gather(pos, 1, closed.unsqueeze(-1).expand(-1, -1, 2))
        step = xy.view(b, s, m + 1, 2)[:, :, 1:] - xy.view(b, s, m + 1, 2)[:, :, :-1]
        tau = torch.hypot(step[..., 0], step[..., 1]).double()         # arc into t + 1
    else:
        seq = closed.view(b, s, m + 1)
        entry = (seq[..., :-1] * m + seq[..., 1:]).reshape(b, s * m)
        tau = costs.reshape(b, m * m).gather(1, entry).view(b, s, m).double()
    is_dep = (closed < num_depots).view(b, s, m + 1)
    # Map of position t: t -> max(x + c, a); depot copies: constant e_0.
    c = torch.cat([torch.full_like(tau[..., :1], -math.inf), st[..., :-1] + tau], -1)
    c = torch.where(is_dep, -math.inf, c)
    a = tw[..., 0]
    shift = 1
    while shift < m + 1:
        a_prev = torch.nn.functional.pad(a[..., :-shift], (shift, 0), value=-math.inf)
        c_prev = torch.nn.functional.pad(c[..., :-shift], (shift, 0), value=0.0)
        a, c = torch.maximum(a, a_prev + c), c_prev + c
        shift *= 2
    arrival = a[..., :-1] + st[..., :-1] + tau                          # into t + 1
    tol = time_tolerance(time_window.abs().amax(dim=(1, 2))).view(b, 1, 1)
    due = tw[..., 1:, 1] + tol
    if open_routes is not None:                     # open routes: no return deadline
        due = torch.where(is_dep[..., 1:] & open_routes.view(b, 1, 1), math.inf, due)
    return (arrival <= due).all(-1)
