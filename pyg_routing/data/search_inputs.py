"""Instances read from files, ready for a search: the dense batch that
:func:`~pyg_routing.search.improve`, :class:`~pyg_routing.search.StepSearch` and
:class:`~pyg_routing.search.DestroyRepairSearch` take, with the file's cost matrix and
open routes kept, and the cost of the routes found in the file's own units.

>>> mine = load_search_instance("my-asym.vrp")        # any file the readers know
>>> result = DestroyRepairSearch().run(mine.instances, SISRDestroy(), MaxIterations(100))
>>> mine.cost(result.routes[0])      # checked, in the file's units: the matrix's sum

Two unit systems meet here. A search runs in *search units*: coordinates in the unit
square (the readers' one scale per file, or a fixed ``scale`` such as CVRPLib X's 1000),
matrices and time windows divided by the same scale. NDS's temperatures and the
trained policies assume them, so ``result.cost`` is in these units. The file's own
numbers (an explicit matrix as written, CVRPLib's rounded distances) are what
:meth:`SearchInstance.cost` reports, through :meth:`RoutingData.cost` of the routes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from pyg_routing.data.benchmarks import (
    BenchmarkDataset,
    best_known_value,
    load_instance,
    resolve_instance,
)
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.data.solvers.parallel import stack_instances
from pyg_routing.errors import InvalidInstanceError

PathLike = str | os.PathLike


@dataclass(frozen=True)
class SearchInstance:
    """One instance read from a file, ready for a search.

    Attributes:
        name: the instance's name (the file's ``NAME``, else its stem).
        path: the file read.
        data: the instance as read (:func:`~pyg_routing.data.load_instance`):
            :meth:`RoutingData.cost` of its routes is in the file's units.
        instances: a batch of this one instance in search units (see the module docs),
            its matrix and open routes kept: what a search's ``run`` takes.
        scale: file units per search unit of coordinates and matrices.
        bks: the best-known value in the file's units, where one is known
            (:func:`~pyg_routing.data.benchmarks.best_known_value`), else ``None``.
        bks_source: where ``bks`` was read (``None`` without one).
    """

    name: str
    path: Path
    data: RoutingData
    instances: RoutingInstances
    scale: float
    bks: float | None = None
    bks_source: str | None = None

    def solution(self, routes: Iterable[Iterable[int]]) -> RoutingData:
        """``routes`` (a search's ``result.routes[i]``) on the instance as read, checked:
        :class:`~pyg_routing.errors.InvalidSolutionError` or
        :class:`~pyg_routing.errors.InfeasibleSolutionError` if they do not serve it."""
        solution = RoutingData.from_routes(self.data, routes)
        solution.check()
        return solution

    def cost(self, routes: Iterable[Iterable[int]]) -> float:
        """The cost of ``routes`` in the file's units (checked, see :meth:`solution`):
        the sum of the file's matrix over their arcs, or the benchmark's rounded
        distances."""
        return float(self.solution(routes).cost())


def search_instances(data: RoutingData | Sequence[RoutingData], *,
                     scale: float | None = None) -> RoutingInstances:
    """Loaded or built instances as the dense batch a search takes, keeping each
    instance's explicit cost matrix and open routes.

    Args:
        data: one :class:`RoutingData` or several of the same problem and size (a
            benchmark instance from :func:`~pyg_routing.data.load_instance`, a
            :class:`~pyg_routing.data.BenchmarkDataset` element, ``RoutingData.
            from_instance``); any solution they hold is ignored.
        scale: ``None``: the instances' own units (``pos``; a file's coordinates in
            the unit square, its matrix divided by the same scale); else the original
            units (``raw_pos``, ``raw_travel_cost``, ``raw_time_window``, ...) divided
            by ``scale``, e.g. 1000 for CVRPLib X as NDS reads it.

    Raises:
        InvalidInstanceError: ``scale`` not a finite number > 0, or given for an
            instance without original units (``raw_pos``).
        ValueError: instances of different problems or sizes (see
            :func:`~pyg_routing.data.solvers.stack_instances`).
    """
    items = [data] if isinstance(data, RoutingData) else list(data)
    if not items or not all(isinstance(d, RoutingData) for d in items):
        bad = next((type(d).__name__ for d in items if not isinstance(d, RoutingData)), None)
        raise TypeError(f"search_instances takes RoutingData (one or a list), got "
                        f"{bad or 'an empty list'}")
    if scale is not None:
        if isinstance(scale, bool) or not isinstance(scale, int | float) \
                or not 0 < scale < float("inf"):
            raise InvalidInstanceError(f"scale must be a finite number > 0, got {scale!r}")
        items = [_rescaled(d, float(scale), i) for i, d in enumerate(items)]
    return stack_instances(items)


def _rescaled(data: RoutingData, scale: float, position: int) -> RoutingData:
    """``data`` in its original units divided by ``scale`` (validated again)."""
    name = getattr(data, "name", None)
    if "raw_pos" not in data:
        label = f"instance {name!r}" if name is not None else f"instance {position}"
        raise InvalidInstanceError(f"{label}: scale= needs the original units of a file "
                                   f"(raw_pos); this instance has none, search it as it is")
    dtype = torch.get_default_dtype()

    def raw(key: str) -> torch.Tensor | None:
        return (getattr(data, key) / scale).to(dtype) if key in data else None

    optional = {k: getattr(data, k) for k in ("demand", "capacity", "prize",
                                              "pickup_delivery_index", "depot_vehicles")
                if k in data}
    matrix = raw("raw_travel_cost")
    n = data.num_nodes
    return RoutingData.from_instance(
        data.problem, raw("raw_pos"), time_window=raw("raw_time_window"),
        service_time=raw("raw_service_time"), name=name,
        cost_matrix=None if matrix is None else matrix.view(n, n),
        open_routes=bool(data.travel.open_flags()[0]), num_depots=data.depot_count,
        **optional)


def load_search_instance(path_or_name: PathLike, *, data_dir: PathLike | None = None,
                         scale: float | None = None) -> SearchInstance:
    """Read an instance file in any format the readers know (VRPLIB/CVRPLib with
    Euclidean or EXPLICIT weights, TSPLIB ATSP, Solomon, Li & Lim) as a
    :class:`SearchInstance`: the batch a search takes, and the file's own costs.

    Args:
        path_or_name: a file path, or a bare name looked up as
            :func:`~pyg_routing.data.load_instance` does.
        data_dir: a folder searched first for a bare name.
        scale: the search units (see :func:`search_instances`); ``None``: the
            reader's unit square.

    Raises:
        UnknownInstanceError: the file cannot be found.
        InstanceFormatError: the file (or a ``bks.csv`` / solution file beside it,
            read for the best-known value) is malformed; the message names it.
    """
    path = resolve_instance(path_or_name, data_dir)
    data = load_instance(path)
    return _search_instance(path, data, scale, best_known_value(path, data))


def benchmark_search_instances(benchmark: str = "x", data_dir: PathLike | None = None, *,
                               names: Iterable[str] | None = None,
                               max_customers: int | None = None,
                               scale: float | None = None) -> list[SearchInstance]:
    """The instances of a benchmark folder (:class:`~pyg_routing.data.BenchmarkDataset`:
    ``data_dir``, else ``$PYG_ROUTING_DATA``, else the bundled files), each with at most
    ``max_customers`` customers, as :class:`SearchInstance` s in the folder's natural
    order, each with its best-known value where one is known (``bks.csv``, else its
    solution file, else the paper's X table).

    Raises:
        UnknownInstanceError: no such folder, or a name not in it.
        InstanceFormatError: a malformed file, naming it.
    """
    ds = BenchmarkDataset(data_dir, benchmark, names=names, with_solutions=False)
    out = []
    for i, path in enumerate(ds.paths):
        data = ds.get(i)
        if max_customers is not None and data.num_nodes - 1 > max_customers:
            continue                          # before its solution file is read
        found = best_known_value(path, data, folder_bks=ds.folder_bks)
        out.append(_search_instance(path, data, scale, found))
    return out


def _search_instance(path: Path, data: RoutingData, scale: float | None,
                     found: tuple[float, str] | None) -> SearchInstance:
    file_scale = float(data.scale.reshape(-1)[0]) if "scale" in data else 1.0
    return SearchInstance(str(getattr(data, "name", Path(path).stem)), Path(path), data,
                          search_instances(data, scale=scale),
                          file_scale if scale is None else float(scale),
                          None if found is None else found[0],
                          None if found is None else found[1])
