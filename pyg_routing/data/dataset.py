"""``RoutingDataset``: generated instances with cached reference solutions."""

from __future__ import annotations

import hashlib
import json
import os.path as osp
import time
from collections.abc import Callable
from typing import Any

from torch_geometric.data import Batch, InMemoryDataset

from pyg_routing.data.generators import make_generator
from pyg_routing.data.problems import Problem
from pyg_routing.data.routing_data import RoutingData

#: Bump when the generated data or its storage format changes, so old caches
#: are never silently reused.
FORMAT_VERSION = 1


class RoutingDataset(InMemoryDataset):
    r"""Seeded generated instances of one problem, optionally with reference
    solutions, cached on disk under ``root/processed``.

    The cache file name is a hash of *every* parameter that affects the data
    (problem, size, count, seed, layout, generator options, solver, time limit,
    solver seed, library format version), so changing any of them builds a new
    file instead of silently reusing an old one. A JSON file with the same stem
    records the parameters and a summary (mean cost, feasibility, wall time).

    Args:
        root: dataset folder.
        problem: ``tsp``, ``cvrp``, ``vrptw``, ``pcvrp`` or ``pdtsp``.
        num_customers: customers per instance (TSP: cities).
        num_instances: number of instances.
        seed: generator seed.
        solver: ``None`` (instances only), ``"pyvrp"``, ``"ortools"``, ``"auto"``
            or a constructive heuristic (``"nearest_neighbor"``, ...).
        time_limit: seconds per instance for the reference solver.
        distribution: ``"uniform"`` or ``"clustered"``.
        generator_kwargs: extra generator options (e.g. ``capacity``, ``kappa``).
        num_workers: solver processes (default: all cores).
        solver_seed: seed passed to the solver.
        progress: show a progress bar while solving.
    """

    def __init__(self, root: str, problem: str | Problem, num_customers: int,
                 num_instances: int, seed: int = 0, solver: str | None = None,
                 time_limit: float = 1.0, distribution: str = "uniform",
                 generator_kwargs: dict[str, Any] | None = None,
                 num_workers: int | None = None, solver_seed: int = 0,
                 progress: bool = True, transform: Callable | None = None,
                 pre_transform: Callable | None = None, force_reload: bool = False) -> None:
        self.params: dict[str, Any] = {
            "problem": Problem.parse(problem).value, "num_customers": int(num_customers),
            "num_instances": int(num_instances), "seed": int(seed),
            "distribution": distribution, "generator_kwargs": dict(generator_kwargs or {}),
            "solver": solver, "time_limit": float(time_limit) if solver else None,
            "solver_seed": int(solver_seed) if solver else None,
            "format_version": FORMAT_VERSION,
        }
        self.num_workers = num_workers
        self.progress = progress
        super().__init__(root, transform, pre_transform, force_reload=force_reload)
        self.load(self.processed_paths[0])
        with open(self.meta_path) as f:
            self.meta: dict[str, Any] = json.load(f)

    @property
    def key(self) -> str:
        blob = json.dumps(self.params, sort_keys=True).encode()
        digest = hashlib.sha1(blob).hexdigest()[:12]
        p = self.params
        return f"{p['problem']}{p['num_customers']}_n{p['num_instances']}_s{p['seed']}_" \
               f"{p['solver'] or 'nosol'}_{digest}"

    @property
    def raw_file_names(self) -> list[str]:
        return []

    @property
    def processed_file_names(self) -> list[str]:
        return [f"{self.key}.pt"]

    @property
    def meta_path(self) -> str:
        return osp.join(self.processed_dir, f"{self.key}.json")

    def download(self) -> None:  # generated data: nothing to download
        pass

    def process(self) -> None:
        p = self.params
        gen = make_generator(p["problem"], p["num_customers"], seed=p["seed"],
                             distribution=p["distribution"], **p["generator_kwargs"])
        data_list = gen.sample(p["num_instances"]).to_data_list()
        start = time.perf_counter()
        if p["solver"]:
            from pyg_routing.data.solvers import solve_instances

            data_list = solve_instances(data_list, solver=p["solver"],
                                        time_limit=p["time_limit"], seed=p["solver_seed"],
                                        num_workers=self.num_workers, progress=self.progress)
        elapsed = time.perf_counter() - start
        meta = {"params": p, "summary": summarize(data_list), "solve_seconds": elapsed}
        if self.pre_transform is not None:
            data_list = [self.pre_transform(d) for d in data_list]
        self.save(data_list, self.processed_paths[0])
        with open(self.meta_path, "w") as f:
            json.dump(meta, f, indent=2)

    def __repr__(self) -> str:
        p = self.params
        return (f"{type(self).__name__}({len(self)}, problem={p['problem']!r}, "
                f"num_customers={p['num_customers']}, solver={p['solver']!r})")


def summarize(data_list: list[RoutingData]) -> dict[str, Any]:
    """Size, and for solved instances mean/min/max cost, routes and feasibility."""
    out: dict[str, Any] = {"num_instances": len(data_list),
                           "num_nodes": int(data_list[0].num_nodes) if data_list else 0}
    if data_list and data_list[0].has_solution:
        batch = Batch.from_data_list(data_list)
        cost = batch.cost().double()
        out.update({
            "mean_cost": float(cost.mean()), "min_cost": float(cost.min()),
            "max_cost": float(cost.max()),
            "mean_routes": float(batch.num_routes.double().mean()),
            "feasible_fraction": float(batch.is_feasible(allow_zero_length=True)
                                       .double().mean()),
        })
        if "prize" in batch:
            out["visited_fraction"] = float(
                batch.visited.sum() / (batch.num_nodes - batch.num_graphs))
    return out


def load_summary(path: str) -> dict[str, Any]:
    """Read the JSON summary written next to a cached dataset file."""
    with open(path) as f:
        return json.load(f)


__all__ = ["RoutingDataset", "summarize", "load_summary", "FORMAT_VERSION"]
