"""The paper's Layer-2 (NDS) numbers as data, so ``pyg-routing search`` prints them beside
ours: Tab. 5 (``tab:sota_main``), Tab. 6 (``tab:generalization``) and Tab. 7
(``tab:cvrplib-x``, per instance, bundled as ``data/bundled/paper/tab_cvrplib_x.csv``).

Objectives are the paper's: for PCVRP, distance plus UNcollected prizes (NDS's
convention), which is the library's objective (distance minus collected prizes) plus
the sum of all prizes. Gaps are to the paper's reference (HGS for CVRP, PyVRP-HGS for
VRPTW and PCVRP); times are per instance.
"""

from __future__ import annotations

import csv
from functools import cache

#: Tab. 5: ``(problem, customers) -> {method: (objective, gap %)}`` (reference gap None)
#: with the time limit in seconds, on NDS's test sets (128 CVRP-500, 100 CVRP-1000/2000,
#: 250 VRPTW / PCVRP instances).
MAIN: dict[tuple[str, int], dict[str, object]] = {
    ("cvrp", 500): {"reference": "HGS", "seconds": 60, "HGS": (36.66, None),
                    "NDS": (36.57, -0.20), "IPE+XPE": (36.54, -0.30)},
    ("cvrp", 1000): {"reference": "HGS", "seconds": 120, "HGS": (41.51, None),
                     "NDS": (41.11, -0.90), "IPE+XPE": (41.05, -1.11)},
    ("cvrp", 2000): {"reference": "HGS", "seconds": 240, "HGS": (57.38, None),
                     "NDS": (56.00, -2.34), "IPE+XPE": (55.98, -2.45)},
    ("vrptw", 500): {"reference": "PyVRP-HGS", "seconds": 60, "PyVRP-HGS": (49.01, None),
                     "NDS": (47.94, -2.17), "IPE+XPE": (47.90, -2.27)},
    ("vrptw", 1000): {"reference": "PyVRP-HGS", "seconds": 120, "PyVRP-HGS": (90.35, None),
                      "NDS": (87.54, -3.14), "IPE+XPE": (87.45, -3.21)},
    ("vrptw", 2000): {"reference": "PyVRP-HGS", "seconds": 240, "PyVRP-HGS": (173.46, None),
                      "NDS": (167.48, -3.50), "IPE+XPE": (166.80, -3.84)},
    ("pcvrp", 500): {"reference": "PyVRP-HGS", "seconds": 60, "PyVRP-HGS": (44.97, None),
                     "NDS": (43.12, -4.12), "IPE+XPE": (43.13, -4.09)},
    ("pcvrp", 1000): {"reference": "PyVRP-HGS", "seconds": 120, "PyVRP-HGS": (84.91, None),
                      "NDS": (80.99, -4.71), "IPE+XPE": (80.77, -4.87)},
    ("pcvrp", 2000): {"reference": "PyVRP-HGS", "seconds": 240, "PyVRP-HGS": (165.56, None),
                      "NDS": (158.09, -4.60), "IPE+XPE": (157.37, -4.94)},
}

#: Tab. 6: CVRP-500 under distribution shift (our presets), gaps to HGS.
SHIFT: dict[str, dict[str, object]] = {
    "nds_low_capacity": {"reference": "HGS", "seconds": 60, "HGS": (91.73, None),
                         "SISRs": (91.34, -0.38), "NDS": (91.15, -0.59),
                         "SIN": (91.08, -0.70), "IPE+XPE": (91.04, -0.76)},
    "nds_clustered": {"reference": "HGS", "seconds": 60, "HGS": (44.53, None),
                      "SISRs": (44.31, -0.49), "NDS": (44.29, -0.54),
                      "SIN": (44.25, -0.63), "IPE+XPE": (44.22, -0.70)},
}

#: Tab. 7: the average gaps to BKS the paper states (over its 84 X instances, 60 s each,
#: the CVRP-500 checkpoints); the mean of its per-instance rows is 4.127 / 2.842.
X_AVERAGE_GAP = {"NDS": 4.110, "IPE+XPE": 2.828}


@cache
def x_table() -> dict[str, dict[str, float]]:
    """Tab. 7 per instance: ``name -> {bks, nds_objective, nds_gap_percent,
    ipexpe_objective, ipexpe_gap_percent}``."""
    from pyg_routing.data.benchmarks import PAPER_X_TABLE  # PyG: not for --help

    with PAPER_X_TABLE.open() as f:
        return {row.pop("instance"): {k: float(v) for k, v in row.items()}
                for row in csv.DictReader(f)}


def setting_values(problem: str, num_customers: int, preset: str) -> dict[str, object] | None:
    """The Tab. 5 / Tab. 6 entry of a generated setting (``None``: not in the paper)."""
    if preset == "nds":
        return MAIN.get((problem, num_customers))
    if preset in SHIFT and (problem, num_customers) == ("cvrp", 500):
        return SHIFT[preset]
    return None


def caption(values: dict[str, object], table: str) -> str:
    """One line: the paper's methods with objective and gap."""
    parts = []
    for method, value in values.items():
        if method in ("reference", "seconds"):
            continue
        obj, gap = value
        parts.append(f"{method} {obj:.2f}" + ("" if gap is None else f" ({gap:+.2f} %)"))
    return f"Paper ({table}, {values['seconds']} s per instance): " + ", ".join(parts)
