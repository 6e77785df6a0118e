"""The paper's probe numbers as data (Tab. 1, the hierarchy-entropy paragraph of
Sec. 3.1, and Tab. 3), so probe reports can print them beside ours.

Source: ``routing-pe-paper.tex`` (Sec. 3.1 "Anisometry" / "Hierarchy", Tab. 1
``tab:anisometry``; Sec. 5 "Probing the encodings", Tab. 3 ``tab:probing``).
``None`` marks an entry the paper prints as "-" (NoPE has no encoding).
"""

from __future__ import annotations

import re

#: Tab. 1: anisometry of near-optimal routes (1,000 instances, LKH/HGS solutions).
#: Keys: ``cv`` (coefficient of variation of consecutive edge lengths),
#: ``max_min`` (max-to-min edge ratio), ``mad`` (residual median absolute
#: deviation of a linear fit of d_i on i, in units of the mean edge).
ANISOMETRY: dict[str, dict[str, float]] = {
    "CVRP-100": {"cv": 0.81, "max_min": 26.6, "mad": 0.37},
    "CVRP-200": {"cv": 0.93, "max_min": 42.1, "mad": 0.44},
    "CVRP-500": {"cv": 1.12, "max_min": 72.3, "mad": 0.53},
    "VRPTW-100": {"cv": 0.78, "max_min": 24.0, "mad": 0.33},
    "PDTSP-51": {"cv": 0.78, "max_min": 68.9, "mad": 1.24},
}

#: Sec. 3.1 "Hierarchy": normalized entropy of the depot-angle distribution of the
#: customers at within-route position k, averaged over k = 2..15. The paper gives
#: one mean over CVRP-{100, 200, 500} and VRPTW-100 and the minimum over the whole
#: (problem, k) grid; it gives no per-problem or per-k values.
HIERARCHY_ENTROPY: dict[str, object] = {
    "mean": 0.992,
    "min": 0.953,
    "positions": (2, 15),
    "problems": ("CVRP-100", "CVRP-200", "CVRP-500", "VRPTW-100"),
}

#: Tab. 3: Spearman correlation between PE-induced pairwise distances and the
#: desiderata targets on CVRP-100 (10^6 node pairs over 1,000 HGS solutions).
SPEARMAN: dict[str, dict[str, float | None]] = {
    "NoPE": {"D1": None, "D2": None, "D3": None},
    "APE": {"D1": 0.002, "D2": -0.001, "D3": 0.003},
    "SIN": {"D1": -0.310, "D2": -0.319, "D3": 0.329},
    "RoPE": {"D1": -0.290, "D2": -0.125, "D3": 0.072},
    "RPE": {"D1": 0.007, "D2": 0.010, "D3": 0.001},
    "ALiBi": {"D1": -0.310, "D2": -0.319, "D3": 0.327},
    "Laplacian PE": {"D1": 0.715, "D2": 0.721, "D3": 0.359},
    "RWSE": {"D1": 0.090, "D2": 0.086, "D3": 0.138},
    "SPD": {"D1": 0.824, "D2": 0.830, "D3": 0.332},
    "DACT CPE": {"D1": 0.096, "D2": 0.096, "D3": 0.017},
    "CycleFormer PE": {"D1": 0.126, "D2": 0.085, "D3": 0.218},
    "IPE": {"D1": 0.934, "D2": 0.866, "D3": 0.229},
    "XPE": {"D1": 0.815, "D2": 0.806, "D3": 0.396},
    "IPE + XPE": {"D1": 0.877, "D2": 0.923, "D3": 0.384},
}

#: Extra spellings of Tab. 3 row names (after :func:`_norm`).
_ALIASES = {
    "none": "NoPE", "nope": "NoPE", "nopositionalencoding": "NoPE",
    "absolute": "APE", "learned": "APE", "learnable": "APE",
    "sinusoidal": "SIN", "sine": "SIN", "sinusoid": "SIN",
    "rotary": "RoPE", "relative": "RPE",
    "laplacian": "Laplacian PE", "lappe": "Laplacian PE", "lap": "Laplacian PE",
    "lpe": "Laplacian PE", "rwpe": "RWSE", "randomwalk": "RWSE",
    "shortestpath": "SPD", "spdbias": "SPD",
    "cpe": "DACT CPE", "dact": "DACT CPE", "dactcpe": "DACT CPE",
    "cycleformer": "CycleFormer PE", "circular": "CycleFormer PE",
    "ipexpe": "IPE + XPE", "ipe+xpe": "IPE + XPE", "hape": "IPE + XPE",
}


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9+]", "", name.lower())


def paper_key(name: str) -> str | None:
    """The Tab. 3 row an encoding name refers to (case, spaces, ``-``, ``_`` and a
    trailing parenthesized note such as ``" (geometric)"`` ignored; a trailing
    ``pe`` is optional), or ``None`` if it has no row."""
    by_norm = {_norm(k): k for k in SPEARMAN}
    key = _norm(re.sub(r"\s*\(.*\)\s*$", "", name))
    for cand in (key, key.removesuffix("pe"), key + "pe"):
        if cand in by_norm:
            return by_norm[cand]
        if cand in _ALIASES:
            return _ALIASES[cand]
    return None


def paper_problem_key(problem: str, num_customers: int) -> str:
    """Tab. 1 row label, e.g. ``("cvrp", 100) -> "CVRP-100"`` (PDTSP counts nodes:
    the paper's PDTSP-51 has 50 customers and a depot)."""
    n = num_customers + 1 if problem.lower() == "pdtsp" else num_customers
    return f"{problem.upper()}-{n}"




