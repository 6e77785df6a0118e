"""``--collect``: the cells' result files (of one ``--out`` or of several shards' folders)
merged into ``table.csv`` (ours beside the paper's value, every row x column x metric),
``table.md`` and ``gap.png`` (gap per row with the min-max over seeds). A missing cell
is named, never skipped silently."""

from __future__ import annotations

import csv
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyg_routing.commands.reproduce.cells import folder, read_result, result_path
from pyg_routing.commands.reproduce.tables import Cell, TableSpec

#: ``table.csv``'s columns, in order
CSV_COLUMNS = ("row", "label", "column", "metric", "ours", "ours_std", "ours_min",
               "ours_max", "seeds", "paper")


def gather(spec: TableSpec, cells: Sequence[Cell], scale: str, outs: Sequence[Path]
           ) -> tuple[list[dict[str, Any]], list[str]]:
    """The result record of every cell found in one of ``outs`` (the first that has it),
    and the ids of the cells none has."""
    records, missing = [], []
    for cell in cells:
        found = None
        for out in outs:
            found = read_result(result_path(out, cell, scale), cell, scale)
            if found is not None:
                break
        if found is None:
            missing.append(cell.id)
        else:
            records.append(found)
    return records, missing


def aggregate(spec: TableSpec, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One CSV row per row x column x metric: the mean over the cells (seeds), their
    standard deviation, min and max, and the paper's value."""
    samples: dict[tuple[str, str, str], list[float]] = {}
    for record in records:
        for row, metrics in record["values"].items():
            for metric, value in metrics.items():
                if value is not None:
                    samples.setdefault((row, record["column"], metric), []).append(value)
    paper = spec.paper()
    lines = []
    for row, label in spec.rows:
        for column in spec.columns:
            for metric in spec.metrics:
                vals = samples.get((row, column, metric), [])
                lines.append({
                    "row": row, "label": label, "column": column, "metric": metric,
                    "ours": statistics.fmean(vals) if vals else None,
                    "ours_std": statistics.stdev(vals) if len(vals) > 1 else (
                        0.0 if vals else None),
                    "ours_min": min(vals) if vals else None,
                    "ours_max": max(vals) if vals else None, "seeds": len(vals),
                    "paper": paper.get((row, column), {}).get(metric)})
    return lines


def _fmt(value: float | None, metric: str) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}%" if metric == "gap_percent" else f"{value:.3f}"


def markdown(spec: TableSpec, scale: str, lines: Sequence[dict[str, Any]],
             missing: Sequence[str]) -> str:
    """The table as Markdown: per column and metric, ours (± std over seeds) and the
    paper's."""
    head = [""] + [f"{c} {m} (ours / paper)" for c in spec.columns for m in spec.metrics]
    text = [f"**{spec.name}** ({spec.label}): {spec.title} — {spec.note.get(scale, scale)}",
            "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by = {(x["row"], x["column"], x["metric"]): x for x in lines}
    for row, label in spec.rows:
        cells = [label]
        for column in spec.columns:
            for metric in spec.metrics:
                x = by[(row, column, metric)]
                ours = _fmt(x["ours"], metric)
                if x["seeds"] > 1:
                    ours += f" ± {_fmt(x['ours_std'], metric)}"
                cells.append(f"{ours} / {_fmt(x['paper'], metric)}")
        text.append("| " + " | ".join(cells) + " |")
    if missing:
        text += ["", f"Missing cells ({len(missing)}): {', '.join(missing)}"]
    return "\n".join(text)


def figure(spec: TableSpec, lines: Sequence[dict[str, Any]], path: Path) -> bool:
    """``gap.png``: per column, our gap per row (mean, min-max over seeds as error bars)
    beside the paper's; ``False`` when the table has no gap (the probes)."""
    if "gap_percent" not in spec.metrics:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import textwrap

    import matplotlib.pyplot as plt
    import numpy as np

    rows = [(r, label) for r, label in spec.rows if r != "reference"]
    fig, axes = plt.subplots(1, len(spec.columns), squeeze=False,
                             figsize=(2.5 + 0.5 * len(rows) * len(spec.columns), 4.6))
    by = {(x["row"], x["column"]): x for x in lines if x["metric"] == "gap_percent"}
    pos = np.arange(len(rows))
    for ax, column in zip(axes[0], spec.columns):
        got = [by[(r, column)] for r, _ in rows]
        ours = np.array([np.nan if x["ours"] is None else x["ours"] for x in got])
        low = np.array([0.0 if x["ours"] is None else x["ours"] - x["ours_min"] for x in got])
        high = np.array([0.0 if x["ours"] is None else x["ours_max"] - x["ours"] for x in got])
        ref = np.array([np.nan if x["paper"] is None else x["paper"] for x in got])
        ax.bar(pos - 0.2, ours, 0.4, yerr=[low, high], capsize=2, label="ours")
        ax.bar(pos + 0.2, ref, 0.4, label="paper")
        ax.set_xticks(pos, [label for _, label in rows], rotation=60, ha="right", fontsize=7)
        ax.set_title(column, fontsize=9)
        ax.set_ylabel("gap to reference (%)")
    # the legend above the panels and a wrapped title, so neither covers nor is clipped
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", ncol=2, fontsize=7, frameon=False)
    width = max(40, int(fig.get_figwidth() * 11))
    fig.suptitle("\n".join(textwrap.wrap(f"{spec.name}: {spec.title}", width)), fontsize=9,
                 x=0.02, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def collect(spec: TableSpec, cells: Sequence[Cell], scale: str, out: Path,
            sources: Sequence[Path]) -> dict[str, Any]:
    """Merge the result files of ``sources`` into ``<out>/<table>/<scale>/table.*``."""
    records, missing = gather(spec, cells, scale, sources)
    lines = aggregate(spec, records)
    target = folder(out, spec.name, scale)
    target.mkdir(parents=True, exist_ok=True)
    with open(target / "table.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(CSV_COLUMNS))
        w.writeheader()
        w.writerows(lines)
    text = markdown(spec, scale, lines, missing)
    (target / "table.md").write_text(text + "\n")
    plotted = figure(spec, lines, target / "gap.png")
    return {"table": spec.name, "scale": scale, "out": str(target), "markdown": text,
            "cells": len(cells), "finished": len(records), "missing": missing,
            "rows": lines, "figure": str(target / "gap.png") if plotted else None}
