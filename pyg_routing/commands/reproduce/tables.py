"""The paper's ten tables as data: per table its rows, columns and metrics, its cells at
each scale (every cell the argument lists of existing commands: ``compare``, ``evaluate``,
``train``, ``search``, ``probe``), how a cell's result becomes table entries, and the
paper's values (:mod:`pyg_routing.probes.paper_values`, :mod:`.paper_nds_values`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyg_routing.commands.reproduce import budgets as B
from pyg_routing.options import AGGREGATIONS as ROUTE_AGGREGATIONS
from pyg_routing.options import DIRECTIONS
from pyg_routing.probes import paper_nds_values as nds_paper
from pyg_routing.probes import paper_values as paper

#: a command line: the command's argument list; ``{cell}`` (the cell's folder),
#: ``{data}`` (the shared dataset cache), ``{xdata}`` (the smoke X folder) and
#: ``{checkpoint}`` (the previous step's checkpoint) are filled in when it runs
Step = tuple[str, ...]
Values = dict[str, dict[str, float | None]]            # row -> metric -> value
GAP = ("objective", "gap_percent")


@dataclass(frozen=True)
class Cell:
    """One encoding x setting x seed: the commands it runs, in order."""

    table: str
    row: str                  # the row it fills ("*": every row, one probe run)
    column: str
    seed: int
    steps: tuple[Step, ...]

    @property
    def id(self) -> str:
        """The cell's file name (stable: the table's fixed order does not enter it)."""
        raw = f"{self.column}__{'all' if self.row == '*' else self.row}__s{self.seed}"
        return re.sub(r"[^A-Za-z0-9_.-]+", "-", raw).strip("-").lower()


@dataclass(frozen=True)
class TableSpec:
    name: str
    title: str
    label: str                # the .tex label
    rows: tuple[tuple[str, str], ...]                   # (key, label)
    columns: tuple[str, ...]
    metrics: tuple[str, ...]
    cells: Callable[[str, dict[str, str]], list[Cell]]  # (scale, checkpoints) -> cells
    paper: Callable[[], dict[tuple[str, str], dict[str, float | None]]]
    trains: bool = True       # takes --accelerator/--devices/--strategy/--precision
    checkpoints: bool = False  # a row may take a trained model (--checkpoint ROW=CKPT)
    note: dict[str, str] = field(default_factory=dict)  # caption per scale


def _split(options: str) -> list[str]:
    return options.split()


def _setting(column: str) -> tuple[str, int]:
    """``"PDTSP-51" -> ("pdtsp", 50)`` (PDTSP counts its depot), ``"CVRP-100" ->
    ("cvrp", 100)``."""
    problem, n = column.rsplit("-", 1)
    return problem.lower(), int(n) - (1 if problem == "PDTSP" else 0)


#: every cell's folders and output options
_TAIL = ("--root", "{data}", "--out", "{cell}", "--no_progress")


def _compare(table: str, row: str, column: str, seed: int, scale: str, backbone: str,
             pe: str, extra: tuple[str, ...] = (), preset: str | None = None,
             problem: str | None = None, paper_size: int | None = None,
             checkpoint: str | None = None) -> Cell:
    """A ``compare`` of one encoding and seed (no baselines) from the setting's recipe,
    or ``evaluate`` of a given ``checkpoint`` under the same recipe's test protocol."""
    if problem is None or paper_size is None:
        problem, paper_size = _setting(column)
    recipe = B.options(backbone, problem, paper_size, scale, table)
    family = ["--data.preset", preset] if preset else []
    ref = ["--reference.seconds", B.reference_seconds(backbone, scale, paper_size)]
    if checkpoint is not None:
        step = ("evaluate", "--checkpoint", checkpoint, *recipe, *family, *ref, *_TAIL)
    else:
        step = ("compare", *recipe, "--pe", pe, "--seed", str(seed), *family, *extra, *ref,
                "--no_random", *_TAIL)
    return Cell(table, row, column, seed, (tuple(step),))


