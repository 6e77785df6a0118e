"""The travel-cost options of the commands that generate instances (``generate``,
``solve``, ``probe``, ``search``, ``evaluate``): one declaration, one reading.

``train`` and ``compare`` take the same flags as configuration fields
(:class:`~pyg_routing.training.config.TrainConfig`), so a trained model records them.
"""

from __future__ import annotations

import argparse
from typing import Any

from pyg_routing.data.cost_models import COST_MODELS
from pyg_routing.training.fit import count

#: the destinations of :func:`add_cost_options` (for "does not apply" refusals)
COST_OPTIONS = ("costs", "grid", "one_way", "open_routes")


def add_cost_options(p: argparse.ArgumentParser) -> None:
    """``--costs``, ``--grid``, ``--one-way`` and ``--open-routes``."""
    p.add_argument("--costs", choices=COST_MODELS, default="euclidean",
                   help="travel costs of the generated instances: euclidean (the paper's) or "
                        "streets (an asymmetric matrix: a city grid with one-way streets)")
    p.add_argument("--grid", type=count(3), default=None,
                   help="--costs streets: intersections per side (default 10)")
    p.add_argument("--one-way", type=float, default=None,
                   help="--costs streets: share of one-way inner streets (default 1)")
    p.add_argument("--open-routes", action="store_true",
                   help="cvrp, vrptw: open routes (vehicles end at their last customer)")


def cost_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The ``make_generator`` options the user gave among :func:`add_cost_options`'s
    (only those: the generator refuses what it lacks, by name)."""
    out: dict[str, Any] = {}
    if getattr(args, "costs", "euclidean") != "euclidean":
        out["costs"] = args.costs
    for key in ("grid", "one_way"):
        if getattr(args, key, None) is not None:
            out[key] = getattr(args, key)
    if getattr(args, "open_routes", False):
        out["open_routes"] = True
    return out
