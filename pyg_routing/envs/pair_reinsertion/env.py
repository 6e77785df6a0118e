"""``PairReinsertionEnv``: N2S's removal-reinsertion moves on PDTSP tours.

A move (Ma et al., "Efficient Neural Neighborhood Search for Pickup and Delivery
Problems", IJCAI 2022) takes one pickup-delivery pair out of the tour and puts it
back: the pickup right after node ``first``, the delivery right after node
``second`` of the tour without the pair, ``first`` no later than ``second``. An action
is ``[B, 3]`` long: ``(pair, first, second)``, ``pair`` in ``0 .. P-1`` (pickup
``pair + 1``, delivery ``pair + 1 + P``). Every step is a fixed number of ``[B, M]``
gathers and scatters (the reinsertion mask ``[B, M, M]``): no loop over nodes or
instances.

Masks: :meth:`action_mask` is the REMOVAL mask ``[B, P]`` (N2S's tabu: not the pair
removed at the last step); the reinsertion mask of a chosen pair is
:func:`pyg_routing.functional.pickup_delivery.reinsertion_mask` (the policy applies
the same function to the observation's positions). Reinserting a pair where it was
is allowed (one null move per pair), as in N2S.

Reward: the improvement of the best-so-far cost. Costs are recomputed in full
every step (float64 sums), so they never drift.

History window: the removal-frequency feature counts removals over the last
``window`` steps; default ``window = 2P`` (the number of customers) in training AND
search. N2S uses ``2P`` in training and ``P`` at inference; its frequency then has a
different scale at test time than the policy learnt, so we keep one window.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor

from pyg_routing.data.costs import asymmetric_rows
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.envs.base import ImprovementEnv, Observation
from pyg_routing.envs.pair_reinsertion.observation import observe
from pyg_routing.envs.pair_reinsertion.state import PairReinsertionState
from pyg_routing.envs.tours import cycle_cost, rank_from_order, succ_from_order
from pyg_routing.errors import InvalidInstanceError, InvalidSolutionError
from pyg_routing.functional.pickup_delivery import (
    check_tours,
    random_feasible_orders,
    reinsert,
    reinsertion_mask,
)

INITS = ("random", "nearest_neighbor")


class PairReinsertionEnv(ImprovementEnv):
    """Remove one pickup-delivery pair and reinsert it (N2S), for PDTSP.

    Args:
        window: removal-history window (``None``: ``2P``, see the module docstring).
    """

    name: ClassVar[str] = "pair_reinsertion"
    #: N2S reads the coordinates only (a node's role is its index)
    feature_widths: ClassVar[dict[Problem, int]] = {Problem.PDTSP: 2}
    problems: ClassVar[tuple[Problem, ...]] = tuple(feature_widths)
    inits: ClassVar[tuple[str, ...]] = INITS
    variants: ClassVar[tuple[str, ...]] = ("euclidean", "explicit")

    def __init__(self, window: int | None = None) -> None:
        if window is not None and (isinstance(window, bool) or not isinstance(window, int)
                                   or window < 1):
            raise ValueError(f"window must be an integer >= 1, got {window!r}")
        self.window = window

    # ------------------------------------------------------------------ start
    def start(self, instances: RoutingInstances, init: str | Tensor | Any = "random",
              generator: torch.Generator | None = None) -> PairReinsertionState:
        """Initial tours of ``B`` PDTSP instances.

        Args:
            instances: PDTSP instances, every customer in exactly one pair.
            init: ``"random"`` (uniform over the feasible tours,
                :func:`~pyg_routing.functional.pickup_delivery.random_feasible_orders`;
                N2S starts from random tours too), ``"nearest_neighbor"``, or given
                tours: ``[B, M]`` integer node ids from the depot (a closing depot
                ``[B, M + 1]`` is accepted), in the instances' own ids, as a tensor, a
                numpy array, or a list of rows (lists, numpy arrays or tensors).
            generator: RNG of ``init="random"`` (a ``torch.Generator`` or ``None``).

        Raises:
            TypeError: ``instances`` not a ``RoutingInstances`` batch; ``init`` neither
                a name nor tours; ``generator`` not a ``torch.Generator``.
            InvalidInstanceError: not PDTSP, or customers outside the pairs.
            InvalidSolutionError, InfeasibleSolutionError: given tours that are not
                integer tours of all nodes from the depot (floats and bools are refused,
                not rounded; ragged rows too), or with a delivery before its pickup
                (naming the instance and the pair).
            ValueError: an unknown ``init`` name.
        """
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"PairReinsertionEnv.reset: `generator` must be a "
                            f"torch.Generator or None, got {generator!r}")
        if isinstance(init, np.ndarray | list | tuple):
            init = _tours_tensor(init)
        self.check_problem(instances.problem)
        b, m = instances.pos.shape[:2]
        dev = instances.device
        pairs = instances.pickup_delivery_index
        p = pairs.size(1)
        if m != 2 * p + 1:
            raise InvalidInstanceError(
                f"PDTSP needs every customer in exactly one pickup-delivery pair: "
                f"{m - 1} customers but {p} pairs (an odd customer count cannot be paired)")
        perm = torch.cat([torch.zeros(1, dtype=torch.long, device=dev), pairs[0], pairs[1]])
        inverse = torch.empty_like(perm).scatter_(0, perm, torch.arange(m, device=dev))
        if isinstance(init, Tensor):
            order = self._given_tours(init, b, m, inverse)
            check_tours(order, p, node_ids=perm)
        elif init == "random":
            order = random_feasible_orders(b, p, generator, dev)
        elif init == "nearest_neighbor":
            from pyg_routing.data.solvers.constructive import nearest_neighbor

            order = inverse[nearest_neighbor(instances)[:, :-1]]
        elif isinstance(init, str):
            raise ValueError(f"unknown init {init!r}; choose from {INITS} or pass tours "
                             f"[B, M] (long node ids from the depot)")
        else:
            raise TypeError(f"init must be one of {INITS} or tours [B, M] (integer node "
                            f"ids from the depot: a tensor, a numpy array or a list of "
                            f"rows), got {type(init).__name__}")
        pos = instances.pos[:, perm]
        costs = instances.travel.matrix_or_none()
        if costs is not None:
            costs = costs.index_select(1, perm).index_select(2, perm)
        cost = cycle_cost(pos, order, costs)
        window = 2 * p if self.window is None else self.window
        return PairReinsertionState(
            pos=pos, node_ids=perm.expand(b, m).clone(), order=order,
            rank=rank_from_order(order), succ=succ_from_order(order), cost=cost,
            best_cost=cost.clone(), best_order=order.clone(),
            last_pair=torch.full((b,), -1, dtype=torch.long, device=dev),
            ring=torch.full((b, window), -1, dtype=torch.long, device=dev),
            counts=pos.new_zeros(b, p), costs=costs,
            asymmetric=None if costs is None else asymmetric_rows(costs))

    @staticmethod
    def _given_tours(init: Tensor, b: int, m: int, inverse: Tensor) -> Tensor:
        """Given tours in instance ids -> state ids, refused by shape or id range."""
        if init.dim() != 2 or init.size(0) != b or init.size(1) not in (m, m + 1) \
                or init.is_floating_point() or init.dtype == torch.bool:
            raise InvalidSolutionError(
                f"initial solution: expected integer tours [{b}, {m}] from the depot (or "
                f"[{b}, {m + 1}] closing at it), got {init.dtype} {tuple(init.shape)}")
        tours = init.to(inverse.device).long()
        if tours.size(1) == m + 1:
            if bool((tours[:, -1] != 0).any()):
                bad = int((tours[:, -1] != 0).nonzero()[0])
                raise InvalidSolutionError(f"initial solution: instance {bad}: a tour of "
                                           f"{m + 1} ids must close at the depot 0")
            tours = tours[:, :-1]
        out = (tours < 0) | (tours >= m)
        if bool(out.any()):
            i, t = (int(v) for v in out.nonzero()[0])
            raise InvalidSolutionError(f"initial solution: instance {i}: node id "
                                       f"{int(tours[i, t])} out of range 0..{m - 1}")
        return inverse[tours]

    # ------------------------------------------------------------------ moves
    def step(self, state: PairReinsertionState, action: Tensor
             ) -> tuple[PairReinsertionState, Tensor]:
        """Apply ``action [B, 3] = (pair, first, second)`` (an allowed move: see the
        module docstring; not checked). Returns the new state and the reward ``[B] =
        max(best_cost - new_cost, 0)``."""
        pair, first, second = action.unbind(1)
        p = state.num_pairs
        pickup = pair + 1
        order = reinsert(state.order, state.rank, pickup, pickup + p, first, second)
        cost = cycle_cost(state.pos, order, state.costs)
        reward = (state.best_cost - cost).clamp(min=0)
        better = cost < state.best_cost
        # Ring buffer of the removals: the pair leaving the window is uncounted.
        slot = state.steps % state.window
        leaving = state.ring[:, slot]
        counts = state.counts.clone()
        counts.scatter_add_(1, leaving.clamp(min=0).unsqueeze(1),
                            -(leaving >= 0).to(counts.dtype).unsqueeze(1))
        counts.scatter_add_(1, pair.unsqueeze(1), counts.new_ones(len(state), 1))
        ring = state.ring.clone()
        ring[:, slot] = pair
        new = PairReinsertionState(
            pos=state.pos, node_ids=state.node_ids, order=order, rank=rank_from_order(order),
            succ=succ_from_order(order), cost=cost,
            best_cost=torch.where(better, cost, state.best_cost),
            best_order=torch.where(better.unsqueeze(1), order, state.best_order),
            last_pair=pair.clone(), ring=ring, counts=counts, steps=state.steps + 1,
            costs=state.costs, asymmetric=state.asymmetric)
        return new, reward

    def action_mask(self, state: PairReinsertionState) -> Tensor:
        """``[B, P]`` bool removal mask: every pair but the last one removed."""
        pairs = torch.arange(state.num_pairs, device=state.device)
        return pairs.unsqueeze(0) != state.last_pair.unsqueeze(1)

    def reinsertion_mask(self, state: PairReinsertionState, pair: Tensor) -> Tensor:
        """``[B, M, M]`` where pair ``pair [B]`` may go back (see the module docstring)."""
        pickup = pair + 1
        return reinsertion_mask(state.rank, pickup, pickup + state.num_pairs)

    def random_action(self, state: PairReinsertionState, mask: Tensor | None = None,
                      generator: torch.Generator | None = None) -> Tensor:
        """``[B, 3]`` a uniformly random allowed pair, then a uniformly random place
        for it (a single pair, the tabu notwithstanding, is removed anyway)."""
        mask = self.action_mask(state) if mask is None else mask
        b, m = len(state), state.num_nodes
        noise = torch.rand(b, mask.size(1) + m * m, generator=generator).to(state.device)
        pair = torch.where(mask, noise[:, :mask.size(1)], -1.0).argmax(1)
        place = self.reinsertion_mask(state, pair).view(b, m * m)
        flat = torch.where(place, noise[:, mask.size(1):], -1.0).argmax(1)
        return torch.stack([pair, flat // m, flat % m], 1)

    # ------------------------------------------------------------------ views
    def observe(self, state: PairReinsertionState, mask: Tensor | None = None,
                dtype: torch.dtype | None = None) -> Observation:
        return observe(state, self.action_mask(state) if mask is None else mask, dtype)

    def to_routes(self, state: PairReinsertionState, best: bool = True
                  ) -> list[list[list[int]]]:
        """One route per instance in the instances' own node ids (depot omitted)."""
        order = state.best_order if best else state.order
        return [[row[1:]] for row in state.node_ids.gather(1, order).tolist()]

    def rebuild_solution(self, state: PairReinsertionState) -> PairReinsertionState:
        """Successors and positions of the (replaced) ``order``; no tabu pair."""
        return replace(state, succ=succ_from_order(state.order),
                       rank=rank_from_order(state.order),
                       last_pair=torch.full_like(state.last_pair, -1))

    def solution_cost(self, state: PairReinsertionState, pos: Tensor, best: bool) -> Tensor:
        # Explicit costs do not move with augmented coordinates: they are the matrix's.
        return cycle_cost(pos, state.best_order if best else state.order, state.costs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({'' if self.window is None else self.window})"


def _tours_tensor(init: np.ndarray | list | tuple) -> Tensor:
    """Given tours as a numpy array or a list of rows, as a tensor of the SAME dtype
    (so that :meth:`PairReinsertionEnv._given_tours` refuses floats and bools by type,
    never rounding them); never the caller's memory once converted to long."""
    try:
        arr = np.asarray(init if isinstance(init, np.ndarray) else
                         [np.asarray(row) for row in init])
    except (ValueError, TypeError):
        lengths = sorted({len(row) for row in init if hasattr(row, "__len__")})
        raise InvalidSolutionError(f"initial solution: the tours must be rows of equal "
                                   f"length [B, M], got rows of lengths {lengths}") from None
    if arr.dtype.kind not in ("i", "u", "b", "f"):
        raise InvalidSolutionError(f"initial solution: expected integer node ids in rows "
                                   f"of equal length, got {arr.dtype} values")
    if arr.dtype.kind == "u" and arr.dtype != np.uint8:
        arr = arr.astype(np.int64)           # torch has no general unsigned types
    return torch.from_numpy(np.ascontiguousarray(arr))
