"""The DACT-style 2-opt environment (TSP, CVRP, VRPTW): :class:`TwoOptEnv` and the
batched functions behind it."""

from pyg_routing.envs.tours import cycle_cost, rank_from_order, succ_from_order
from pyg_routing.envs.two_opt.env import TwoOptEnv
from pyg_routing.envs.two_opt.features import arc_lengths, node_features
from pyg_routing.envs.two_opt.moves import (
    INITS,
    TW_MAX_NODES,
    action_mask,
    apply_two_opt,
    positional_encoding,
    random_action,
    reset,
    route_loads,
    route_quantities,
    step,
    to_routes,
)
from pyg_routing.envs.two_opt.observation import observe
from pyg_routing.envs.two_opt.state import TwoOptState, time_window_feasible

__all__ = ["INITS", "TW_MAX_NODES", "TwoOptEnv", "TwoOptState", "action_mask", "apply_two_opt",
           "arc_lengths",
           "cycle_cost", "node_features", "observe", "positional_encoding",
           "random_action", "rank_from_order", "reset", "route_loads", "route_quantities",
           "step", "succ_from_order", "time_window_feasible", "to_routes"]
