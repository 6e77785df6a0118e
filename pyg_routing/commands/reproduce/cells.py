"""Running a table's cells: one result file per cell, written when the cell finishes
(temp file + ``os.replace``), so an interrupted run loses at most the cell it was in; a
rerun skips finished cells; ``--shard i/n`` runs every n-th cell of the fixed order.

A cell's steps are existing commands' argument lists, parsed and run in-process by the
commands' own ``parse`` and ``run`` (exactly as the command line does)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Sequence
from importlib import metadata, resources
from pathlib import Path
from typing import Any, NamedTuple

from pyg_routing.commands.grammar import accepts
from pyg_routing.commands.reproduce.tables import Cell, Step, TableSpec, extract

#: the options of a training step that a run may set without changing the cell
#: (where it runs, not what it computes): not part of the checked definition
TRAINER_OPTIONS = ("accelerator", "devices", "strategy", "precision")


class Shard(NamedTuple):
    """``--shard i/n``: the ``i``-th of ``n`` shards (1-based); printed as it is spelt."""

    i: int
    n: int

    def __str__(self) -> str:
        return f"{self.i}/{self.n}"


@accepts("i/n")
def parse_shard(value: str | Shard) -> Shard:
    """An option type: ``"i/n"`` with ``1 <= i <= n``."""
    if isinstance(value, Shard):              # jsonargparse checks a parsed value again
        return value
    try:
        i, n = (int(part) for part in value.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be i/n with 1 <= i <= n, got {value!r}") \
            from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"must be i/n with 1 <= i <= n, got {value!r}")
    return Shard(i, n)


def shard(cells: Sequence[Cell], which: tuple[int, int] | None) -> list[Cell]:
    """The cells ``k`` with ``k % n == i - 1`` (all cells without a shard)."""
    if which is None:
        return list(cells)
    i, n = which
    return [c for k, c in enumerate(cells) if k % n == i - 1]


def folder(out: Path, table: str, scale: str) -> Path:
    """``<out>/<table>/<scale>``: the cells' result files are under ``cells/``."""
    return out / table / scale


def definition(cell: Cell, scale: str) -> dict[str, Any]:
    """What a result file must match to be reused: the table, scale and commands."""
    return {"table": cell.table, "scale": scale, "cell": cell.id,
            "commands": [list(step) for step in cell.steps]}


#: the commands a cell runs, by the module that parses and runs each
STEP_COMMANDS = {"compare": "compare", "evaluate": "evaluate", "probe": "probe",
                 "search": "search", "train": "train"}


def run_step(argv: Sequence[str]) -> tuple[str, Any]:
    """Parse and run one step's argument list as the command line would; returns the
    command's name and its result."""
    import importlib

    from pyg_routing.commands.grammar import normalize

    name = argv[0]
    module = importlib.import_module(f"pyg_routing.commands.{STEP_COMMANDS[name]}")
    return name, module.run(module.parse(normalize(argv[1:])))


def render(step: Step, where: dict[str, str], trainer: dict[str, str]) -> list[str]:
    """A step's argument list with its folders filled in, and the run's trainer options
    (``trainer``: option -> value) where the step's command takes them."""
    argv = [where.get(token[1:-1], token) if token.startswith("{") and token.endswith("}")
            else token.replace("{cell}", where["cell"]) for token in step]
    if step[0] in ("compare", "train"):
        flags = {name: f"--trainer.{name}" for name in TRAINER_OPTIONS}
    elif "--checkpoint" in step:     # evaluate/search with a policy: where it runs
        flags = {"accelerator": "--accelerator"}
    else:
        flags = {}
    for name, flag in flags.items():
        if name in trainer:
            if flag in argv:
                argv[argv.index(flag) + 1] = trainer[name]
            else:
                argv += [flag, trainer[name]]
    return argv


def command_line(argv: Sequence[str]) -> str:
    return " ".join(["pyg-routing", *argv])


def _smoke_x(data: Path) -> Path:
    """The smoke X folder: the bundled X-n101-k25 and its BKS from the paper's Tab. 7."""
    from pyg_routing.probes.paper_nds_values import x_table

    target = data / "x_smoke"
    if not (target / "bks.csv").is_file():
        target.mkdir(parents=True, exist_ok=True)
        source = resources.files("pyg_routing.data") / "bundled" / "X-n101-k25.vrp"
        with resources.as_file(source) as path:
            shutil.copy(path, target / "X-n101-k25.vrp")
        bks = int(x_table()["X-n101-k25"]["bks"])
        (target / "bks.csv").write_text(f"instance,bks\nX-n101-k25,{bks}\n")
    return target