def _given(checkpoints: dict[str, str], row: str, column: str) -> str | None:
    return checkpoints.get(f"{row}@{column}", checkpoints.get(row))


def _gap_values(source: dict[str, dict[str, tuple[float, float | None]]],
                rows: dict[str, str] | None = None
                ) -> Callable[[], dict[tuple[str, str], dict[str, float | None]]]:
    """The paper's ``(objective, gap %)`` table ``source`` (setting -> key -> pair) as
    entries; ``rows`` maps our row keys to the source's keys where they differ."""
    def values() -> dict[tuple[str, str], dict[str, float | None]]:
        out = {}
        for column, entries in source.items():
            for row, key in (rows or {k: k for k in entries}).items():
                if key in entries:
                    obj, gap = entries[key]
                    out[(row, column)] = {"objective": obj, "gap_percent": gap}
        return out
    return values


# --- Tab. 1 and Tab. 3: probes --------------------------------------------------------

def _probe(kind: str, problem: str, n: int, scale: str, *extra: str) -> tuple[str, ...]:
    p = B.PROBE[scale]
    return ("probe", kind, "--problem", problem, "--num_customers", str(n),
            "--instances", p["instances"], "--seconds", p["seconds"], "--solver", p["solver"],
            "--seed", "0", *extra, "--root", "{data}", "--no_progress")


def _tab1(scale: str, checkpoints: dict[str, str]) -> list[Cell]:
    return [Cell("tab1", setting, "probe", 0, (_probe("anisometry", *_setting(setting),
                                                        scale),))
            for setting in paper.ANISOMETRY]


def _tab3(scale: str, checkpoints: dict[str, str]) -> list[Cell]:
    return [Cell("tab3", "*", "CVRP-100", 0, (
        _probe("spearman", "cvrp", 100, scale, "--pairs", B.PROBE[scale]["pairs"]),))]


# --- Layer 1: DACT (Tab. 2, 8, 9, 10) and N2S (Tab. 4) ---------------------------------

#: Tab. 8's rows: our key -> the encoding and its extra options
ABLATION_ROWS = {"none": ("none", ()), "ipe": ("ipe", ()),
                 "ipe_index": ("ipe", ("--encoding.ipe_phase", "index")), "xpe": ("xpe", ()),
                 "ipexpe": ("ipexpe", ())}
#: Tab. 9's rows: the per-route aggregations, then the per-node XPE (the paper's order)
AGGREGATIONS = (*ROUTE_AGGREGATIONS[1:], ROUTE_AGGREGATIONS[0])


def _grid(table: str, rows: dict[str, tuple[str, tuple[str, ...]]], columns: tuple[str, ...],
          backbone: str, seeds: dict[str, tuple[int, ...]] = B.SEEDS,
          backbones: dict[str, str] | None = None
          ) -> Callable[[str, dict[str, str]], list[Cell]]:
    """Every row x column x seed as a ``compare`` (``rows``: key -> (pe, extra options);
    ``backbones``: a row's own backbone where it is not ``backbone``)."""
    def cells(scale: str, checkpoints: dict[str, str]) -> list[Cell]:
        return [_compare(table, row, column, seed, scale, (backbones or {}).get(row, backbone),
                         pe, extra, checkpoint=_given(checkpoints, row, column))
                for column in columns for row, (pe, extra) in rows.items()
                for seed in seeds[scale]]
    return cells


_ENCODINGS = tuple(paper.MAIN_COMPARISON["CVRP-100"])[1:]      # after "reference"
_LAYER1 = ("CVRP-100", "VRPTW-100", "PDTSP-51")
_PDTSP = ("PDTSP-21", "PDTSP-51", "PDTSP-101")
_REF = (("reference", "Reference (PyVRP; paper: HGS / LKH)"),)


def _encoding_rows() -> tuple[tuple[str, str], ...]:
    from pyg_routing import encodings

    return tuple((name, encodings.info(name).title) for name in _ENCODINGS)


