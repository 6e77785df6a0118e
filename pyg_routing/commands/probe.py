"""``pyg-routing probe {anisometry,entropy,spearman}``: the paper's probes on cached
reference solutions, printed beside the paper's numbers.

:func:`parse` reads ``probe KIND [options]``, :func:`run` returns the result and
:func:`render` the text table. Standalone: ``python -m pyg_routing.commands.probe ...``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from pyg_routing.commands.dataset import Parsed, add_data_options, data_kwargs
from pyg_routing.commands.grammar import (
    CommandParser,
    accepts,
    count,
    normalize,
    positive,
    seed_value,
    typed,
)
from pyg_routing.data.problems import PROBLEMS
from pyg_routing.errors import RoutingError
from pyg_routing.probes import definitions
from pyg_routing.probes import paper_values as paper

#: probe -> (summary, definition)
PROBES = {"anisometry": ("CV, max/min and residual MAD of routes (Tab. 1)",
                         definitions.ANISOMETRY),
          "entropy": ("depot-angle entropy per within-route position", definitions.ENTROPY),
          "spearman": ("Spearman probes D1-D3 of the encodings (Tab. 3)",
                       definitions.SPEARMAN)}


def _common_args(p: CommandParser) -> None:
    p.add_argument("--problem", choices=PROBLEMS, default="cvrp", help="routing problem")
    p.add_argument("--num_customers", type=count(1), default=100,
                   help="customers per instance")
    p.add_argument("--instances", dest="num_instances", type=count(1), default=1000,
                   help="number of instances (paper: 1000)")
    p.add_argument("--seed", type=seed_value, default=0, help="instance generator seed")
    p.add_argument("--distribution", choices=("uniform", "clustered"), default="uniform",
                   help="customer layout")
    p.add_argument("--solver", default="pyvrp",
                   help="reference solver: pyvrp (HGS, default), ortools, auto, or a quick "
                        "constructive heuristic (nearest_neighbor, sweep, insertion)")
    p.add_argument("--seconds", type=positive, default=1.0,
                   help="solver seconds per instance")
    p.add_argument("--workers", type=count(1), default=None,
                   help="solver processes (default: all)")
    add_data_options(p)
    p.add_argument("--root", default="data", help="dataset folder (solutions are cached)")
    p.add_argument("--no_progress", action="store_true", help="hide the solver progress bar")
    p.add_argument("--json", action="store_true", help="print a JSON object")


@accepts("even integer >= 2")
def _even_width(value: str) -> int:
    """An option type: an even integer >= 2 (the sinusoidal encodings' sine/cosine
    channel pairs)."""
    import argparse

    width = count(2)(value)
    if width % 2:
        raise argparse.ArgumentTypeError(f"must be an even integer >= 2, got {width}")
    return width


def parse(argv: Sequence[str]) -> Parsed:
    """``probe KIND [options]``."""
    import argparse

    if not argv or argv[0] in ("-h", "--help") or argv[0] not in PROBES:
        lines = ["usage: pyg-routing probe {" + ",".join(PROBES) + "} [options]", "",
                 "Run one of the paper's probes on cached reference solutions and print our "
                 "numbers beside the paper's.", ""]
        lines += [f"  {k:<11} {v[0]}" for k, v in PROBES.items()]
        if argv and argv[0] in ("-h", "--help"):
            print("\n".join(lines))
            raise SystemExit(0)
        shown = repr(argv[0]) if argv else "none"
        raise ValueError(f"the probe must be one of {', '.join(PROBES)}; got {shown}")
    kind = argv[0]
    p = CommandParser(prog=f"pyg-routing probe {kind}", description=PROBES[kind][1],
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    _common_args(p)
    if kind == "spearman":
        p.add_argument("--pairs", type=count(1), default=10**6,
                       help="same-route pairs, and as many cross-route pairs (paper: 10^6)")
        p.add_argument("--dim", type=_even_width, default=64,
                       help="encoding width (even: sine/cosine pairs)")
        p.add_argument("--encodings", choices=("paper", "builtin"), default="paper",
                       help="paper: the 14 encodings of pyg_routing.probes.representations; "
                            "builtin: IPE, XPE, IPE + XPE and index baselines from "
                            "pyg_routing.functional")
        p.add_argument("--probe_seed", type=seed_value, default=0, help="pair sampler seed")
        p.add_argument("--batch_size", type=count(1), default=64,
                       help="instances per encoder call")
    options = p.parse_args(list(argv[1:]))
    options.probe = kind
    return Parsed(options, typed(argv[1:]), "probe")


def _dataset(parsed: Parsed) -> tuple[Any, dict[str, Any]]:
    from pyg_routing.data.dataset import RoutingDataset

    args = parsed.options
    ds = RoutingDataset(args.root, args.problem, args.num_customers, args.num_instances,
                        seed=args.seed, solver=args.solver, time_limit=args.seconds,
                        distribution=args.distribution, num_workers=args.workers,
                        progress=not (args.no_progress or args.json),
                        generator_kwargs=data_kwargs(args, parsed.typed))
    info = {"path": ds.processed_paths[0], "problem": args.problem,
            "num_customers": args.num_customers, "num_instances": len(ds),
            "solver": args.solver, "time_limit": args.seconds,
            "mean_cost": ds.meta.get("summary", {}).get("mean_cost"),
            "mean_routes": ds.meta.get("summary", {}).get("mean_routes")}
    return ds, info


def run(parsed: Parsed) -> dict[str, Any]:
    """Run ``args.probe`` and return ``{"probe", "dataset", "definition", "ours",
    "paper", ...}`` (see :func:`render` for the text form).

    * anisometry: ``ours`` = :func:`~pyg_routing.probes.anisometry.anisometry`;
      ``paper`` = the matching Tab. 1 row (``None`` if the paper has none),
      ``paper_row`` its label, ``paper_table`` all of Tab. 1.
    * entropy: ``ours`` = :func:`~pyg_routing.probes.entropy.hierarchy_entropy`;
      ``paper`` = ``{"mean": 0.992, "min": 0.953, ...}``.
    * spearman: ``ours`` = ``{encoding: {"D1", "D2", "D3", "D3_ratio"}}``;
      ``paper`` = ``{encoding: Tab. 3 row or None}``, ``paper_table`` all of Tab. 3.
    """
    args = parsed.options
    ds, info = _dataset(parsed)
    out: dict[str, Any] = {"probe": args.probe, "dataset": info}
    if args.probe == "anisometry":
        row = paper.paper_problem_key(args.problem, args.num_customers)
        from pyg_routing.probes.anisometry import anisometry

        out.update(definition=definitions.ANISOMETRY, ours=anisometry(ds),
                   paper_row=row, paper=paper.ANISOMETRY.get(row),
                   paper_table=paper.ANISOMETRY)
    elif args.probe == "entropy":
        from pyg_routing.probes.entropy import hierarchy_entropy

        out.update(definition=definitions.ENTROPY, ours=hierarchy_entropy(ds),
                   paper={k: (list(v) if isinstance(v, tuple) else v)
                          for k, v in paper.HIERARCHY_ENTROPY.items()})
    else:
        from pyg_routing.probes.spearman import (
            builtin_encodings,
            depot_reference_variants,
            open_route_variants,
            paper_encodings,
            spearman_probe,
        )

        encoders = (paper_encodings(args.dim) if args.encodings == "paper"
                    else builtin_encodings(args.dim))
        if args.data.open_routes:  # the open-route phase against the closed formula
            encoders.update(open_route_variants(args.dim))
        if args.data.depots > 1:   # XPE's reference points (the multi-depot design)
            encoders.update(depot_reference_variants(args.dim))
        ours = spearman_probe(ds, encoders, num_pairs=args.pairs, seed=args.probe_seed,
                              batch_size=args.batch_size)
        # the paper probes one depot: its rows do not stand beside multi-depot numbers
        matched = {name: None if args.data.depots > 1 else paper.paper_key(name)
                   for name in ours}
        out.update(definition=definitions.SPEARMAN, encodings=args.encodings,
                   num_pairs=args.pairs, dim=args.dim, ours=ours,
                   paper_rows=matched,
                   paper={n: (paper.SPEARMAN[k] if k else None) for n, k in matched.items()},
                   paper_table=paper.SPEARMAN)
    return out


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}" if abs(x) < 1000 else f"{x:.4g}"
    return str(x)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [list(header)] + [[_fmt(c) for c in r] for r in rows]
    width = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, width))) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in width))
    return "\n".join(lines)


def render(result: dict[str, Any]) -> str:
    """The text report of :func:`run`: our numbers beside the paper's."""
    d = result["dataset"]
    head = (f"{result['probe']} probe: {d['problem']}-{d['num_customers']}, "
            f"{d['num_instances']} instances, solver {d['solver']} ({d['time_limit']} s), "
            f"mean cost {_fmt(d['mean_cost'], 4)}")
    ours, ref = result["ours"], result["paper"]
    if result["probe"] == "anisometry":
        ref = ref or {}
        rows = [("CV", ours["cv"], ref.get("cv")),
                ("max/min", ours["max_min"], ref.get("max_min")),
                ("MAD (depot visits in the fit)", ours["mad"], ref.get("mad")),
                ("MAD (customers only) *", ours["mad_customers"], ref.get("mad"))]
        body = _table(["metric (mean over routes)", "ours", f"paper {result['paper_row']}"],
                      rows)
        tail = ("* the paper does not say whether the depot visits enter the linear fit; "
                "its MAD is shown beside both readings.\n"
                f"{ours['num_routes']} routes with >= 2 customers "
                f"({_fmt(ours['mean_customers_per_route'], 2)} customers on average); "
                f"medians: CV {_fmt(ours['median']['cv'])}, max/min "
                f"{_fmt(ours['median']['max_min'])}, MAD {_fmt(ours['median']['mad'])}")
        full = _table(["paper Tab. 1", "CV", "max/min", "MAD"],
                      [(k, v["cv"], v["max_min"], v["mad"])
                       for k, v in result["paper_table"].items()])
        return "\n".join([head, "", body, "", tail, "", full])
    if result["probe"] == "entropy":
        rows = [(k, n, h) for k, n, h in zip(ours["positions"], ours["counts"],
                                             ours["per_k"])]
        body = _table(["k", "customers", "normalized entropy"], rows)
        summary = _table(["", "ours", "paper"],
                         [("mean over k", ours["mean"], ref["mean"]),
                          ("min over k", ours["min"], ref["min"])])
        note = (f"{ours['num_bins']} angle bins, pooled over instances; '-': fewer than "
                f"{ours['min_samples']} customers at k. The paper's values are over "
                f"CVRP-{{100,200,500}} and VRPTW-100 together.")
        return "\n".join([head, "", body, "", summary, "", note])
    rows = []
    for name, vals in ours.items():
        pv = ref.get(name) or {}
        rows.append((name, vals["D1"], vals["D2"], vals["D3"], vals["D3_ratio"],
                     pv.get("D1"), pv.get("D2"), pv.get("D3")))
    shown = {result["paper_rows"][n] for n in ours}
    for key, pv in result["paper_table"].items():
        if key not in shown:
            rows.append((f"{key} (not probed)", None, None, None, None,
                         pv["D1"], pv["D2"], pv["D3"]))
    body = _table(["encoding", "D1", "D2", "D3", "D3 ratio", "paper D1", "paper D2",
                   "paper D3"], rows)
    note = (f"{result['num_pairs']} same-route + {result['num_pairs']} cross-route pairs, "
            f"dim {result['dim']}, encodings: {result['encodings']}; definitions: "
            f"`pyg-routing probe spearman --help`.")
    return "\n".join([head, "", body, "", note])


def main(argv: Sequence[str] | None = None) -> int:
    """Standalone entry point: ``python -m pyg_routing.commands.probe <probe> ...``."""
    try:
        parsed = parse(normalize(list(sys.argv[1:] if argv is None else argv)))
        result = run(parsed)
    except (RoutingError, ValueError, FileNotFoundError) as exc:
        print(f"pyg-routing probe: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2) if parsed.options.json else render(result))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
