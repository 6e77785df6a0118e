"""The Lightning side of ``pyg-routing evaluate`` and ``search``: any search of the
search seam (:mod:`pyg_routing.search`) over jobs, one job per ``predict_step``, and a
writer that collects every worker's results (Lightning does not gather predictions
across processes).

A job is a batch of instances searched together under one budget: all the generated
instances of a step backbone (one batched search), or one instance (a backbone whose
budget is per instance, as NDS's time limit; and every benchmark instance, whose sizes
differ). ``--devices`` and ``--num-nodes`` spread the jobs over worker processes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import BasePredictionWriter
from torch import nn

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.routing_data import RoutingData
from pyg_routing.search import (
    DestroyRepairSearch,
    MaxIterations,
    Search,
    StoppingCriterion,
    gap_percent,
)


@dataclass
class SearchJob:
    """Instances searched together.

    Attributes:
        index: position in the run (seeds the search: ``seed + index``).
        first: the run-wide index of the job's first instance.
        names: instance names for the table.
        instances: the batch, in the search's scale.
        data: per instance, what its routes are costed and checked on (X: original
            coordinates with CVRPLib's rounding).
        targets: per instance, the reference cost or BKS of the gap (``None``: none).
    """

    index: int
    first: int
    names: list[str]
    instances: RoutingInstances
    data: list[RoutingData]
    targets: list[float | None]


def first_item(batch: list[SearchJob]) -> SearchJob:
    """The loader's collate: one job per step (a module-level function, so spawned
    workers can unpickle it)."""
    return batch[0]


def warm_up_search(search: Search) -> Search:
    """The search of the untimed warm-up iteration: ``search`` itself, but a
    destroy-and-repair search with one slot and at most 8 removal sets (the same
    kernels and network, about a tenth of NDS's start solutions and first iteration:
    0.2 s instead of 1-2 s at CVRP-500 on one core)."""
    if isinstance(search, DestroyRepairSearch):
        return replace(search, augment=1, rollouts=min(search.rollouts, 8))
    return search


class SearchPredictor(L.LightningModule):
    """Runs ``search`` with ``policy`` until ``stop`` on one :class:`SearchJob` per
    ``predict_step``. The routes are checked (:meth:`RoutingData.check`) and costed on
    the job's ``data``.

    Args:
        search: a search of :mod:`pyg_routing.search`.
        stop: the budget of every job (a stopping criterion).
        policy: what fills the search's policy slot: a trained policy (a submodule:
            Lightning moves it to the worker's device), a non-learned baseline (e.g.
            a destroy provider) or ``None`` (random moves).
        seed: the search of job ``i`` is seeded with ``seed + i`` (independent of the
            worker that runs it).
        threads: numba threads of this worker's repairs (``None``: numba's default).
    """

    def __init__(self, search: Search, stop: StoppingCriterion, policy: Any = None,
                 seed: int = 0, threads: int | None = None) -> None:
        super().__init__()
        self.search, self.stop, self.seed, self.threads = search, stop, seed, threads
        if isinstance(policy, nn.Module):
            self.policy = policy               # a submodule: on the worker's device
        else:
            self.baseline = policy
        self._warm = False

    def searcher(self) -> Any:
        """What the search's policy slot gets."""
        return self.policy if hasattr(self, "policy") else self.baseline

    def on_predict_start(self) -> None:
        if self.threads is not None:
            import numba

            numba.set_num_threads(max(1, min(self.threads, numba.config.NUMBA_NUM_THREADS)))

    def predict_step(self, job: SearchJob, batch_idx: int = 0) -> dict[str, Any]:
        instances = job.instances.to(self.device)
        if not self._warm:
            # One untimed iteration first: loading (or compiling) kernels and the first
            # network call would otherwise come out of the first job's budget.
            warm_up_search(self.search).run(instances[:1], self.searcher(), MaxIterations(1),
                                            seed=0)
            self._warm = True
        res = self.search.run(instances, self.searcher(), self.stop, seed=self.seed + job.index)
        rows = []
        for i, (name, data, target) in enumerate(zip(job.names, job.data, job.targets)):
            solution = RoutingData.from_routes(data, res.routes[i],
                                               None if res.depots is None else res.depots[i])
            solution.check()
            cost = float(solution.cost())
            rows.append({
                "index": job.first + i, "instance": name,
                "customers": data.num_nodes - data.depot_count,
                "target": target, "objective": cost,
                "search_objective": float(res.cost[i]),
                "start_objective": float(res.initial_cost[i]), "iterations": res.iterations,
                "seconds": res.seconds, "start_seconds": res.start_seconds,
                "accepted": res.accepted, "routes": len(res.routes[i]),
                "gap_percent": None if target is None else gap_percent(cost, target),
                "solution": [list(map(int, route)) for route in res.routes[i]],
                **({} if res.depots is None else {"depots": res.depots[i]})})
        # the job's means in the search's own dtype (a batched search's own numbers)
        return {"job": job.index, "rows": rows, "count": len(rows),
                "cost": float(res.cost.mean()), "initial_cost": float(res.initial_cost.mean()),
                "seconds": res.seconds, "iterations": res.iterations,
                # read here: Lightning moves the module back to the CPU when predict ends
                "device": self.device.type}


