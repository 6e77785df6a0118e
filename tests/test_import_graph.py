"""The package's import graph: no cycles between modules, and the layers point one way.

Every module of ``pyg_routing`` is parsed with :mod:`ast`; every ``import`` and
``from ... import`` of ``pyg_routing.*`` counts, wherever it stands: at module level,
inside a function (a lazy import), or under ``if TYPE_CHECKING:``. A lazy or
type-only import that exists to dodge a cycle still is the cycle, so it is an edge.

How an import becomes an edge ``importer -> imported``:

* relative imports are resolved against the importer's package;
* ``import a.b.c`` and ``from a.b import c`` where ``c`` is a submodule are edges to
  the module ``a.b.c``; ``from a.b import name`` where ``name`` is not a submodule is an
  edge to ``a.b``;
* a package stands for its ``__init__``: ``import pyg_routing.data`` or
  ``from pyg_routing.data import RoutingData`` is an edge to ``pyg_routing.data``,
  and the ``__init__``'s own imports (usually re-exports of its submodules) are that
  node's edges.
* Importing ``a.b.c`` also runs the ``__init__`` of ``a`` and ``a.b``, but that is NOT an
  edge: otherwise the normal layout "``pkg/__init__`` re-exports ``pkg.x``, and
  ``pkg.x`` imports its sibling ``pkg.y``" would look like ``pkg -> pkg.x -> pkg.y ->
  pkg``. So ``__init__`` re-exports never close a cycle on their own; a cycle through
  an ``__init__`` is reported only when some module explicitly imports a package
  whose ``__init__`` (transitively) imports that module back, which is a real
  partial-initialization hazard.

Layers (:data:`LAYERS`) are by a module's first component under ``pyg_routing``; a
module may import its own layer or lower ones. The package's root ``__init__`` (the
public re-export surface) has no layer.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import networkx as nx

import pyg_routing

ROOT = Path(pyg_routing.__file__).resolve().parent
PACKAGE = "pyg_routing"

#: Layer of each top-level module or subpackage of ``pyg_routing`` (lowest first).
LAYERS: dict[str, int] = {
    "errors": 0, "data": 0, "recipes": 0, "threads": 0, "memory": 0, "options": 0,
    "_lazy": 0,
    # the encodings' registry builds their transforms; models read it
    "functional": 1, "transforms": 1, "encodings": 1,
    "envs": 2, "models": 2,
    "search": 3,
    "training": 4, "probes": 4, "viz": 4,
    "cli": 5, "commands": 5,
}

#: Layer violations tolerated, each with why (none today); an entry whose import is
#: gone must be deleted, so a fixed violation cannot leave a hole for a new one.
ALLOWED_LAYER_EDGES: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(importer: str, is_package: bool, module: str | None, level: int) -> str:
    """The absolute name of ``from <level dots><module> import ...`` in ``importer``."""
    if level == 0:
        return module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]                     # a module's imports resolve in its package
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool) -> set[str]:
    """The package modules one import statement depends on."""
    modules = _modules()
    out: set[str] = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in modules:
                out.add(alias.name)
        return out
    base = _resolve(importer, is_package, node.module, node.level)
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        if sub in modules:
            out.add(sub)                     # `from pkg import submodule`
        elif base in modules:
            out.add(base)                    # `from module import name` (pkg: its __init__)
    return out


@cache
def import_graph() -> nx.DiGraph:
    """``importer -> imported`` over the modules of ``pyg_routing`` (see module doc)."""
    graph = nx.DiGraph()
    for name, path in _modules().items():
        graph.add_node(name)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, name, is_package):
                    if target != name:
                        graph.add_edge(name, target, line=node.lineno)
            elif is_package and _is_lazy_exports(node):      # re-exports by name
                for value in node.value.values:
                    graph.add_edge(name, f"{name}.{value.value}", line=node.lineno)
    return graph


def _is_lazy_exports(node: ast.AST) -> bool:
    """``_EXPORTS = {"Name": "submodule", ...}``: a package's lazy re-exports
    (:func:`pyg_routing._lazy.lazy_exports`), edges like the imports they stand for."""
    return (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "_EXPORTS"
            and isinstance(node.value, ast.Dict))


def _where(graph: nx.DiGraph, a: str, b: str) -> str:
    return f"{a} -> {b} (line {graph.edges[a, b]['line']})"


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS[parts[1]] if len(parts) > 1 else None


def test_graph_sees_lazy_type_only_and_relative_imports():
    graph = import_graph()
    assert len(graph) == len(_modules()) > 50
    assert graph.has_edge("pyg_routing.data", "pyg_routing.data.generators")   # re-export
    # function-level (lazy) import
    assert graph.has_edge("pyg_routing.data.paper_generators",
                          "pyg_routing.data.solvers.constructive")
    # `from pkg import submodule` is an edge to the submodule
    assert graph.has_edge("pyg_routing.commands.probe", "pyg_routing.probes.paper_values")
    # relative imports (the package has none today, so parse snippets)

    def targets(code: str, importer: str, is_package: bool = False) -> set[str]:
        node = ast.parse(code).body[0]
        assert isinstance(node, ast.ImportFrom)
        return _targets(node, importer, is_package)

    parallel = "pyg_routing.data.solvers.parallel"
    assert targets("from ..problems import Problem", parallel) == {"pyg_routing.data.problems"}
    assert targets("from . import constructive", parallel) == {
        "pyg_routing.data.solvers.constructive"}
    assert targets("from .. import RoutingData", parallel) == {"pyg_routing.data"}
    assert targets("from . import x_generator", "pyg_routing.data", is_package=True) == {
        "pyg_routing.data.x_generator"}


def test_no_import_cycles():
    """Each strongly connected component of more than one module is a knot of cycles;
    report its modules and one cycle through it, with the importing lines."""
    graph = import_graph()
    knots = sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)
    msg = []
    for knot in knots:
        cycle = nx.find_cycle(graph.subgraph(knot))
        msg.append(f"  {', '.join(knot)}\n    e.g. " + "; ".join(_where(graph, a, b)
                                                              for a, b in cycle))
    assert not knots, f"{len(knots)} import cycle(s) between modules:\n" + "\n".join(msg)


def test_every_top_level_module_has_a_layer():
    graph = import_graph()
    tops = {m.split(".")[1] for m in graph if m != PACKAGE}
    assert tops <= set(LAYERS), f"give these a layer in LAYERS: {sorted(tops - set(LAYERS))}"


def test_layers_point_down():
    graph = import_graph()
    bad = []
    for a, b in graph.edges:
        la, lb = _layer(a), _layer(b)
        if la is None or lb is None or lb <= la:
            continue
        if (a, b) not in ALLOWED_LAYER_EDGES:
            bad.append(_where(graph, a, b))
    assert not bad, "a lower layer imports a higher one:\n  " + "\n  ".join(sorted(bad))


def test_allowed_layer_edges_still_exist():
    """An allow-list entry whose import is gone must be deleted, so it cannot hide a
    new violation later."""
    graph = import_graph()
    stale = [f"{a} -> {b}" for (a, b) in ALLOWED_LAYER_EDGES if not graph.has_edge(a, b)]
    assert not stale, f"remove from ALLOWED_LAYER_EDGES: {stale}"
