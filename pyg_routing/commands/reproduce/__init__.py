"""``pyg-routing reproduce TABLE --scale smoke|cpu|paper``: one of the paper's ten tables
as a grid of cells (:mod:`.tables`), each the argument lists of existing commands run
in-process (:mod:`.cells`), merged into ``table.md``/``table.csv``/``gap.png`` beside
the paper's values (:mod:`.collect`).

Without ``--shard``/``--collect`` every unfinished cell runs, then the table is
collected. ``--shard i/n`` runs every n-th cell only (a job array); ``--collect [OUT
...]`` merges the shards' result files. ``--dry-run`` lists the cells and the command
lines they run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyg_routing.commands.dataset import Parsed
from pyg_routing.commands.grammar import CommandParser, refuse_typed, typed
from pyg_routing.commands.reproduce.budgets import SCALES
from pyg_routing.commands.reproduce.cells import (
    TRAINER_OPTIONS,
    command_line,
    parse_shard,
    run_cells,
    shard,
)
from pyg_routing.commands.reproduce.cells import render as render_step
from pyg_routing.commands.reproduce.collect import collect
from pyg_routing.commands.reproduce.tables import TABLES, TableSpec

#: where the cells of a scale run unless --accelerator says otherwise
ACCELERATOR = {"smoke": "cpu", "cpu": "cpu", "paper": "gpu"}


def parse(argv: Sequence[str]) -> Parsed:
    p = CommandParser(
        prog="pyg-routing reproduce",
        description="Run every cell (encoding x setting x seed) of one of the paper's "
                    "tables at a scale, each cell a shipped recipe plus overrides, its "
                    "result written as it finishes (a rerun skips finished cells), then "
                    "write table.md, table.csv and gap.png with the paper's value beside "
                    "each of ours. Tables: " + "; ".join(
                        f"{k}: {v.title}" for k, v in TABLES.items()))
    p.add_argument("table", choices=tuple(TABLES), help="the table")
    p.add_argument("--scale", choices=SCALES, required=True,
                   help="smoke: toy budget, proves the pipeline; cpu: ~1 h per table on 2 "
                        "CPU cores; paper: the paper's protocol, the shipped recipes (GPU)")
    p.add_argument("--out", default="runs/reproduce",
                   help="folder of the cells' results and the tables")
    p.add_argument("--shard", type=parse_shard, default=None,
                   help="run only the cells i, i+n, i+2n, ... (1-based; then --collect)")
    p.add_argument("--collect", nargs="*", default=None, metavar="OUT",
                   help="only merge finished cells into the table: from the given shard "
                        "folders (default: --out)")
    p.add_argument("--dry_run", action="store_true",
                   help="list the cells and their command lines (recipes by name); run "
                        "nothing")
    p.add_argument("--checkpoint", action="append", default=None, metavar="ROW[@COLUMN]=CKPT",
                   help="tab4-tab7: this row (of this column) tests the given checkpoint "
                        "instead of training one (repeatable)")
    p.add_argument("--accelerator", default=None,
                   help="where the cells train and run their policies (default: cpu, paper "
                        "scale gpu)")
    p.add_argument("--devices", default=None, help="devices per training cell (Lightning)")
    p.add_argument("--strategy", default=None, help="Lightning strategy of training cells")
    p.add_argument("--precision", default=None, help="precision of training cells")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    return Parsed(p.parse_args(list(argv)), typed(argv), "reproduce")


def _checkpoints(spec: TableSpec, values: list[str] | None) -> dict[str, str]:
    """``ROW[@COLUMN]=CKPT`` options as a dict (each row and column checked)."""
    out: dict[str, str] = {}
    rows = [r for r, _ in spec.rows if r not in ("reference", "sisr")]
    for value in values or []:
        key, sep, path = value.partition("=")
        row, _, column = key.partition("@")
        if not sep or not path:
            raise ValueError(f"--checkpoint {value}: must be ROW[@COLUMN]=CKPT")
        if row not in rows:
            raise ValueError(f"--checkpoint {value}: {spec.name} has no trained row {row!r}; "
                             f"choose from {', '.join(rows)}")
        if column and column not in spec.columns:
            raise ValueError(f"--checkpoint {value}: {spec.name} has no column {column!r}; "
                             f"choose from {', '.join(spec.columns)}")
        if not Path(path).is_file():
            raise ValueError(f"--checkpoint {value}: no such file {path!r}")
        out[key] = path
    return out


def _check(parsed: Parsed, spec: TableSpec) -> None:
    """Refuse, naming it, an option that does not apply to what the others ask for."""
    args, given = parsed.options, parsed.typed
    if args.collect is not None:
        refuse_typed(given, ("shard", "dry_run", "checkpoint", *TRAINER_OPTIONS),
                     "does not apply with --collect (it only merges finished cells)", args)
    if not spec.trains:
        refuse_typed(given, TRAINER_OPTIONS, f"does not apply to {spec.name} (it runs a "
                                             f"probe: nothing is trained)", args)
    if not spec.checkpoints and "checkpoint" in given:
        raise ValueError(f"{given['checkpoint']} applies to tab4-tab7 only (rows that can "
                         f"test a trained model); {spec.name} trains every cell")


def run(parsed: Parsed) -> dict[str, Any]:
    args = parsed.options
    spec = TABLES[args.table]
    _check(parsed, spec)
    cells = spec.cells(args.scale, _checkpoints(spec, args.checkpoint))
    out = Path(args.out)
    if args.collect is not None:
        sources = [Path(p) for p in args.collect] or [out]
        missing = [str(p) for p in sources if not p.is_dir()]
        if missing:
            raise ValueError(f"--collect: no such folder {', '.join(missing)}")
        return {"mode": "collect", **collect(spec, cells, args.scale, out, sources)}
    trainer = {"accelerator": args.accelerator or ACCELERATOR[args.scale],
               **{k: getattr(args, k) for k in TRAINER_OPTIONS[1:]
                  if getattr(args, k) is not None}}
    mine = shard(cells, args.shard)
    if args.dry_run:
        return {"mode": "dry-run", "table": spec.name, "scale": args.scale,
                "cells": [{"cell": c.id, "row": c.row, "column": c.column, "seed": c.seed,
                           "commands": [command_line(render_step(s, _placeholders(), trainer))
                                        for s in c.steps]} for c in mine]}
    ran = run_cells(spec, mine, args.scale, out, trainer)
    if args.shard is not None:
        i, n = args.shard
        return {"mode": "shard", "table": spec.name, "scale": args.scale, "shard": f"{i}/{n}",
                "out": str(out), "cells": ran}
    return {"mode": "run", **collect(spec, cells, args.scale, out, [out]), "ran": ran}


def _placeholders() -> dict[str, str]:
    return {"cell": "{cell}", "data": "{data}", "xdata": "{xdata}",
            "checkpoint": "{checkpoint}"}


def render(result: dict[str, Any]) -> str:
    """Text output: the cells of a dry run, a shard's progress, or the table."""
    if result["mode"] == "dry-run":
        lines = [f"{result['table']} at --scale {result['scale']}: "
                 f"{len(result['cells'])} cell(s)"]
        for c in result["cells"]:
            lines.append(f"{c['cell']}:")
            lines += [f"  {cmd}" for cmd in c["commands"]]
        return "\n".join(lines)
    if result["mode"] == "shard":
        ran = sum(c["status"] == "ran" for c in result["cells"])
        return (f"{result['table']} shard {result['shard']}: {ran} cell(s) run, "
                f"{len(result['cells']) - ran} already finished; merge with --collect")
    tail = f"\n\nwritten to {result['out']}/ ({result['finished']}/{result['cells']} cells)"
    return result["markdown"] + tail
