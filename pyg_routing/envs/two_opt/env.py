"""``TwoOptEnv``: the DACT-style 2-opt environment behind the environment seam."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import ClassVar

import torch
from torch import Tensor

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.envs.base import ImprovementEnv, Observation
from pyg_routing.envs.tours import cycle_cost, rank_from_order, succ_from_order
from pyg_routing.envs.two_opt import moves
from pyg_routing.envs.two_opt.depots import route_depots
from pyg_routing.envs.two_opt.features import FEATURE_WIDTHS
from pyg_routing.envs.two_opt.observation import observe
from pyg_routing.envs.two_opt.state import TwoOptState


class TwoOptEnv(ImprovementEnv):
    """2-opt moves on one giant cycle with depot copies (DACT; see
    :mod:`pyg_routing.envs.two_opt.moves`) for TSP, CVRP, VRPTW and PDTSP (segment
    reversals that keep every pickup before its delivery,
    :mod:`pyg_routing.envs.two_opt.precedence`).

    Actions are ``[B, 2]`` node pairs ``(i, j)``; the mask is ``[B, M, M]``.

    Args:
        num_depots: ``K`` depot copies (default: enough for the initial routes
            plus ``extra_depots`` above the capacity bound).
        extra_depots: spare route slots (CVRP, VRPTW).
        depot_rate: DACT's ``dummy_rate``: ``K = ⌈N (1 + rate)⌉ − N`` copies for ``N``
            customers (CVRP, VRPTW; DACT used 0.5 at 20 customers, 0.4 at 50, 0.2 at 100),
            instead of the default; ``None``: the default.
    """

    name: ClassVar[str] = "two_opt"
    #: TSP ``x, y``; CVRP VRP-DACT's seven (``x, y``, the arc lengths to the predecessor
    #: and the successor, the loads before, at and after the node); VRPTW adds ``e, l,
    #: s``; PDTSP: ``x, y, role, load, partner x, partner y, is_depot`` and the two arc
    #: lengths (:func:`.features.node_features`)
    feature_widths: ClassVar[dict[Problem, int]] = dict(FEATURE_WIDTHS)
    problems: ClassVar[tuple[Problem, ...]] = tuple(feature_widths)
    inits: ClassVar[tuple[str, ...]] = moves.INITS
    #: several depots: copies at their depots, moves that keep every route home (.depots)
    variants: ClassVar[tuple[str, ...]] = ("euclidean", "explicit", "open", "multi_depot")

    def __init__(self, num_depots: int | None = None, extra_depots: int = 2,
                 depot_rate: float | None = None) -> None:
        if num_depots is not None and depot_rate is not None:
            raise ValueError("give num_depots or depot_rate, not both")
        if depot_rate is not None and not depot_rate > 0:
            raise ValueError(f"depot_rate must be > 0, got {depot_rate!r}")
        self.num_depots = num_depots
        self.extra_depots = extra_depots
        self.depot_rate = depot_rate

    def start(self, instances: RoutingInstances, init: str = "sweep",
              generator: torch.Generator | None = None) -> TwoOptState:
        num_depots = self.num_depots
        rate = self.depot_rate is not None and not instances.problem.single_route
        if rate:
            n = instances.pos.shape[1] - instances.num_depots
            num_depots = math.ceil(n * (1 + self.depot_rate)) - n      # DACT's formula
        return moves.reset(instances, init=init, num_depots=num_depots,
                           extra_depots=self.extra_depots, generator=generator,
                           at_least=rate)

    def step(self, state: TwoOptState, action: Tensor) -> tuple[TwoOptState, Tensor]:
        return moves.step(state, action)

    def action_mask(self, state: TwoOptState) -> Tensor:
        return moves.action_mask(state)

    def random_action(self, state: TwoOptState, mask: Tensor | None = None,
                      generator: torch.Generator | None = None) -> Tensor:
        return moves.random_action(state, mask, generator)

    def observe(self, state: TwoOptState, mask: Tensor | None = None,
                dtype: torch.dtype | None = None) -> Observation:
        return observe(state, mask, dtype)

    def to_routes(self, state: TwoOptState, best: bool = True) -> list[list[list[int]]]:
        return moves.to_routes(state, best)

    def route_depots(self, state: TwoOptState, best: bool = True) -> list[list[int]] | None:
        if state.copy_depot is None:
            return None
        return route_depots(state.best_order if best else state.order, state.copy_depot)

    def rebuild_solution(self, state: TwoOptState) -> TwoOptState:
        """Successors and positions of the (replaced) ``order``; no undo to forbid."""
        return replace(state, succ=succ_from_order(state.order),
                       rank=rank_from_order(state.order),
                       last_action=torch.full_like(state.last_action, -1))

    def solution_cost(self, state: TwoOptState, pos: Tensor, best: bool) -> Tensor:
        # Explicit costs do not move with augmented coordinates: they are the matrix's.
        return cycle_cost(pos, state.best_order if best else state.order, state.costs)

    def __repr__(self) -> str:
        args = [] if self.num_depots is None else [f"num_depots={self.num_depots}"]
        args += [] if self.depot_rate is None else [f"depot_rate={self.depot_rate}"]
        if self.extra_depots != 2:
            args.append(f"extra_depots={self.extra_depots}")
        return f"{type(self).__name__}({', '.join(args)})"