def _checkpoint(result: dict[str, Any], cell: Cell) -> str:
    """The checkpoint a step produced (``train``; ``compare``: the cell's row)."""
    if "checkpoint" in result and isinstance(result["checkpoint"], str):
        return result["checkpoint"]
    rows = [r for r in result.get("rows", []) if r.get("checkpoint")]
    if not rows:
        raise ValueError(f"cell {cell.id}: its step before a {{checkpoint}} produced none")
    return rows[-1]["checkpoint"]


def run_cell(cell: Cell, scale: str, out: Path, trainer: dict[str, str]) -> dict[str, Any]:
    """Run every step of ``cell`` in-process; returns its result record."""
    base = folder(out, cell.table, scale)
    where = {"cell": str(base / cell.id), "data": str(out / "data")}
    if any("{xdata}" in step for step in cell.steps):
        where["xdata"] = str(_smoke_x(out / "data"))
    lines, result, start = [], None, time.perf_counter()
    for step in cell.steps:
        argv = render(step, where, trainer)
        lines.append(command_line(argv))
        print(f"[{cell.table} {cell.id}] {lines[-1]}", file=sys.stderr)
        command, result = run_step(argv)
        if result is None:          # a worker rank of a distributed step: not rank 0
            raise RuntimeError("a reproduce cell runs its steps on rank 0 only")
        where["checkpoint"] = (_checkpoint(result, cell) if command in ("train", "compare")
                               else where.get("checkpoint", ""))
    assert result is not None
    return {**definition(cell, scale), "row": cell.row, "column": cell.column,
            "seed": cell.seed, "command_lines": lines, "values": extract(cell, result),
            "seconds": time.perf_counter() - start,
            "version": metadata.version("pyg_routing"), "finished": time.time()}


def result_path(out: Path, cell: Cell, scale: str) -> Path:
    return folder(out, cell.table, scale) / "cells" / f"{cell.id}.json"


def read_result(path: Path, cell: Cell, scale: str) -> dict[str, Any] | None:
    """The finished result of ``cell`` at ``path`` (``None``: not finished); a file of
    another scale or another definition of the cell is refused, never reused."""
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not a reproduce result file ({err}); remove it") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}: not a reproduce result file (a JSON "
                         f"{type(record).__name__}, not an object); remove it")
    want = definition(cell, scale)
    if record.get("scale") != scale:
        raise ValueError(f"{path}: written at --scale {record.get('scale')}, not {scale}; "
                         f"use another --out")
    if {k: record.get(k) for k in want} != want:
        raise ValueError(f"{path}: written by another definition of cell {cell.id} "
                         f"({_shown(record.get('commands'))}); remove it to rerun the cell")
    values = record.get("values")
    if not isinstance(values, dict) or not all(isinstance(v, dict) for v in values.values()):
        raise ValueError(f"{path}: not a finished reproduce result (no table values); remove "
                         f"it to rerun the cell")
    return record


def _shown(commands: Any) -> str:
    """A result file's command lines, however it stored them."""
    if isinstance(commands, list) and all(isinstance(c, list) for c in commands):
        return " | ".join(" ".join(map(str, c)) for c in commands)
    return repr(commands)


def write_atomic(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".json.tmp{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=2))
    os.replace(tmp, path)


def run_cells(spec: TableSpec, cells: Sequence[Cell], scale: str, out: Path,
              trainer: dict[str, str]) -> list[dict[str, Any]]:
    """Run the unfinished ``cells`` in order, each result written as it finishes;
    returns what happened to each (``ran`` or ``skipped``)."""
    done = []
    for cell in cells:
        path = result_path(out, cell, scale)
        if read_result(path, cell, scale) is not None:
            print(f"[{spec.name}] skip {cell.id}: finished ({path})", file=sys.stderr)
            done.append({"cell": cell.id, "status": "skipped"})
            continue
        record = run_cell(cell, scale, out, trainer)
        write_atomic(path, record)
        print(f"[{spec.name}] done {cell.id} in {record['seconds']:.1f} s", file=sys.stderr)
        done.append({"cell": cell.id, "status": "ran", "seconds": record["seconds"]})
    return done
