"""``docs/recipes.md`` from the recipe files, so the table cannot drift from them.

Every value line of a recipe may carry a comment: ``[paper V]`` and ``[original V]`` tags
give the paper's and the original code's value, the rest names the source (file and
line) or says why ours differs. One table per backbone: a row per setting, one line
per distinct (value, paper, original, source) over the backbone's recipes, naming the
recipes it holds for.

Regenerate with ``python -m pyg_routing.recipes.docs > docs/recipes.md``.
"""

from __future__ import annotations

import re
from collections import defaultdict

from pyg_routing import recipes

_LINE = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z_][A-Za-z0-9_]*):\s*(?P<value>[^#]*?)\s*"
                   r"(?:#\s*(?P<comment>.*))?$")
_TAG = re.compile(r"\[(?P<kind>paper|original)\s+(?P<value>[^\]]*)\]")


def annotated(name: str) -> dict[str, tuple[str, str, str, str]]:
    """``setting -> (ours, paper, original, source)`` of the recipe ``name``, settings
    dotted (``train.batch_size``) in file order."""
    out: dict[str, tuple[str, str, str, str]] = {}
    section = ""
    for line in recipes.path(name).read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        key, value = match["key"], match["value"]
        if not match["indent"]:
            section = "" if value else key
            if not value:
                continue
        setting = f"{section}.{key}" if match["indent"] else key
        comment = match["comment"] or ""
        tags = {m["kind"]: m["value"] for m in _TAG.finditer(comment)}
        source = _TAG.sub("", comment).strip(" ;,")
        out[setting] = (value, tags.get("paper", ""), tags.get("original", ""), source)
    return out


def summary(name: str) -> str:
    """The first comment line of a recipe (what it is)."""
    for line in recipes.path(name).read_text().splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
    return ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|") or "-"


def backbone_table(backbone: str) -> str:
    """The Markdown table of ``backbone``'s full recipes."""
    names = sorted(recipes.full_recipes(backbone).values(),
                   key=lambda n: (re.sub(r"\d+", "", n), int(re.sub(r"\D", "", n))))
    rows: dict[str, dict[tuple[str, str, str, str], list[str]]] = defaultdict(dict)
    for name in names:
        for setting, entry in annotated(name).items():
            rows[setting].setdefault(entry, []).append(name.split("/")[1])
    lines = [f"## {backbone}", "", "Recipes: " + ", ".join(f"`{n}`" for n in names) + ".", "",
             *(f"- `{n}`: {summary(n)}" for n in names), "",
             "| setting | ours | paper | original | source, or why ours differs |",
             "|---|---|---|---|---|"]
    for setting, groups in rows.items():
        for i, ((ours, paper, original, source), held) in enumerate(groups.items()):
            where = "" if len(held) == len(names) else f" ({', '.join(held)})"
            lines.append("| " + " | ".join([
                f"`{setting}`" if i == 0 else "", _cell(ours) + where, _cell(paper),
                _cell(original), _cell(source)]) + " |")
    return "\n".join(lines)


def overlays() -> str:
    """The overlays (``cpu/*``, ``smoke/*``) and what they change."""
    lines = ["## Overlays", "",
             "Partial recipes layered after a full one (`--config dact/cvrp20 --config "
             "cpu/dact`): they change a budget, never a method.", ""]
    for name in recipes.available():
        if "backbone" in recipes.read(name):
            continue
        changed = ", ".join(f"`{k}` {v[0]}" for k, v in annotated(name).items())
        lines.append(f"- `{name}`: {summary(name)}. Sets {changed}.")
    return "\n".join(lines)


def markdown() -> str:
    """The whole of ``docs/recipes.md``."""
    backbones = sorted({n.split("/")[0] for n in recipes.available()
                        if "backbone" in recipes.read(n)})
    head = ["# Recipes", "",
            "Generated from `pyg_routing/recipes/*/*.yaml` by `python -m "
            "pyg_routing.recipes.docs` (a test checks it is current). A recipe is the "
            "complete configuration of one backbone x problem x size: `pyg-routing train "
            "--config NAME` runs it, `pyg-routing recipes NAME` prints it with its comments. "
            "Where the paper and the original disagree, the recipe follows the paper and "
            "names the original's value beside it; `ours` in the source column marks a value "
            "that is ours and says why.", ""]
    return "\n\n".join(["\n".join(head).rstrip(), *map(backbone_table, backbones),
                        overlays()]) + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(markdown(), end="")