#: Tab. 2 (``tab:main_comparison``): DACT backbone, every encoding retrained with
#: the same budget; ``(objective, gap %)`` per setting and encoding (registry
#: names), the reference (``"reference"``: HGS, LKH for PDTSP) as ``(objective,
#: None)``. The paper's gap is the relative gap of the mean objectives
#: (17.42 / 15.58 - 1 = 11.81 %).
MAIN_COMPARISON: dict[str, dict[str, tuple[float, float | None]]] = {
    setting: {name: (row[2 * i], row[2 * i + 1]) for name, row in _rows.items()}
    for i, setting in enumerate(("CVRP-100", "VRPTW-100", "PDTSP-51"))
    for _rows in [{
        "reference": (15.58, None, 25.42, None, 6.87, None),
        "none": (17.42, 11.81, 29.99, 17.96, 7.95, 15.86),
        "ape": (16.34, 4.88, 27.05, 6.40, 7.20, 4.93),
        "sin": (16.45, 5.58, 27.34, 7.54, 7.27, 5.95),
        "rope": (16.42, 5.39, 27.22, 7.07, 7.24, 5.51),
        "rpe": (16.30, 4.62, 27.00, 6.20, 7.18, 4.63),
        "alibi": (16.40, 5.26, 27.30, 7.39, 7.26, 5.80),
        "lap": (15.91, 2.12, 26.55, 4.43, 7.07, 3.06),
        "rwse": (16.06, 3.08, 26.79, 5.38, 7.13, 3.94),
        "spd": (15.86, 1.80, 26.41, 3.88, 7.05, 2.74),
        "dact_cpe": (15.95, 2.37, 26.58, 4.55, 7.05, 2.84),
        "cycleformer": (15.94, 2.31, 26.55, 4.43, 7.05, 2.74),
        "ipe": (15.81, 1.48, 26.32, 3.53, 7.01, 2.16),
        "xpe": (15.84, 1.67, 26.27, 3.33, 7.02, 2.30),
        "ipexpe": (15.76, 1.16, 26.18, 2.97, 6.99, 1.87),
    }]
}


#: Tab. 4 (``tab:model_agnostic``): PDTSP with the N2S backbone, ``(objective, gap %)``
#: per setting; keys: ``reference`` (LKH, 10k trials), ``dact`` (the DACT backbone, 3k
#: steps), ``dact_cpe`` (N2S as released: its own CPE, 3k steps) and ``ipexpe`` (HA-N2S).
MODEL_AGNOSTIC: dict[str, dict[str, tuple[float, float | None]]] = {
    "PDTSP-21": {"reference": (4.563, 0.00), "dact": (4.564, 0.03),
                 "dact_cpe": (4.565, 0.05), "ipexpe": (4.564, 0.03)},
    "PDTSP-51": {"reference": (6.862, 0.00), "dact": (7.057, 2.83),
                 "dact_cpe": (7.027, 2.40), "ipexpe": (6.997, 1.96)},
    "PDTSP-101": {"reference": (9.428, 0.00), "dact": (10.195, 8.13),
                  "dact_cpe": (9.846, 4.44), "ipexpe": (9.701, 2.89)},
}

#: Tab. 8 (``tab:ablation``): component ablation, CVRP-100, DACT; ``(objective, gap %)``.
#: ``ipe_index``: IPE with the index phase i / L instead of the distance phase. The
#: paper's "w/o IPE" and "w/o XPE" rows repeat ``xpe`` and ``ipe``.
ABLATION: dict[str, dict[str, tuple[float, float | None]]] = {
    "CVRP-100": {"none": (17.42, 11.81), "ipe": (15.81, 1.48), "ipe_index": (16.18, 3.85),
                 "xpe": (15.84, 1.67), "ipexpe": (15.76, 1.16)},
}

#: Tab. 9 (``tab:aggregation``): per-route XPE aggregations against per-node XPE
#: (``node``, the method), IPE + XPE under DACT; ``(objective, gap %)``.
AGGREGATION: dict[str, dict[str, tuple[float, float | None]]] = {
    "CVRP-100": {"mean": (15.83, 1.61), "circular_mean": (15.82, 1.54),
                 "demand_mean": (15.83, 1.61), "median": (15.84, 1.67),
                 "midpoint": (15.85, 1.73), "node": (15.76, 1.16)},
    "VRPTW-100": {"mean": (26.30, 3.46), "circular_mean": (26.27, 3.34),
                  "demand_mean": (26.31, 3.50), "median": (26.32, 3.54),
                  "midpoint": (26.34, 3.62), "node": (26.18, 2.97)},
}

#: Tab. 10 (``tab:direction``): direction-aware against direction-invariant IPE (IPE +
#: XPE under DACT); ``(objective, gap %)``.
DIRECTION: dict[str, dict[str, tuple[float, float | None]]] = {
    "CVRP-100": {"aware": (15.78, 1.28), "invariant": (15.76, 1.16)},
    "VRPTW-100": {"aware": (26.18, 2.97), "invariant": (26.45, 4.04)},
    "PDTSP-51": {"aware": (6.99, 1.87), "invariant": (7.12, 3.71)},
}


__all__ = ["ABLATION", "AGGREGATION", "ANISOMETRY", "DIRECTION", "HIERARCHY_ENTROPY",
           "MAIN_COMPARISON", "MODEL_AGNOSTIC", "SPEARMAN", "paper_key", "paper_problem_key"]
