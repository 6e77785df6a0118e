"""What ``search``, ``evaluate`` and ``compare`` share: the instance options and their
checks, the jobs (generated instances or CVRPLib X), the reference step and the run of
jobs as Lightning predictions (:mod:`pyg_routing.training.search_predictor`)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyg_routing.commands.cost_options import COST_OPTIONS, add_cost_options, cost_kwargs
from pyg_routing.data.presets import PRESETS
from pyg_routing.errors import InstanceFormatError
from pyg_routing.search import gap_percent
from pyg_routing.training.fit import (
    check_trainer,
    count,
    given,
    refuse_given,
    seed_value,
)
from pyg_routing.training.search_predictor import SearchJob

#: CVRPLib X lies on a 0..1000 grid; NDS's temperatures assume the unit square
X_SCALE = 1000.0


def add_instance_options(p: argparse.ArgumentParser) -> None:
    """The seed, data family and benchmark options of ``search`` and ``evaluate``."""
    p.add_argument("--seed", type=seed_value, default=1234,
                   help="seed of the generated instances and of the search")
    p.add_argument("--preset", choices=tuple(PRESETS), default="paper",
                   help="data family of the generated instances (nds: NDS's test data)")
    p.add_argument("--exact", action="store_true",
                   help="nds presets: NDS's own test instances (its random streams)")
    add_cost_options(p)
    p.add_argument("--benchmark", type=str.lower, choices=("x",), default=None,
                   help="search CVRPLib X instead of generated instances")
    p.add_argument("--data-dir", default=None, help="folder of the benchmark files "
                   "(default: $PYG_ROUTING_DATA, else the bundled files)")
    p.add_argument("--names", default=None,
                   help="comma-separated benchmark instances (default: all)")
    p.add_argument("--max-customers", type=count(1), default=None,
                   help="benchmark instances with at most this many customers")


#: the options that select benchmark instances: refused without ``--benchmark``
BENCHMARK_OPTIONS = ("names", "max_customers", "data_dir")


def refuse_instance_options(args: argparse.Namespace, reference: Sequence[str]) -> None:
    """Refuse, naming it, an option of :func:`add_instance_options` (and the ``--problem``,
    ``--num-customers``, ``--instances`` and ``--reference`` options of ``search`` and
    ``evaluate``) that the instances asked for do not take: a benchmark selection
    without ``--benchmark``; the problem, size, data family, count or reference of
    generated instances with it (the gap is to the best-known values); the
    ``reference`` options (the reference's time limit) without a reference. ``--root``,
    a cache folder, is taken everywhere."""
    if args.benchmark:
        flag = given(args, "problem", "num_customers", "exact")
        if flag is not None:
            raise ValueError(f"{flag}: --benchmark x fixes the problem and the sizes: "
                             f"--problem, --num-customers and --exact do not apply")
        refuse_given(args, ("preset", "instances", *COST_OPTIONS),
                     "does not apply with --benchmark x (it searches CVRPLib's instances)")
        refuse_given(args, ("reference", *reference),
                     "does not apply with --benchmark x (the gap is to the best-known "
                     "values)")
        return
    refuse_given(args, BENCHMARK_OPTIONS, "applies to --benchmark x only (it selects "
                                          "benchmark instances)")
    if args.reference == "none":
        refuse_given(args, reference, "does not apply with --reference none (no reference "
                                      "is solved)")


def check_remove(args: argparse.Namespace, jobs: list[SearchJob], remove: int,
                 destroy: str) -> None:
    """Refuse removal sets of ``remove`` customers larger than the smallest instance of
    ``jobs``: a ``--remove`` the user gave, or the default size of a ``destroy`` that
    cannot remove more customers than there are (random, a trained policy; SISR's size
    is an average that its walk caps at the instance)."""
    customers = min(job.instances.num_nodes - 1 for job in jobs)
    if remove <= customers:
        return
    where = "smallest benchmark instance" if args.benchmark else "instances"
    if given(args, "remove"):
        raise ValueError(f"--remove {remove} exceeds the {customers} customers of the "
                         f"{where}")
    if destroy != "sisr":
        raise ValueError(f"--remove: the {destroy} destroy removes {remove} customers per "
                         f"set by default, more than the {customers} customers of the "
                         f"{where}; pass --remove <= {customers}")


def generated_jobs(args: argparse.Namespace, size: int = 1) -> list[SearchJob]:
    """``--instances`` instances of ``--problem``/``--preset`` (seed ``--seed``), ``size``
    consecutive instances per job."""
    from pyg_routing.data.generators import make_generator

    if args.exact and args.preset == "paper":
        raise ValueError("--exact replays NDS's random streams; it needs an nds preset")
    gen = make_generator(args.problem, args.num_customers, seed=args.seed, preset=args.preset,
                         **_generator_kwargs(args))
    inst = gen.sample(args.instances)
    jobs = []
    for j, lo in enumerate(range(0, len(inst), size)):
        ids = range(lo, min(lo + size, len(inst)))
        jobs.append(SearchJob(j, lo, [f"{args.problem}{args.num_customers}-{i}" for i in ids],
                              inst[lo:lo + size], [inst[i] for i in ids], [None] * len(ids)))
    return jobs


def data_options(args: argparse.Namespace) -> dict[str, Any]:
    """The cost model and open routes of the generated instances (what a result
    records; ``{}`` for the paper's Euclidean closed routes)."""
    return {k: v for k, v in _generator_kwargs(args).items() if k != "exact"}


def _generator_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """``make_generator`` options of the generated instances: ``--exact`` and the cost
    model / open routes (``--costs``, ``--grid``, ``--one-way``, ``--open-routes``, or
    ``compare``'s training family)."""
    out: dict[str, Any] = {"exact": True} if args.exact else {}
    out.update(getattr(args, "generator_kwargs", None) or {})
    out.update(cost_kwargs(args))
    return out


def add_reference(args: argparse.Namespace, rows: list[dict[str, Any]], limit: float) -> None:
    """The ``--reference`` cost of every generated instance (solved once, cached under
    ``--root``, ``limit`` seconds each) and the gap to it, into ``rows``."""
    from pyg_routing.commands.train import reference_costs

    ref = reference_costs(args.problem, args.num_customers, args.instances, args.seed, limit,
                          args.root, args.reference, preset=args.preset,
                          generator_kwargs=_generator_kwargs(args),
                          progress=not args.no_progress)
    for row, target in zip(rows, ref.tolist()):
        row["target"] = target
        row["gap_percent"] = gap_percent(row["objective"], target)


def x_jobs(args: argparse.Namespace) -> list[SearchJob]:
    """The CVRPLib X instances (``--names``, ``--max-customers``), in NDS's scale
    (coordinates and any explicit matrix / 1000), each with its best-known value
    (``bks.csv``, else its ``.sol`` file, else the paper's table; an instance none of
    them knows is refused by name)."""
    from pyg_routing.data.search_inputs import benchmark_search_instances

    names = None if args.names is None else [n.strip() for n in args.names.split(",")
                                             if n.strip()]
    found = benchmark_search_instances("x", args.data_dir, names=names,
                                       max_customers=args.max_customers, scale=X_SCALE)
    jobs: list[SearchJob] = []
    for one in found:
        if one.bks is None:
            raise InstanceFormatError(
                f"{one.path}: instance {one.name!r} has no best-known value: no entry in "
                f"{one.path.parent / 'bks.csv'}, no solution file ({one.path.stem}.sol) "
                f"and not in the paper's table of X instances")
        jobs.append(SearchJob(len(jobs), len(jobs), [one.name], one.instances, [one.data],
                              [one.bks]))
    if not jobs:
        raise ValueError(f"no X instance with at most {args.max_customers} customers")
    return jobs


def search_jobs(args: argparse.Namespace, jobs: list[SearchJob], search: Any, stop: Any,
                policy: Any, trained: bool, out: Path
                ) -> tuple[list[dict[str, Any]] | None, dict[str, Any]]:
    """``search`` with ``policy`` until ``stop`` on every job, over the workers that
    ``--devices``, ``--num-nodes`` and ``--threads`` ask for; a trained policy runs on
    ``--accelerator``, a baseline on the CPU. Returns the job results on rank 0 (else
    ``None``) and the workers' ``threads`` and ``device`` (type)."""
    from pyg_routing.training.search_predictor import SearchPredictor, run_jobs

    accelerator = args.accelerator if trained else "cpu"
    check_trainer(accelerator, args.devices, num_nodes=args.num_nodes)   # before writing
    threads = args.threads or max(1, (os.cpu_count() or 1) // args.devices)
    predictor = SearchPredictor(search, stop, policy, seed=args.seed, threads=threads)
    done = run_jobs(jobs, predictor, out, accelerator=accelerator, devices=args.devices,
                    num_nodes=args.num_nodes, progress=not args.no_progress)
    return done, {"threads": threads, "device": predictor.device.type}