class RowWriter(BasePredictionWriter):
    """Writes each worker's job results to ``<folder>/rows_rank<r>.json`` when it is
    done."""

    def __init__(self, folder: Path) -> None:
        super().__init__(write_interval="epoch")
        self.folder = Path(folder)

    def write_on_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule,
                           predictions: Any, batch_indices: Any) -> None:
        path = self.folder / f"rows_rank{trainer.global_rank}.json"
        path.write_text(json.dumps(_flatten(predictions)))


def _flatten(predictions: Any) -> list[dict[str, Any]]:
    if isinstance(predictions, dict):
        return [predictions]
    out: list[dict[str, Any]] = []
    for p in predictions or []:
        out.extend(_flatten(p))
    return out


def read_jobs(folder: Path, expected: int) -> list[dict[str, Any]]:
    """The job results every worker wrote, in job order, each job once (a distributed
    sampler may hand a job to two workers to even out their counts); the rank files
    are removed."""
    jobs: dict[int, dict[str, Any]] = {}
    for path in sorted(Path(folder).glob("rows_rank*.json")):
        for job in json.loads(path.read_text()):
            jobs.setdefault(job["job"], job)
        path.unlink()
    missing = sorted(set(range(expected)) - set(jobs))
    if missing:
        raise RuntimeError(f"the search workers returned no result for job(s) {missing}")
    return [jobs[i] for i in range(expected)]


def run_jobs(jobs: list[SearchJob], predictor: SearchPredictor, out: Path, *,
             accelerator: str = "cpu", devices: int = 1, num_nodes: int = 1,
             progress: bool = True) -> list[dict[str, Any]] | None:
    """Search every job (Lightning ``predict``, DDP over ``devices`` x ``num_nodes``
    workers); the job results in order on rank 0, ``None`` on the other ranks."""
    from torch.utils.data import DataLoader

    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("rows_rank*.json"):
        old.unlink()
    from pyg_routing.training.fit import quiet_lightning, shows_progress

    with quiet_lightning():
        trainer = L.Trainer(accelerator=accelerator, devices=devices, num_nodes=num_nodes,
                            logger=False, enable_checkpointing=False,
                            enable_model_summary=False,
                            enable_progress_bar=shows_progress(progress),
                            callbacks=[RowWriter(out)])
        loader = DataLoader(jobs, batch_size=1, shuffle=False, collate_fn=first_item)
        trainer.predict(predictor, dataloaders=loader, return_predictions=False)
    if trainer.world_size > 1:
        trainer.strategy.barrier()        # every worker has written its results
    if trainer.global_rank != 0:
        return None                       # rank 0 (on a shared file system) reports
    return read_jobs(out, len(jobs))
