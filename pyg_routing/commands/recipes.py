"""``pyg-routing recipes [NAME]``: the shipped recipes and overlays, or one of them as
its file (with the comments that name each value's source)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyg_routing import recipes
from pyg_routing.commands.dataset import Parsed
from pyg_routing.commands.grammar import CommandParser, typed


def parse(argv: Sequence[str]) -> Parsed:
    p = CommandParser(prog="pyg-routing recipes",
                      description="List the shipped recipes (backbone/problem+size: a full "
                                  "recipe; scale/backbone: an overlay), or print one.")
    p.add_argument("name", nargs="?", default=None, help="a recipe to print")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    return Parsed(p.parse_args(list(argv)), typed(argv), "recipes")


def summary(name: str) -> str:
    """A recipe's first comment line (what it is)."""
    for line in recipes.path(name).read_text().splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
    return ""


def run(parsed: Parsed) -> dict[str, Any]:
    name = parsed.options.name
    if name is None:
        return {"recipes": {n: summary(n) for n in recipes.available()}}
    return {"name": name, "path": str(recipes.path(name)),
            "text": recipes.path(name).read_text(), "values": recipes.read(name)}


def render(result: dict[str, Any]) -> str:
    if "recipes" in result:
        width = max(map(len, result["recipes"]))
        return "\n".join(f"{n.ljust(width)}  {s}" for n, s in result["recipes"].items())
    return result["text"].rstrip("\n")
