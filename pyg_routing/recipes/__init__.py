"""Recipes: the complete, sourced configuration of a backbone x problem x size, as
shipped YAML files, and partial recipes (overlays) that change a budget.

A recipe file holds every value of a run of ``pyg-routing train`` / ``compare``:
``backbone``, ``problem``, ``num_customers``, ``pe``, ``seed`` and the sections
``encoding``, ``data``, ``model``, ``train``, ``validate``, ``test``, ``trainer``. Each
value's comment names its source (the paper's table or section, the original's
options file, README or config, with line numbers); where the paper and the original
disagree the recipe follows the paper and names the original's value beside it.

Shipped recipes are named ``<backbone>/<problem><customers>`` (``dact/cvrp100``);
overlays are named ``<scale>/<backbone>`` (``cpu/dact``: CPU-sized batches and
horizons) and hold only what they change. ``--config NAME`` takes either, or a path.

This module only finds and reads files; the configuration classes that check the
values live in :mod:`pyg_routing.training.config`.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from pyg_routing.errors import RoutingError

#: where the shipped recipes lie (inside the installed package)
ROOT = Path(str(resources.files(__name__)))
#: ``<problem><customers>``: the name of a full recipe inside its backbone's folder
_FULL = re.compile(r"^(?P<problem>[a-z]+?)(?P<n>\d+)$")


class RecipeError(RoutingError):
    """A recipe that cannot be found or read (names the file or the name)."""


def available() -> list[str]:
    """Every shipped recipe and overlay by name, sorted (``dact/cvrp100``,
    ``cpu/dact``, ...)."""
    return sorted(str(p.relative_to(ROOT).with_suffix("")) for p in ROOT.glob("*/*.yaml"))


def is_name(value: str) -> bool:
    """Whether ``value`` names a shipped recipe (rather than a path)."""
    return value in available()


def path(name: str) -> Path:
    """The file of the shipped recipe ``name``; :class:`RecipeError` lists the names."""
    if not is_name(name):
        raise RecipeError(f"no shipped recipe {name!r}; the recipes are "
                          f"{', '.join(available())} (or give a YAML file's path)")
    return ROOT / f"{name}.yaml"


def read(name_or_path: str | Path) -> dict[str, Any]:
    """The mapping of a recipe: a shipped name or a YAML file's path.

    Raises:
        RecipeError: no such recipe or file, a file that is not YAML, or YAML that is not
            a mapping (each naming the file).
    """
    source = path(str(name_or_path)) if is_name(str(name_or_path)) else Path(name_or_path)
    if not source.is_file():
        raise RecipeError(f"{source}: no such recipe file, and no shipped recipe has that "
                          f"name (shipped: {', '.join(available())})")
    try:
        data = yaml.safe_load(source.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise RecipeError(f"{source}: not a YAML recipe "
                          f"({' '.join(str(err).split())})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RecipeError(f"{source}: a recipe is a mapping of options, got a "
                          f"{type(data).__name__}")
    return data


def full_recipes(backbone: str) -> dict[tuple[str, int], str]:
    """The full recipes of ``backbone``: ``(problem, customers) -> name``."""
    out = {}
    for p in sorted((ROOT / backbone).glob("*.yaml")) if (ROOT / backbone).is_dir() else []:
        match = _FULL.match(p.stem)
        if match:
            out[(match["problem"], int(match["n"]))] = f"{backbone}/{p.stem}"
    return out


def default_for(backbone: str, problem: str, num_customers: int) -> str | None:
    """The shipped recipe a run of ``backbone`` on ``problem`` with ``num_customers``
    starts from: the recipe of that size, else of the next larger size, else of the
    largest (the rule the originals apply between their published sizes); ``None``
    when the backbone ships no recipe for the problem."""
    sizes = sorted(n for (p, n) in full_recipes(backbone) if p == problem)
    if not sizes:
        return None
    size = next((n for n in sizes if n >= num_customers), sizes[-1])
    return full_recipes(backbone)[(problem, size)]