# --- Layer 2: NDS (Tab. 5, 6, 7) --------------------------------------------------------

_NDS_MAIN = tuple(f"{p.upper()}-{n}" for p in ("cvrp", "vrptw", "pcvrp")
                  for n in (500, 1000, 2000))
_SHIFTS = ("nds_low_capacity", "nds_clustered")
_NDS_ROW = {"none": "NDS", "ipexpe": "IPE+XPE", "sin": "SIN", "sisr": "SISRs"}


def _tab5(scale: str, checkpoints: dict[str, str]) -> list[Cell]:
    return [_compare("tab5", row, column, seed, scale, "nds", row,
                     checkpoint=_given(checkpoints, row, column))
            for column in _NDS_MAIN for row in ("none", "ipexpe") for seed in B.SEEDS[scale]]


def _tab6(scale: str, checkpoints: dict[str, str]) -> list[Cell]:
    cells = []
    for column in _SHIFTS:
        recipe = B.options("nds", "cvrp", 500, scale, "tab6")
        cells.append(Cell("tab6", "sisr", column, 0, (
            ("evaluate", "--backbone", "nds", "--policy", "sisr", *recipe,
             "--data.preset", column, "--test.exact", "false",
             "--reference.seconds", B.reference_seconds("nds", scale, 500), *_TAIL),)))
        cells += [_compare("tab6", row, column, seed, scale, "nds", row, preset=column,
                           problem="cvrp", paper_size=500,
                           extra=("--test.exact", "false"),
                           checkpoint=_given(checkpoints, row, column))
                  for row in ("none", "sin", "ipexpe") for seed in B.SEEDS[scale]]
    return cells


def _tab7(scale: str, checkpoints: dict[str, str]) -> list[Cell]:
    cells = []
    recipe = B.options("nds", "cvrp", 500, scale, "tab7")
    search = ("search", "--benchmark", "x", "--destroy", "policy", *recipe,
              *_split(B.X_SEARCH[scale]), "--out", "{cell}/search", "--no_progress")
    for row in ("none", "ipexpe"):
        for seed in B.SEEDS[scale]:
            given = _given(checkpoints, row, "X")
            if given is not None:
                cells.append(Cell("tab7", row, "X", seed, ((*search, "--checkpoint", given),)))
                continue
            train = ("train", *recipe, "--pe", row, "--seed", str(seed), "--out", "{cell}",
                     "--no_progress")
            cells.append(Cell("tab7", row, "X", seed,
                              (train, (*search, "--checkpoint", "{checkpoint}"))))
    return cells


def _nds_values(settings: dict[str, dict[str, object]], rows: tuple[str, ...]
                ) -> dict[tuple[str, str], dict[str, float | None]]:
    out: dict[tuple[str, str], dict[str, float | None]] = {}
    for column, entry in settings.items():
        for row in rows:
            key = entry["reference"] if row == "reference" else _NDS_ROW[row]
            if key in entry:
                obj, gap = entry[key]  # type: ignore[misc]
                out[(row, column)] = {"objective": obj, "gap_percent": gap}
    return out


def _tab5_paper() -> dict[tuple[str, str], dict[str, float | None]]:
    return _nds_values({f"{p.upper()}-{n}": v for (p, n), v in nds_paper.MAIN.items()},
                       ("reference", "none", "ipexpe"))


def _tab6_paper() -> dict[tuple[str, str], dict[str, float | None]]:
    return _nds_values(nds_paper.SHIFT, ("reference", "sisr", "none", "sin", "ipexpe"))


def _tab7_paper() -> dict[tuple[str, str], dict[str, float | None]]:
    return {(row, "X"): {"objective": None,
                         "gap_percent": nds_paper.X_AVERAGE_GAP[_NDS_ROW[row]]}
            for row in ("none", "ipexpe")}


def _tab1_paper() -> dict[tuple[str, str], dict[str, float | None]]:
    return {(k, "probe"): dict(v) for k, v in paper.ANISOMETRY.items()}


