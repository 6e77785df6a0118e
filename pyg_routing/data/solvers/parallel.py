"""Solve many instances: exact-ish reference solvers in parallel processes,
constructive heuristics as one batched call per group of like instances."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context

import torch
from torch import Tensor
from tqdm.auto import tqdm

from pyg_routing.data.costs import refuse_lost_matrix
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.data.solvers.constructive import nearest_neighbor, sweep, tours_to_routes
from pyg_routing.data.solvers.insertion import cheapest_insertion
from pyg_routing.data.solvers.ortools_solver import solve_ortools
from pyg_routing.data.solvers.pyvrp_solver import instance_label, is_open, solve_pyvrp
from pyg_routing.errors import InfeasibleSolutionError, RoutingError

#: Per-instance search solvers: ``(instance, time_limit, seed, return_depots=True) ->
#: (routes, depots)`` (each route's depot, ``0 .. K-1``).
SEARCH_SOLVERS: dict[str, Callable[..., list[list[int]]]] = {
    "pyvrp": solve_pyvrp,
    "ortools": solve_ortools,
}
#: Batched constructive heuristics: ``RoutingInstances -> tours [B, L]``.
CONSTRUCTIVE_SOLVERS = {
    "nearest_neighbor": nearest_neighbor,
    "sweep": sweep,
    "insertion": cheapest_insertion,
}
#: With ``num_workers=None``, a search job of at most this many solver-seconds runs in
#: this process: a spawned worker imports torch and PyG first (seconds each), and a
#: script without an ``if __name__ == "__main__":`` guard then works as written.
INLINE_SECONDS = 5.0
#: Every solver name :func:`solve_instances` accepts ("auto" picks one per instance).
SOLVERS: dict[str, Callable | None] = {"auto": None, **SEARCH_SOLVERS, **CONSTRUCTIVE_SOLVERS}


def available_solvers() -> list[str]:
    """The valid ``solver`` names of :func:`solve_instances`."""
    return list(SOLVERS)


def resolve_solver(solver: str, problem: str | Problem) -> str:
    """The concrete solver name for ``problem`` (``"auto"``: PyVRP for every problem;
    on PDTSP it is stable within 0.5 s at 21 nodes and 2 s at 51, where OR-Tools'
    guided local search still drifts by 0.3 % and 1.5 %: docs/experiments.md).

    Raises:
        ValueError: unknown solver name (the message lists the valid ones).
    """
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; valid solvers: "
                         f"{', '.join(available_solvers())}")
    if solver == "auto":
        Problem.parse(problem)                   # an unknown problem is refused here
        return "pyvrp"
    return solver


def _init_worker() -> None:
    """Process-pool initializer: one torch thread per worker, since the pool is
    the parallelism and oversubscribed intra-op threads only slow workers down."""
    torch.set_num_threads(1)


def _solve_one(index: int, instance: RoutingData, solver: str, time_limit: float,
               seed: int) -> tuple[int, tuple[list[list[int]], list[int]]]:
    """Solve one instance (top level, so it pickles under ``spawn``): its routes and
    their depots."""
    try:
        return index, SEARCH_SOLVERS[solver](instance, time_limit=time_limit, seed=seed,
                                             return_depots=True)
    except RoutingError as exc:
        if "name" in instance:
            raise
        # Unnamed instances are identified by their position in the input list.
        raise type(exc)(f"instance {index}: {exc}") from exc


def _verified(instance: RoutingData, routes: list[list[int]], solver: str,
              position: int, depots: list[int] | None = None) -> RoutingData:
    data = RoutingData.from_routes(instance, routes, depots)
    if not bool(data.is_feasible(allow_zero_length=True)):
        label = instance_label(instance) if "name" in instance else f"instance {position}: "
        raise InfeasibleSolutionError(f"{label}solver {solver!r} returned an infeasible "
                                      f"solution ({data.routes()})")
    return data


def solve_instances(instances: Sequence[RoutingData], solver: str = "auto",
                    time_limit: float = 1.0, seed: int = 0, num_workers: int | None = None,
                    progress: bool = True, mp_context: str = "spawn") -> list[RoutingData]:
    """Solve every instance and return new :class:`RoutingData` with solutions.

    Search solvers (``"pyvrp"``, ``"ortools"``, ``"auto"``) run one instance per
    task in a process pool; constructive heuristics (``"nearest_neighbor"``,
    ``"sweep"``, ``"insertion"``) run batched in this process, one call per group
    of instances with the same problem, size and pickup-delivery pairs (a tensor
    op over the group beats shipping instances to processes).

    Args:
        instances: single instances (their own solutions, if any, are ignored).
        solver: a name from :data:`SOLVERS`; ``"auto"`` = PyVRP.
        time_limit: seconds per instance (search solvers).
        seed: search seed, the same for every instance (so a result does not
            depend on the instance's position in the list).
        num_workers: processes (default: ``os.cpu_count()``, or this process alone
            when the job is at most :data:`INLINE_SECONDS` of solver time); ``1``
            solves in this process.
        progress: show a tqdm progress bar.
        mp_context: multiprocessing start method; ``"spawn"`` is safe with torch's
            thread pools (``"fork"`` starts faster but can deadlock after torch
            has used OpenMP in the parent).

    Returns:
        One solved ``RoutingData`` per input, in input order.

    Raises:
        ValueError: unknown solver, or one that does not support a problem.
        InfeasibleSolutionError: a solver returned an infeasible solution, or found
            none (the message names the instance).
    """
    instances = list(instances)
    if solver not in SOLVERS:
        resolve_solver(solver, "tsp")  # raises with the list of valid names
    names = [resolve_solver(solver, d.problem) for d in instances]
    results: list[RoutingData | None] = [None] * len(instances)
    bar = tqdm(total=len(instances), disable=not progress, desc=f"solving ({solver})")
    try:
        if solver in CONSTRUCTIVE_SOLVERS:
            _solve_constructive(instances, solver, results, bar)
            return results  # type: ignore[return-value]
        if num_workers is None:
            small = len(instances) * time_limit <= INLINE_SECONDS
            workers = 1 if small else (os.cpu_count() or 1)
        else:
            workers = int(num_workers)
        workers = max(1, min(workers, len(instances)))
        if workers == 1:
            for i, d in enumerate(instances):
                _, (routes, depots) = _solve_one(i, d, names[i], time_limit, seed)
                results[i] = _verified(d, routes, names[i], i, depots)
                bar.update()
        else:
            with ProcessPoolExecutor(workers, mp_context=get_context(mp_context),
                                     initializer=_init_worker) as pool:
                futures = [pool.submit(_solve_one, i, d, names[i], time_limit, seed)
                           for i, d in enumerate(instances)]
                try:
                    for future in as_completed(futures):
                        i, (routes, depots) = future.result()
                        results[i] = _verified(instances[i], routes, names[i], i, depots)
                        bar.update()
                except BrokenProcessPool as exc:
                    raise RuntimeError(
                        "a solver worker process died. With the 'spawn' start method the "
                        "workers re-import your main module: run from a script file whose "
                        "entry point is guarded by `if __name__ == '__main__':` (code piped "
                        "through stdin cannot be re-imported), or pass num_workers=1"
                    ) from exc
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
    finally:
        bar.close()
    return results  # type: ignore[return-value]


def _solve_constructive(instances: list[RoutingData], solver: str,
                        results: list[RoutingData | None], bar: tqdm) -> None:
    """Batched constructive solve, grouping like instances (fills ``results``)."""
    groups: dict[tuple, list[int]] = {}
    for i, d in enumerate(instances):
        _refuse_lost_matrix(d, i)
        if d.depot_count > 1:
            label = instance_label(d) if "name" in d else f"instance {i}: "
            raise ValueError(f"{label}the constructive heuristic {solver!r} builds routes "
                             f"from one depot; this instance has {d.depot_count} (solver "
                             f"'pyvrp' takes them)")
        pairs = (tuple(d.pickup_delivery_index.flatten().tolist())
                 if "pickup_delivery_index" in d else ())
        # Instances with and without a cost matrix cannot share a dense batch (the
        # heuristics follow RoutingInstances.costs(): the matrix, or Euclidean).
        key = (Problem.parse(d.problem), d.num_nodes, pairs, "travel_cost" in d)
        groups.setdefault(key, []).append(i)
    for members in groups.values():
        batch = stack_instances([instances[i] for i in members])
        routes = tours_to_routes(CONSTRUCTIVE_SOLVERS[solver](batch))
        for i, r in zip(members, routes):
            results[i] = _verified(instances[i], r, solver, i)
        bar.update(len(members))


def _refuse_lost_matrix(instance: RoutingData, position: int) -> None:
    """:func:`~pyg_routing.data.costs.refuse_lost_matrix`, naming the instance or its
    position in the list."""
    label = instance_label(instance) if "name" in instance else f"instance {position}: "
    refuse_lost_matrix(instance, label)


def stack_instances(instances: Sequence[RoutingData]) -> RoutingInstances:
    """Stack same-problem, same-size :class:`RoutingData` into a dense batch.

    Explicit cost matrices (``travel_cost``, in ``pos``'s units) become
    ``cost_matrix [B, N, N]`` and open routes ``open_routes [B]`` (``None`` when
    no instance has them); benchmark raw-unit fields are not carried.

    Raises:
        ValueError: mixed problems, sizes or pickup-delivery pairs, or instances
            with an explicit cost matrix stacked with instances without one.
        InvalidInstanceError: an instance that announces a matrix it lacks.
    """
    first = instances[0]
    prob = Problem.parse(first.problem)
    n = first.num_nodes
    for i, d in enumerate(instances):
        same_pairs = ("pickup_delivery_index" not in first or torch.equal(
            d.pickup_delivery_index, first.pickup_delivery_index))
        if Problem.parse(d.problem) is not prob or d.num_nodes != n or not same_pairs:
            raise ValueError(f"instance {i} differs from instance 0 in problem, size or "
                             f"pickup-delivery pairs; stack only like instances")

    def stack(key: str) -> Tensor | None:
        if key not in first:
            return None
        return torch.stack([getattr(d, key).reshape(getattr(first, key).shape)
                            for d in instances])

    explicit = ["travel_cost" in d for d in instances]
    for i, d in enumerate(instances):
        _refuse_lost_matrix(d, i)
    if any(explicit) and not all(explicit):
        i = explicit.index(not explicit[0])
        has = "has an" if explicit[i] else "has no"
        raise ValueError(f"instance {i} {has} explicit cost matrix, unlike instance 0; "
                         f"stack only like instances")
    matrix = torch.stack([d.travel_cost.view(n, n) for d in instances]) \
        if explicit[0] else None
    opened = [is_open(d) for d in instances]
    depots = [d.depot_count for d in instances]
    if len(set(depots)) > 1:
        i = next(i for i, k in enumerate(depots) if k != depots[0])
        raise ValueError(f"instance {i} has {depots[i]} depots, instance 0 {depots[0]}; "
                         f"stack only like instances")
    limited = ["depot_vehicles" in d for d in instances]
    if any(limited) and not all(limited):
        raise ValueError(f"instance {limited.index(not limited[0])} differs from instance 0 in "
                         f"whether its depots limit their vehicles; stack only like instances")
    cap = stack("capacity")
    return RoutingInstances(prob, stack("pos"), demand=stack("demand"),
                            capacity=None if cap is None else cap.reshape(-1),
                            time_window=stack("time_window"),
                            service_time=stack("service_time"), prize=stack("prize"),
                            pickup_delivery_index=getattr(first, "pickup_delivery_index", None),
                            cost_matrix=matrix,
                            open_routes=torch.tensor(opened, device=first.pos.device)
                            if any(opened) else None,
                            num_depots=depots[0], depot_vehicles=stack("depot_vehicles"))
