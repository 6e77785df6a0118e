"""Improvement environments (DACT-style 2-opt) with batched per-step encodings."""

from pyg_routing.envs.observation import Observation, node_code, observe
from pyg_routing.envs.rollout import (
    SYMMETRIES,
    ImproveResult,
    augment_positions,
    augment_state,
    improve,
)
from pyg_routing.envs.state import (
    TwoOptState,
    cycle_cost,
    rank_from_order,
    succ_from_order,
    time_window_feasible,
)
from pyg_routing.envs.two_opt import (
    TW_MAX_NODES,
    action_mask,
    apply_two_opt,
    node_features,
    positional_encoding,
    random_action,
    reset,
    route_loads,
    route_quantities,
    step,
    to_routes,
)

__all__ = ["SYMMETRIES", "TW_MAX_NODES", "ImproveResult", "Observation", "TwoOptState",
           "action_mask", "apply_two_opt", "augment_positions", "augment_state", "cycle_cost",
           "improve", "node_code", "node_features", "observe", "positional_encoding",
           "random_action", "rank_from_order", "reset", "route_loads", "route_quantities",
           "step", "succ_from_order", "time_window_feasible", "to_routes"]
