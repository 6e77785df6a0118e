"""The Lightning side of ``pyg-routing search``: one instance per ``predict_step``, and a
writer that collects every worker's rows (Lightning does not gather predictions
across processes)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import BasePredictionWriter

from pyg_routing.data.routing_data import RoutingData
from pyg_routing.search import gap_percent


class SearchPredictor(L.LightningModule):
    """Runs a :class:`~pyg_routing.search.DestroyRepairSearch` with ``destroy`` (or
    ``policy``) until ``stop`` on one :class:`~pyg_routing.training.search.SearchJob`
    per ``predict_step`` and returns its table row. The routes are checked
    (:meth:`RoutingData.check`) and costed on the job's ``data``.

    Args:
        search: the search's settings.
        stop: the budget of every instance (a stopping criterion).
        destroy: a :class:`~pyg_routing.envs.deconstruction.DestroyProvider`.
        seed: the search of job ``i`` is seeded with ``seed + i`` (independent of the
            worker that runs it).
        threads: numba threads of this worker's repairs (``None``: numba's default).
        policy: a trained NDS policy instead of ``destroy``: a submodule (Lightning moves
            it to the worker's device), wrapped per instance in a
            :class:`~pyg_routing.envs.deconstruction.PolicyDestroy` removing
            ``search.remove`` customers per set.
    """

    def __init__(self, search: Any, stop: Any, destroy: Any = None, seed: int = 0,
                 threads: int | None = None, policy: Any = None) -> None:
        super().__init__()
        if (destroy is None) == (policy is None):
            raise ValueError("give a destroy provider or a policy (exactly one)")
        self.search, self.stop, self.destroy = search, stop, destroy
        self.seed, self.threads, self.policy = seed, threads, policy
        self._warm = False

    @property
    def destroy_name(self) -> str:
        if self.policy is None:
            return repr(self.destroy)
        return f"PolicyDestroy(k={self.search.remove}, {self.policy!r})"

    def on_predict_start(self) -> None:
        if self.threads is not None:
            import numba

            numba.set_num_threads(max(1, min(self.threads, numba.config.NUMBA_NUM_THREADS)))

    def predict_step(self, job: Any, batch_idx: int = 0) -> dict[str, Any]:
        from pyg_routing.search import MaxIterations

        destroy = self.search.destroy_of(self.destroy if self.policy is None else self.policy,
                                         job.instances)
        if not self._warm:
            # One untimed iteration first: loading the compiled kernels and the first
            # network call would otherwise come out of the first instance's time limit.
            replace(self.search, rollouts=2).run(job.instances, destroy, MaxIterations(1),
                                                 seed=0)
            self._warm = True
        res = self.search.run(job.instances, destroy, self.stop, seed=self.seed + job.index)
        solution = RoutingData.from_routes(job.data, res.routes[0])
        solution.check()
        cost = float(solution.cost())
        row = {"index": job.index, "instance": job.name, "customers": job.data.num_nodes - 1,
               "target": job.target, "objective": cost, "search_objective": float(res.cost[0]),
               "start_objective": float(res.initial_cost[0]), "iterations": res.iterations,
               "seconds": res.seconds, "start_seconds": res.start_seconds,
               "accepted": res.accepted, "routes": len(res.routes[0])}
        row["gap_percent"] = None if job.target is None else gap_percent(cost, job.target)
        return row


class RowWriter(BasePredictionWriter):
    """Writes each worker's rows to ``<folder>/rows_rank<r>.json`` when it is done."""

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


def read_rows(folder: Path, expected: int) -> list[dict[str, Any]]:
    """The rows every worker wrote, in job order, each job once (a distributed sampler
    may hand a job to two workers to even out their counts); the rank files are
    removed."""
    rows: dict[int, dict[str, Any]] = {}
    for path in sorted(Path(folder).glob("rows_rank*.json")):
        for row in json.loads(path.read_text()):
            rows.setdefault(row["index"], row)
        path.unlink()
    missing = sorted(set(range(expected)) - set(rows))
    if missing:
        raise RuntimeError(f"the search workers returned no result for job(s) {missing}")
    return [rows[i] for i in range(expected)]
