"""Search your own instance file from Python: any file the readers know (CVRPLib/VRPLIB
with Euclidean or EXPLICIT weights, TSPLIB ATSP, Solomon, Li & Lim), with NDS's
destroy-and-repair search and SISR removals (or a trained NDS policy).

    python examples/search_my_instance.py my-asym.vrp --iterations 200

The search runs in the unit square (its costs, ``result.cost``, are the file's divided by
``mine.scale``); ``mine.cost(routes)`` is the cost in the file's own units, checked: for an
EXPLICIT file, the sum of its matrix over the routes.
"""

from __future__ import annotations

import argparse

from pyg_routing.data import load_search_instance
from pyg_routing.envs.deconstruction import SISRDestroy
from pyg_routing.search import DestroyRepairSearch, MaxIterations, gap_percent


def main(path: str, iterations: int = 100, seed: int = 0) -> dict:
    mine = load_search_instance(path)              # the batch a search takes, and more
    search = DestroyRepairSearch(augment=4, rollouts=50)
    result = search.run(mine.instances, SISRDestroy(c_bar=10), MaxIterations(iterations),
                        seed=seed)
    routes = result.routes[0]
    cost = mine.cost(routes)                       # in the file's units, checked
    out = {"instance": mine.name, "routes": routes, "cost": cost,
           "search_cost": float(result.cost[0]), "scale": mine.scale, "bks": mine.bks,
           "gap_percent": None if mine.bks is None else gap_percent(cost, mine.bks)}
    print(f"{mine.name}: cost {cost:g} in the file's units ({len(routes)} routes)"
          + ("" if mine.bks is None else f", {out['gap_percent']:+.2f} % to the best known "
                                         f"{mine.bks:g} ({mine.bks_source})"))
    return out


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path", help="an instance file, or a bare benchmark name (X-n101-k25)")
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    main(a.path, a.iterations, a.seed)