def _tab3_paper() -> dict[tuple[str, str], dict[str, float | None]]:
    return {(k, "CVRP-100"): dict(v) for k, v in paper.SPEARMAN.items()}


_SMALL = {"smoke": "smoke scale: toy budget, CVRP/VRPTW/PDTSP at 10 customers; proves the "
                   "pipeline, not the claim",
          "cpu": "cpu scale: 20 customers (PDTSP-21), one seed, a CPU budget (recipes "
                 "dact/*20 + cpu/dact)",
          "paper": "paper scale: the recipes dact/* (VRP-DACT's training, 1 000 test "
                   "instances), 3 seeds"}
_NDS = {"smoke": "smoke scale: toy NDS at 20 customers; proves the pipeline, not the claim",
        "cpu": "cpu scale: NDS's 100-customer recipes for every size, 10 s per instance, one "
               "seed",
        "paper": "paper scale: the recipes nds/* (the paper's hyper-parameters, 60/120/240 s "
                 "per instance, NDS's own test sets, 3 seeds)"}
_PROBE = {"smoke": "smoke scale: 4 instances, nearest-neighbour heuristic (not HGS)",
          "cpu": "cpu scale: 200 instances, PyVRP 0.5 s",
          "paper": "paper scale: 1 000 instances, PyVRP 1 s (the paper: LKH/HGS)"}

TABLES: dict[str, TableSpec] = {t.name: t for t in (
    TableSpec("tab1", "Anisometry of near-optimal routes (probe)", "tab:anisometry",
              tuple((k, k) for k in paper.ANISOMETRY), ("probe",), ("cv", "max_min", "mad"),
              _tab1, _tab1_paper, trains=False, note=_PROBE),
    TableSpec("tab2", "Controlled comparison, DACT backbone", "tab:main_comparison",
              (*_REF, *_encoding_rows()), _LAYER1, GAP,
              _grid("tab2", {e: (e, ()) for e in _ENCODINGS}, _LAYER1, "dact"),
              _gap_values(paper.MAIN_COMPARISON), note=_SMALL),
    TableSpec("tab3", "Spearman probes D1-D3 of the encodings", "tab:probing",
              tuple((k, k) for k in paper.SPEARMAN), ("CVRP-100",), ("D1", "D2", "D3"),
              _tab3, _tab3_paper, trains=False, note=_PROBE),
    TableSpec("tab4", "Model-agnostic validation, N2S backbone on PDTSP", "tab:model_agnostic",
              (*_REF, ("dact", "DACT (3k, its CPE)"), ("dact_cpe", "N2S (3k, its CPE)"),
               ("ipexpe", "HA-N2S (IPE + XPE)")), _PDTSP, GAP,
              _grid("tab4", {"dact": ("dact_cpe", ("--test.steps", "3000")),
                             "dact_cpe": ("dact_cpe", ()), "ipexpe": ("ipexpe", ())},
                    _PDTSP, "n2s", backbones={"dact": "dact"}),
              _gap_values(paper.MODEL_AGNOSTIC), checkpoints=True,
              note={"smoke": "smoke scale: toy N2S at 10 customers",
                    "cpu": "cpu scale: PDTSP-21/51/101 at a small budget, one seed",
                    "paper": "paper scale: the recipes n2s/* and dact/pdtsp*, 3k steps, 3 "
                             "seeds (the paper's reference: LKH; ours: PyVRP)"}),
    TableSpec("tab5", "NDS with IPE + XPE (CVRP, VRPTW, PCVRP)", "tab:sota_main",
              (*_REF, ("none", "NDS"), ("ipexpe", "IPE + XPE")), _NDS_MAIN, GAP, _tab5,
              _tab5_paper, checkpoints=True, note=_NDS),
    TableSpec("tab6", "NDS under distribution shift (CVRP-500)", "tab:generalization",
              (*_REF, ("sisr", "SISRs"), ("none", "NDS"), ("sin", "SIN"),
               ("ipexpe", "IPE + XPE")), _SHIFTS, GAP, _tab6, _tab6_paper,
              checkpoints=True, note=_NDS),
    TableSpec("tab7", "CVRPLib X with the CVRP-500 models (mean over instances)",
              "tab:cvrplib-x", (("none", "NDS"), ("ipexpe", "IPE + XPE")), ("X",), GAP,
              _tab7, _tab7_paper, checkpoints=True,
              note={**_NDS, "smoke": "smoke scale: toy NDS, X-n101-k25 only, 2 iterations; "
                                     "the paper's value: its average over 84 X instances"}),
    TableSpec("tab8", "Component ablation, CVRP-100, DACT (w/o IPE = XPE, w/o XPE = IPE)",
              "tab:ablation",
              (*_REF, ("none", "No PE"), ("ipe", "IPE only (distance phase)"),
               ("ipe_index", "IPE only (index phase i/L)"), ("xpe", "XPE only"),
               ("ipexpe", "IPE + XPE")), ("CVRP-100",), GAP,
              _grid("tab8", ABLATION_ROWS, ("CVRP-100",), "dact"),
              _gap_values(paper.ABLATION), note=_SMALL),
    TableSpec("tab9", "Per-node vs per-route XPE (IPE + XPE, DACT)", "tab:aggregation",
              (*_REF, *((a, "per-node (ours)" if a == "node" else f"per-route, {a}")
                        for a in AGGREGATIONS)), ("CVRP-100", "VRPTW-100"), GAP,
              _grid("tab9", {a: ("ipexpe", ("--encoding.xpe_aggregation", a))
                             for a in AGGREGATIONS},
                    ("CVRP-100", "VRPTW-100"), "dact"),
              _gap_values(paper.AGGREGATION), note=_SMALL),
    TableSpec("tab10", "Direction-aware vs direction-invariant IPE (IPE + XPE, DACT)",
              "tab:direction", (*_REF, ("aware", "IPE→ (direction-aware)"),
                                ("invariant", "IPE↔ (direction-invariant)")), _LAYER1, GAP,
              _grid("tab10", {d: ("ipexpe", ("--encoding.ipe_direction", d)) for d in DIRECTIONS},
                    _LAYER1, "dact"),
              _gap_values(paper.DIRECTION), note=_SMALL),
)}


