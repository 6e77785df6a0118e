"""``RoutingDataset``: generated instances with cached reference solutions."""

from __future__ import annotations

import hashlib
import json
import os
import os.path as osp
import time
import warnings
from collections.abc import Callable
from typing import Any

from torch_geometric.data import Batch, InMemoryDataset
from torch_geometric.data.data import BaseData

from pyg_routing.data.files import read_json, read_torch
from pyg_routing.data.generator_options import count_option
from pyg_routing.data.generators import make_generator
from pyg_routing.data.problems import Problem
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.errors import CorruptFileError, InvalidInstanceError

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

    A cache that cannot be read (either file truncated by an interrupted run,
    garbage bytes, a different kind of file, or a pickle that needs types other than
    tensors, numbers, strings, containers and :class:`RoutingData`, which is never
    unpickled) is deleted and built again, with a warning naming its path.

    Args:
        root: dataset folder.
        problem: ``tsp``, ``cvrp``, ``vrptw``, ``pcvrp`` or ``pdtsp``.
        num_customers: customers per instance (TSP: cities).
        num_instances: number of instances (at least 1: an empty dataset is refused,
            naming the argument).
        seed: generator seed.
        solver: ``None`` (instances only), ``"pyvrp"``, ``"ortools"``, ``"auto"``
            or a constructive heuristic (``"nearest_neighbor"``, ...).
        time_limit: seconds per instance for the reference solver.
        distribution: ``"uniform"`` or ``"clustered"`` (preset ``paper`` only).
        generator_kwargs: extra generator options (e.g. ``capacity``, ``kappa``).
        num_workers: solver processes (default: all cores).
        solver_seed: seed passed to the solver.
        progress: show a progress bar while solving.
        preset: data family of :func:`~pyg_routing.data.generators.make_generator`
            (``paper``, ``nds``, ``nds_low_capacity``, ...). Part of the cache key
            unless ``paper``, so caches built before presets existed stay valid.
    """

    def __init__(self, root: str, problem: str | Problem, num_customers: int,
                 num_instances: int, seed: int = 0, solver: str | None = None,
                 time_limit: float = 1.0, distribution: str = "uniform",
                 generator_kwargs: dict[str, Any] | None = None,
                 num_workers: int | None = None, solver_seed: int = 0,
                 progress: bool = True, transform: Callable | None = None,
                 pre_transform: Callable | None = None, force_reload: bool = False,
                 preset: str = "paper") -> None:
        num_customers = count_option(num_customers, "num_customers")
        num_instances = count_option(num_instances, "num_instances")
        if num_instances < 1:
            raise InvalidInstanceError(f"num_instances must be >= 1, got {num_instances}: a "
                                       f"dataset needs at least one instance")
        generator_kwargs = dict(generator_kwargs or {})
        preset = generator_kwargs.pop("preset", preset)
        if preset != "paper":
            from pyg_routing.data.presets import get_preset

            get_preset(preset)  # unknown names fail here, before any file is touched
            if distribution != "uniform":
                raise InvalidInstanceError(
                    f"distribution={distribution!r} applies to preset 'paper' only; preset "
                    f"{preset!r} fixes the layout (clustered NDS data: 'nds_clustered')")
        self.params: dict[str, Any] = {
            "problem": Problem.parse(problem).value, "num_customers": int(num_customers),
            "num_instances": int(num_instances), "seed": int(seed),
            "distribution": distribution, "generator_kwargs": generator_kwargs,
            "solver": solver, "time_limit": float(time_limit) if solver else None,
            "solver_seed": int(solver_seed) if solver else None,
            "format_version": FORMAT_VERSION,
        }
        if preset != "paper":  # absent for paper: the old keys hash the old dict
            self.params["preset"] = preset
        self.num_workers = num_workers
        self.progress = progress
        _drop_corrupt_bookkeeping(osp.join(osp.expanduser(osp.normpath(root)), "processed"))
        # PyG's "Processing... Done!" lines only with a progress display
        super().__init__(root, transform, pre_transform, force_reload=force_reload,
                         log=progress)
        self.meta: dict[str, Any] = {}
        try:
            self._load_cache()
        except CorruptFileError as exc:
            warnings.warn(f"{exc}; deleting the dataset cache {self.processed_paths[0]} "
                          f"and building it again", stacklevel=2)
            for path in self.processed_paths:
                if osp.exists(path):
                    os.remove(path)
            self.process()
            self._load_cache()

    def _load_cache(self) -> None:
        """Load the cached data and its summary (CorruptFileError if unreadable)."""
        self.load(self.processed_paths[0])
        self.meta = load_summary(self.meta_path)

    def load(self, path: str, data_cls: type[BaseData] = RoutingData) -> None:
        """Load a cache written by :meth:`save`, through :func:`read_torch` (as data:
        a cache that needs any type but tensors, numbers, strings, containers and
        :class:`RoutingData` is refused, and then rebuilt).

        Raises:
            FileNotFoundError: ``path`` does not exist.
            CorruptFileError: unreadable, or not a saved dataset of
                ``num_instances`` instances.
        """
        out = read_torch(path, "dataset cache", opt_in=None)    # as data; rebuilt if not
        try:
            data, slices, data_cls = out if len(out) == 3 else (*out, data_cls)
            self.data = data_cls.from_dict(data) if isinstance(data, dict) else data
            self.slices = slices
            count = len(self)
        except Exception as exc:  # any other object: not one of our caches
            raise CorruptFileError(f"dataset cache {path} does not hold a saved dataset "
                                   f"({type(exc).__name__}: {exc})") from exc
        if count != self.params["num_instances"]:
            raise CorruptFileError(f"dataset cache {path} holds {count} instances, "
                                   f"expected {self.params['num_instances']}")

    @property
    def key(self) -> str:
        blob = json.dumps(self.params, sort_keys=True).encode()
        digest = hashlib.sha1(blob).hexdigest()[:12]
        p = self.params
        tag = f"{p['preset']}_" if "preset" in p else ""
        return f"{p['problem']}{p['num_customers']}_{tag}n{p['num_instances']}_s{p['seed']}_" \
               f"{p['solver'] or 'nosol'}_{digest}"

    @property
    def raw_file_names(self) -> list[str]:
        return []

    @property
    def processed_file_names(self) -> list[str]:
        # Both files: a run interrupted between writing them builds the cache again.
        return [f"{self.key}.pt", f"{self.key}.json"]

    @property
    def meta_path(self) -> str:
        return osp.join(self.processed_dir, f"{self.key}.json")

    def download(self) -> None:  # generated data: nothing to download
        pass

    def process(self) -> None:
        p = self.params
        if "preset" in p:
            gen = make_generator(p["problem"], p["num_customers"], seed=p["seed"],
                                 preset=p["preset"], **p["generator_kwargs"])
        else:
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
        # Write to temporary names and rename, so an interrupted run leaves no
        # half-written file under the cache's name.
        path = self.processed_paths[0]
        self.save(data_list, path + ".tmp")
        os.replace(path + ".tmp", path)
        with open(self.meta_path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=2)
        os.replace(self.meta_path + ".tmp", self.meta_path)

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
    """Read the JSON summary written next to a cached dataset file.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        CorruptFileError: ``path`` is not a readable summary (not JSON, or not a
            JSON object).
    """
    meta = read_json(path, "dataset summary")
    if not isinstance(meta, dict):
        raise CorruptFileError(f"dataset summary {path} is not a JSON object "
                               f"(got {type(meta).__name__})")
    return meta


def _drop_corrupt_bookkeeping(processed_dir: str) -> None:
    """Delete PyG's ``pre_transform.pt``/``pre_filter.pt`` when unreadable (PyG
    writes them after processing, so an interrupted run can truncate them, and
    then fails to load them); they only record the transforms' ``repr``."""
    for name in ("pre_transform.pt", "pre_filter.pt"):
        path = osp.join(processed_dir, name)
        if not osp.exists(path):
            continue
        try:
            read_torch(path, "dataset bookkeeping file", opt_in=None)
        except CorruptFileError as exc:
            warnings.warn(f"removing {path}: {exc}", stacklevel=3)
            os.remove(path)


__all__ = ["RoutingDataset", "summarize", "load_summary", "FORMAT_VERSION"]
