"""Benchmark instances (CVRPLib X, Solomon, Li & Lim) by name or path, and a PyG
dataset over a folder of them.

>>> data = load_instance("X-n101-k25", solution=True)
>>> float(data.cost())
27591.0

A bare name (``"X-n101-k25.vrp"``, ``"X-n101-k25"``, ``"C101"``, ``"lc101"``) is
looked up, in this order, in ``data_dir``, the folders listed in the
``PYG_ROUTING_DATA`` environment variable (``os.pathsep``-separated) and the
instances bundled with the package; nothing relative to the working directory is
searched (a data folder is always named by the user). In each of these folders the
sub-folders ``cvrplib/X``, ``cvrplib``, ``solomon`` and ``lilim`` are searched too.
File parsing lives in :mod:`pyg_routing.data.benchmark_io`.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

from torch_geometric.data import InMemoryDataset

from pyg_routing.data.benchmark_io import (
    UnrecognizedFormatError,
    attach_solution,
    read_bks,
    read_routes,
    sniff_format,
)
from pyg_routing.data.instance_files import read_instance_file
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.errors import InstanceFormatError, UnknownInstanceError

__all__ = ["BUNDLED_DIR", "ENV_VAR", "PAPER_X_TABLE", "BenchmarkDataset", "best_known_value",
           "data_roots", "load_instance", "paper_x_bks", "read_bks", "read_routes",
           "resolve_instance", "resolve_solution", "search_dirs"]

#: Instances shipped with the package (see ``bundled/SOURCES.md``).
BUNDLED_DIR = Path(__file__).resolve().with_name("bundled")
#: The paper's CVRPLib X table (``tab:cvrplib-x``): the BKS of its 84 instances, with
#: NDS's and IPE+XPE's objectives.
PAPER_X_TABLE = BUNDLED_DIR / "paper" / "tab_cvrplib_x.csv"
#: Environment variable naming extra data folders.
ENV_VAR = "PYG_ROUTING_DATA"
_SUBDIRS = ("", "cvrplib/X", "cvrplib", "solomon", "lilim", "cordeau")
_INSTANCE_SUFFIXES = (".vrp", ".txt")
#: benchmark key -> (usual sub-folder, file format, file glob)
BENCHMARKS = {"x": ("cvrplib/X", "vrplib", "*.vrp"),
              "solomon": ("solomon", "solomon", "*.txt"),
              "lilim": ("lilim", "lilim", "*.txt")}

PathLike = str | os.PathLike


# --------------------------------------------------------------------------- lookup
def _unique(paths: Iterable[Path]) -> list[Path]:
    seen, out = set(), []
    for p in paths:
        key = os.path.normcase(os.path.abspath(p))
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def data_roots(data_dir: PathLike | None = None) -> list[Path]:
    """The data folders searched for bare names, in order (existing or not):
    ``data_dir``, ``$PYG_ROUTING_DATA``, the bundled files."""
    env = os.environ.get(ENV_VAR, "")
    given = [Path(data_dir)] if data_dir is not None else []
    given += [Path(p) for p in env.split(os.pathsep) if p]
    return _unique([*given, BUNDLED_DIR])


def search_dirs(data_dir: PathLike | None = None) -> list[Path]:
    """The existing folders searched for bare names: each data root and its
    ``cvrplib/X``, ``cvrplib``, ``solomon`` and ``lilim`` sub-folders."""
    return _unique(d for root in data_roots(data_dir) for sub in _SUBDIRS
                   if (d := root / sub if sub else root).is_dir())


def _find(filenames: list[str], dirs: list[Path]) -> Path | None:
    """The first ``dir/filename`` that is a file; exact names first, then ignoring case."""
    for d in dirs:
        for f in filenames:
            if (d / f).is_file():
                return d / f
    lowered = {f.lower() for f in filenames}
    for d in dirs:
        if d.is_dir():
            for entry in sorted(d.iterdir()):
                if entry.name.lower() in lowered and entry.is_file():
                    return entry
    return None


def _not_found(what: str, name: object, dirs: list[Path], data_dir) -> UnknownInstanceError:
    missing = [str(r) for r in data_roots(data_dir) if not r.is_dir()]
    searched = ", ".join(map(str, dirs)) or "(none of the data folders exist)"
    extra = f" (not present: {', '.join(missing)})" if missing else ""
    return UnknownInstanceError(
        f"unknown benchmark {what} {str(name)!r}: not found in {searched}{extra}. Pass a "
        f"file path, data_dir=..., or set {ENV_VAR} to the folder holding it.")


def _is_bare(p: Path) -> bool:
    return not p.is_absolute() and p.parent == Path(".")


def resolve_instance(path_or_name: PathLike, data_dir: PathLike | None = None) -> Path:
    """The file of an instance given by path or bare name (extension optional)."""
    p = Path(path_or_name)
    if p.is_file():
        return p
    if not _is_bare(p) or p.is_dir():
        what = "is a folder, not an instance file" if p.is_dir() else "does not exist"
        raise UnknownInstanceError(f"instance file {str(p)!r} {what}")
    names = ([p.name] if p.suffix.lower() in _INSTANCE_SUFFIXES
             else [p.name + s for s in _INSTANCE_SUFFIXES])
    dirs = search_dirs(data_dir)
    found = _find(names, dirs)
    if found is None:
        raise _not_found("instance", path_or_name, dirs, data_dir)
    return found


def _sibling_solution(instance: Path) -> Path | None:
    """``<stem>.sol`` next to the instance, the ``solution_file`` column of a
    ``bks.csv`` next to it, or ``[solutions/]<stem>.*`` (Li & Lim layout)."""
    folder, stem = instance.parent, instance.stem
    if (sol := instance.with_suffix(".sol")).is_file():
        return sol
    bks = folder / "bks.csv"
    if bks.is_file():
        try:
            with bks.open(newline="") as fh:
                for row in csv.DictReader(fh):
                    inst, sol = row.get("instance"), row.get("solution_file")
                    if inst and sol and inst.strip().lower() == stem.lower() \
                            and (folder / sol.strip()).is_file():
                        return folder / sol.strip()
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise InstanceFormatError(f"{bks}: cannot be read while looking for the "
                                      f"solution of {stem!r} ({exc})") from None
    for d in (folder / "solutions", folder):
        if d.is_dir():
            hits = sorted(f for f in d.glob(f"{stem}.*")
                          if f.is_file() and f != instance and f.suffix != ".vrp"
                          and f.name.split(".")[0] == stem)
            if hits:
                return hits[0]
    return None


def resolve_solution(solution: PathLike | bool, instance: Path,
                     data_dir: PathLike | None = None) -> Path:
    """The solution file: ``True`` for the instance's sibling, else a path or a bare
    name looked up next to the instance, in its ``solutions/`` folder, then in the
    data folders."""
    if solution is True:
        found = _sibling_solution(instance)
        if found is None:
            raise UnknownInstanceError(
                f"no solution file for instance {instance.stem!r}: looked for "
                f"{instance.with_suffix('.sol')}, the solution_file column of "
                f"{instance.parent / 'bks.csv'} and {instance.parent / 'solutions'}/"
                f"{instance.stem}.*")
        return found
    p = Path(solution)
    if p.is_file():
        return p
    if not _is_bare(p):
        raise UnknownInstanceError(f"solution file {str(p)!r} does not exist")
    names = [p.name] if p.suffix else [p.name, p.name + ".sol"]
    dirs = _unique(d for base in [instance.parent, *search_dirs(data_dir)]
                   for d in (base, base / "solutions") if d.is_dir())
    found = _find(names, dirs)
    if found is None:
        raise _not_found("solution", solution, dirs, data_dir)
    return found


def load_instance(path_or_name: PathLike, solution: PathLike | bool | None = None, *,
                  data_dir: PathLike | None = None) -> RoutingData:
    """Load a CVRPLib X (``.vrp``), Solomon or Li & Lim (``.txt``) instance.

    Args:
        path_or_name: a file path or a bare name such as ``"X-n101-k25.vrp"``,
            ``"X-n101-k25"``, ``"C101"`` or ``"lc101"`` (see the module docs for
            where bare names are looked up).
        solution: ``None`` (instance only), ``True`` (the solution file next to the
            instance), or a solution file path or bare name (``"X-n101-k25.sol"``).
        data_dir: a folder searched first for bare names.

    Returns:
        A :class:`RoutingData` (``cvrp``, ``vrptw`` or ``pdptw``) with positions
        normalized by one scale, the raw data kept for :meth:`~RoutingData.cost`,
        and the solution set when one was given.

    Raises:
        UnknownInstanceError: the instance or solution cannot be found; the
            message lists the folders searched.
        InstanceFormatError: a file is malformed; the message names it.
        InvalidSolutionError: the solution's routes do not fit the instance.
    """
    path = resolve_instance(path_or_name, data_dir)
    data = read_instance_file(path)
    if solution is None or solution is False:
        return data
    return attach_solution(data, resolve_solution(solution, path, data_dir))


# --------------------------------------------------------------------------- BKS
@cache
def paper_x_bks() -> dict[str, float]:
    """The best-known values of the paper's 84 CVRPLib X instances (its bundled table,
    :data:`PAPER_X_TABLE`): ``{name: bks}``."""
    return read_bks(PAPER_X_TABLE)


def best_known_value(path: PathLike, instance: RoutingData | None = None, *,
                     folder_bks: dict[str, float] | None = None
                     ) -> tuple[float, str] | None:
    """The best-known value of the instance in file ``path`` and where it was read, or
    ``None`` when nothing knows it. In this order:

    1. ``folder_bks`` (a folder's ``bks.csv``, :func:`read_bks`; read here when
       ``None`` and the file has a ``bks.csv`` beside it);
    2. the cost of the routes of its solution file (the ``.sol`` beside it, the
       ``solution_file`` column of ``bks.csv``, ``solutions/<name>.*``: what CVRPLib's
       downloads ship), in the benchmark's own units and rounding; ``instance``
       (the file as read, with or without a solution) saves reading it again;
    3. the paper's table of CVRPLib X (:func:`paper_x_bks`), by name.

    Raises:
        InstanceFormatError: a ``bks.csv`` or solution file that cannot be read, naming it.
        InvalidSolutionError: a solution file whose routes do not fit the instance.
    """
    path = Path(path)
    if folder_bks is None:
        csv_file = path.parent / "bks.csv"
        folder_bks = read_bks(csv_file) if csv_file.is_file() else {}
    data = instance if instance is not None else read_instance_file(path)
    name = str(getattr(data, "name", path.stem))
    for key in (name, path.stem):
        if key in folder_bks:
            return folder_bks[key], str(path.parent / "bks.csv")
    if data.has_solution:
        return float(data.cost()), "the instance's solution"
    solution = _sibling_solution(path)
    if solution is not None:
        return float(attach_solution(data, solution).cost()), str(solution)
    if name in paper_x_bks():
        return paper_x_bks()[name], f"the paper's table ({PAPER_X_TABLE.name})"
    return None


# --------------------------------------------------------------------------- dataset
def _natural_key(name: str) -> list:
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", name)]


def _benchmark_files(folder: Path, fmt: str, pattern: str,
                     passed: dict[str, str] | None = None) -> list[Path]:
    """The files of format ``fmt`` among ``folder/pattern``, in natural order.

    A file of another instance format, or a text file in none (e.g. a SINTEF
    solution file in the same folder), is not one of them: it is passed over, and
    why is recorded in ``passed`` (lower-case stem -> reason) when given. A file that
    is empty, unreadable or not text raises :class:`InstanceFormatError` naming it:
    nothing tells it apart from a damaged instance file.
    """
    files = []
    for f in folder.glob(pattern):
        if not f.is_file():
            continue
        try:
            kind = sniff_format(f)
        except UnrecognizedFormatError as exc:
            if passed is not None:
                passed[f.stem.lower()] = str(exc)
            continue
        if kind == fmt:
            files.append(f)
        elif passed is not None:
            passed[f.stem.lower()] = f"{f}: a {kind} file, not a {fmt} instance"
    return sorted(files, key=lambda f: _natural_key(f.stem))


class BenchmarkDataset(InMemoryDataset):
    r"""The instances of one benchmark in a folder, as an in-memory PyG dataset.

    Every element is a :class:`RoutingData` (with its best-known solution when
    ``with_solutions``), so ``torch_geometric.loader.DataLoader`` batches them and
    ``batch.cost()`` gives one benchmark cost per instance. Nothing is written to
    disk: the files are parsed when the dataset is built.

    Args:
        root: the folder holding the files, or a data folder with the usual
            sub-folder (``cvrplib/X``, ``solomon``, ``lilim``). ``None``: the first
            folder holding this benchmark among ``$PYG_ROUTING_DATA`` and the bundled
            instances (in that order).
        benchmark: ``"x"`` (CVRPLib X), ``"solomon"`` or ``"lilim"``.
        names: only these instances (with or without extension, any case), in
            this order.
        with_solutions: attach each instance's solution file (required to exist).
        transform, pre_transform, pre_filter: as in :class:`InMemoryDataset`.

    Attributes:
        folder: the folder read; ``instance_names``, ``paths``: one per element;
        ``folder_bks``: the folder's ``bks.csv`` as ``{name: value}`` (empty if absent);
        ``bks``: ``{name: best-known value}`` of the instances that have one, read
        when first asked for by :func:`best_known_value` (the folder's ``bks.csv``,
        else each instance's solution file, else the paper's X table);
        ``bks_source``: where each value was read.

    A folder needs the instance files only: ``bks.csv`` (columns ``instance`` and
    ``bks``) and solution files are optional sources of the best-known values.
    """

    def __init__(self, root: PathLike | None = None, benchmark: str = "x",
                 names: Iterable[str] | None = None, with_solutions: bool = True,
                 transform: Callable | None = None, pre_transform: Callable | None = None,
                 pre_filter: Callable | None = None) -> None:
        key = str(benchmark).lower()
        if key not in BENCHMARKS:
            raise ValueError(f"unknown benchmark {benchmark!r}; choose one of "
                             f"{', '.join(map(repr, BENCHMARKS))}")
        self.benchmark = key
        self.folder = self._folder(root, key)
        passed: dict[str, str] = {}
        files = _benchmark_files(self.folder, *BENCHMARKS[key][1:], passed)
        if names is not None:
            by_stem = {f.stem.lower(): f for f in files}
            wanted = [Path(n).stem if Path(n).suffix.lower() in _INSTANCE_SUFFIXES
                      else str(n) for n in names]
            unknown = [n for n in wanted if n.lower() not in by_stem]
            other = next((n for n in unknown if n.lower() in passed), None)
            if other is not None:
                raise InstanceFormatError(f"{key} instance {other!r}: {passed[other.lower()]}")
            if unknown:
                raise UnknownInstanceError(
                    f"{key} instance(s) {', '.join(map(repr, unknown))} not in {self.folder}")
            files = [by_stem[n.lower()] for n in wanted]
        if not files:
            raise UnknownInstanceError(f"no {key} instances in {self.folder}")
        super().__init__(None, transform, pre_transform, pre_filter, log=False)
        kept: list[tuple[Path, RoutingData]] = []
        for f in files:
            data = load_instance(f, solution=True if with_solutions else None)
            if pre_filter is None or pre_filter(data):
                kept.append((f, pre_transform(data) if pre_transform is not None else data))
        if not kept:
            raise UnknownInstanceError(f"pre_filter rejected every {key} instance in "
                                       f"{self.folder}")
        self.paths = [f for f, _ in kept]
        data_list = [d for _, d in kept]
        self.instance_names = [str(d.name) for d in data_list]
        csv_file = self.folder / "bks.csv"
        self.folder_bks = read_bks(csv_file) if csv_file.is_file() else {}
        self._known: tuple[dict[str, float], dict[str, str]] | None = None
        self.data, self.slices = self.collate(data_list)

    def _best_known(self) -> tuple[dict[str, float], dict[str, str]]:
        if self._known is None:          # solution files are read when first needed
            values: dict[str, float] = {}
            sources: dict[str, str] = {}
            for i, (name, path) in enumerate(zip(self.instance_names, self.paths)):
                found = best_known_value(path, self.get(i), folder_bks=self.folder_bks)
                if found is not None:
                    values[name], sources[name] = found
            self._known = (values, sources)
        return self._known

    @property
    def bks(self) -> dict[str, float]:
        """``{name: best-known value}`` (see the class docs); instances nothing knows
        are left out."""
        return self._best_known()[0]

    @property
    def bks_source(self) -> dict[str, str]:
        """``{name: where its best-known value was read}``."""
        return self._best_known()[1]

    @staticmethod
    def _folder(root: PathLike | None, key: str) -> Path:
        sub, fmt, pattern = BENCHMARKS[key]
        if root is not None:
            root = Path(root)
            if (root / sub).is_dir():
                return root / sub
            if root.is_dir():
                return root
            raise UnknownInstanceError(f"benchmark folder {str(root)!r} does not exist")
        candidates = _unique(d for r in data_roots() for d in (r / sub, r)
                             if d.is_dir())
        for d in candidates:
            if _benchmark_files(d, fmt, pattern):
                return d
        raise UnknownInstanceError(
            f"no {key} benchmark folder found; looked in "
            f"{', '.join(map(str, candidates)) or '(no data folders exist)'}. Pass root=... "
            f"or set {ENV_VAR}.")