def extract(cell: Cell, result: dict[str, Any]) -> Values:
    """The table entries of a cell from the result of its last command."""
    command = cell.steps[-1][0]
    if command == "compare":
        pe = cell.steps[-1][cell.steps[-1].index("--pe") + 1]
        # tab4's DACT row compares dact_cpe under the DACT backbone
        if cell.row == "dact":
            pe = "dact_cpe"
        out: Values = {}
        for r in result["rows"]:
            if r["encoding"] == "reference":
                out["reference"] = {"objective": r["objective"], "gap_percent": None}
            elif r["encoding"] == pe:
                out[cell.row] = {"objective": r["objective"],
                                 "gap_percent": r.get("gap_percent")}
        return out
    if command == "evaluate":
        objective = sum(r["objective"] for r in result["rows"]) / len(result["rows"])
        out = {cell.row: {"objective": objective, "gap_percent": result.get("gap_percent")}}
        if result.get("reference_cost") is not None:
            out["reference"] = {"objective": result["reference_cost"], "gap_percent": None}
        return out
    if command == "search":
        return {cell.row: {"objective": result["mean"]["objective"],
                           "gap_percent": result["mean"]["gap_percent"]}}
    if cell.steps[-1][1] == "anisometry":
        ours = result["ours"]
        return {cell.row: {"cv": ours["cv"], "max_min": ours["max_min"], "mad": ours["mad"]}}
    return {key: {m: result["ours"][name][m] for m in ("D1", "D2", "D3")}    # spearman
            for name, key in result["paper_rows"].items() if key is not None}
