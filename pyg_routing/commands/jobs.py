"""What ``search``, ``evaluate`` and ``compare`` share: the instances a test searches
(generated, CVRPLib X, or instance files), the jobs they become, the reference step
and the run of the jobs as Lightning predictions
(:mod:`pyg_routing.training.search_predictor`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyg_routing.errors import InstanceFormatError

if TYPE_CHECKING:   # the jobs' modules import torch; --help imports this one
    from pyg_routing.training.search_predictor import SearchJob

#: CVRPLib X lies on a 0..1000 grid; NDS's temperatures assume the unit square
X_SCALE = 1000.0
#: how the test commands spell the options of their worker processes
WORKER_FLAGS = {"accelerator": "--accelerator", "devices": "--workers",
                "num_nodes": "--num_nodes"}


@dataclass
class Generated:
    """Generated test instances: ``count`` of ``problem`` with ``num_customers``, seed
    ``seed``, ``generator`` the extra ``make_generator`` options (preset, exact, costs,
    open routes)."""

    problem: str
    num_customers: int
    count: int
    seed: int
    generator: dict[str, Any] = field(default_factory=dict)

    @property
    def preset(self) -> str:
        return self.generator.get("preset", "paper")

    def data_options(self) -> dict[str, Any]:
        """What a result records of the family (the cost model and open routes)."""
        return {k: v for k, v in self.generator.items() if k not in ("exact", "preset")}


@dataclass
class Workers:
    """Where the jobs run: ``workers`` processes per node on ``num_nodes`` machines, a
    trained policy on ``accelerator``, ``threads`` repair threads each (``None``: the
    cores / workers), the search seeded by ``seed`` (+ the job's index)."""

    accelerator: str = "auto"
    workers: int = 1
    num_nodes: int = 1
    threads: int | None = None
    seed: int = 0
    progress: bool = True


def generated_jobs(spec: Generated, size: int = 1) -> list[SearchJob]:
    """``spec``'s instances, ``size`` consecutive instances per job."""
    from pyg_routing.data.generators import make_generator
    from pyg_routing.training.search_predictor import SearchJob

    if spec.generator.get("exact") and spec.preset == "paper":
        raise ValueError("--test.exact replays NDS's random streams; it needs an nds "
                         "--data.preset")
    gen = make_generator(spec.problem, spec.num_customers, seed=spec.seed, **spec.generator)
    inst = gen.sample(spec.count)
    jobs = []
    for j, lo in enumerate(range(0, len(inst), size)):
        ids = range(lo, min(lo + size, len(inst)))
        jobs.append(SearchJob(j, lo, [f"{spec.problem}{spec.num_customers}-{i}" for i in ids],
                              inst[lo:lo + size], [inst[i] for i in ids], [None] * len(ids)))
    return jobs


def x_jobs(data_dir: str | None, names: str | None = None,
           max_customers: int | None = None) -> list[SearchJob]:
    """The CVRPLib X instances of ``data_dir`` (``names``: comma-separated, or ``paper``:
    the 84 of the paper's Tab. 7; at most ``max_customers``), in NDS's scale
    (coordinates and any explicit matrix / 1000), each with its best-known value
    (``bks.csv``, else its ``.sol`` file, else the paper's table; an instance none of
    them knows is refused by name)."""
    from pyg_routing.data.search_inputs import benchmark_search_instances
    from pyg_routing.training.search_predictor import SearchJob

    if names is not None and names.strip().lower() == "paper":
        from pyg_routing.probes.paper_nds_values import x_table

        names = ",".join(x_table())            # the paper's 84 instances (Tab. 7)
    chosen = None if names is None else [n.strip() for n in names.split(",") if n.strip()]
    found = benchmark_search_instances("x", data_dir, names=chosen,
                                       max_customers=max_customers, scale=X_SCALE)
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
        raise ValueError(f"no X instance with at most {max_customers} customers")
    return jobs


def instance_jobs(paths: Sequence[str], data_dir: str | None = None,
                  env: Any = None) -> list[SearchJob]:
    """One job per instance file (``--instance FILE``, repeatable: any format the
    readers know, or a bundled instance's name), in the file's own scale with its matrix,
    open routes and depots kept; the gap where a best-known value is known (``bks.csv``,
    a ``.sol`` file beside it, the paper's X table), else none. ``env``: the backbone's
    environment, whose variants each file must be (checked before anything runs or is
    written)."""
    from pyg_routing.data.search_inputs import load_search_instance
    from pyg_routing.training.search_predictor import SearchJob

    jobs: list[SearchJob] = []
    for path in paths:
        one = load_search_instance(path, data_dir=data_dir)
        if env is not None:
            env.check_variant(one.instances)
        jobs.append(SearchJob(len(jobs), len(jobs), [one.name], one.instances, [one.data],
                              [one.bks]))
    return jobs


def check_remove(jobs: list[SearchJob], remove: int, destroy: str, typed: bool,
                 where: str = "instances") -> None:
    """Refuse removal sets of ``remove`` customers larger than the smallest instance of
    ``jobs``: a removal size the user typed (``typed``), or the default size of a
    ``destroy`` that cannot remove more customers than there are (random, a trained
    policy; SISR's size is an average that its walk caps at the instance)."""
    customers = min(job.instances.num_nodes - 1 for job in jobs)
    if remove <= customers:
        return
    if typed:
        raise ValueError(f"--test.remove {remove} exceeds the {customers} customers of the "
                         f"{where}")
    if destroy != "sisr":
        raise ValueError(f"--test.remove: the {destroy} destroy removes {remove} customers "
                         f"per set by default, more than the {customers} customers of the "
                         f"{where}; pass --test.remove <= {customers}")


def add_reference(spec: Generated, rows: list[dict[str, Any]], solver: str, seconds: float,
                  root: str, progress: bool) -> None:
    """The reference cost of every generated instance (``solver`` for ``seconds`` each,
    solved once and cached under ``root``) and the gap to it, into ``rows``."""
    from pyg_routing.commands.train import reference_costs
    from pyg_routing.search import gap_percent

    extra = {k: v for k, v in spec.generator.items() if k != "preset"}
    ref = reference_costs(spec.problem, spec.num_customers, spec.count, spec.seed, seconds,
                          root, solver, preset=spec.preset, generator_kwargs=extra,
                          progress=progress)
    for row, target in zip(rows, ref.tolist()):
        row["target"] = target
        row["gap_percent"] = gap_percent(row["objective"], target)


def search_jobs(workers: Workers, jobs: list[SearchJob], search: Any, stop: Any, policy: Any,
                trained: bool, out: Path) -> tuple[list[dict[str, Any]] | None, dict[str, Any]]:
    """``search`` with ``policy`` until ``stop`` on every job, over ``workers``; a
    trained policy runs on ``workers.accelerator``, a baseline on the CPU. Returns the
    job results on rank 0 (else ``None``) and the workers' ``threads`` and the
    ``device`` type the jobs ran on."""
    from pyg_routing.training.fit import check_trainer
    from pyg_routing.training.search_predictor import SearchPredictor, run_jobs

    accelerator = workers.accelerator if trained else "cpu"
    check_trainer(accelerator, workers.workers, num_nodes=workers.num_nodes,
                  flags=WORKER_FLAGS)                                   # before writing
    threads = workers.threads or max(1, (os.cpu_count() or 1) // workers.workers)
    predictor = SearchPredictor(search, stop, policy, seed=workers.seed, threads=threads)
    done = run_jobs(jobs, predictor, out, accelerator=accelerator, devices=workers.workers,
                    num_nodes=workers.num_nodes, progress=workers.progress)
    device = done[0]["device"] if done else None          # where the jobs ran
    return done, {"threads": threads, "device": device}
