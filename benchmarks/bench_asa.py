"""NDS's augmented simulated annealing (``pyg_routing.search.DestroyRepairSearch``): search
iterations per second at N = 500 with 8 augmentations x 200 removal sets (random
destroy, best of 5 repairs per set, so 8 000 repairs per iteration), with 1 thread
(the baseline) and with every core, measured in the same run; plus where an
iteration's time goes (destroy, repair, sync) and the start solutions' share.

Instances: NDS's CVRP-500 test distribution (``--preset nds``: uniform, capacity 100).
For scale, NDS's C++ on one core would need about 74 ms per iteration here (9.3 us per
repair, the NDS anchor): about 13.5 iterations per second.
"""

from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np

from pyg_routing.data.generators import make_generator
from pyg_routing.envs.deconstruction import (
    ProblemArrays,
    RandomDestroy,
    SISRDestroy,
    apply_sets_sa,
    start_solutions,
)
from pyg_routing.search import DestroyRepairSearch, MaxIterations, MaxRuntime, sync_slots


def iterations_per_second(arrays, instances, destroy, threads: int, seconds: float,
                          seed: int) -> tuple[float, float]:
    """``(iterations/s, start seconds)`` of one timed search with ``threads`` threads."""
    numba.set_num_threads(threads)
    res = DestroyRepairSearch().run(instances, destroy, MaxRuntime(seconds), seed=seed,
                                    arrays=arrays)
    searching = res.seconds - res.start_seconds
    return res.iterations / searching, res.start_seconds


def breakdown(arrays, destroy, threads: int, iterations: int = 10) -> dict[str, float]:
    """Milliseconds per iteration in each part of the loop."""
    numba.set_num_threads(threads)
    rng = np.random.default_rng(0)
    state = start_solutions(arrays, np.zeros(8, np.int32), rng=rng)
    best = state.clone()
    parts = {"destroy": 0.0, "repair": 0.0, "sync": 0.0}
    for _ in range(iterations):
        t = time.perf_counter()
        sets = destroy.propose(state, arrays, 200, rng)
        sets = sets[..., :max(1, int((sets >= 0).sum(-1).max()))]
        parts["destroy"] += time.perf_counter() - t
        t = time.perf_counter()
        apply_sets_sa(state, best, arrays, sets, None, 0.01, 5, rng)
        parts["repair"] += time.perf_counter() - t
        t = time.perf_counter()
        sync_slots(state, 8, state.cost.reshape(1, 8).min(1) + 0.15, rng)
        parts["sync"] += time.perf_counter() - t
    return {k: 1e3 * v / iterations for k, v in parts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--customers", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=10.0, help="time of each timed search")
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved rounds (best of), so load drift hits every row")
    args = parser.parse_args()
    cores = numba.config.NUMBA_NUM_THREADS
    instances = make_generator("cvrp", args.customers, seed=1234, preset="nds").sample(1)
    arrays = ProblemArrays.from_instances(instances)
    destroys = {"random": RandomDestroy(15), "sisr": SISRDestroy(15)}
    # compile (or load) every kernel once
    for d in destroys.values():
        DestroyRepairSearch(rollouts=4).run(instances, d, MaxIterations(1), arrays=arrays)
    threads = sorted({1, cores})
    best: dict[tuple[str, int], float] = {}
    start: dict[int, float] = {}
    for r in range(args.rounds):
        for name, d in destroys.items():
            for t in threads:
                rate, s = iterations_per_second(arrays, instances, d, t, args.seconds, seed=r)
                best[name, t] = max(best.get((name, t), 0.0), rate)
                start[t] = min(start.get(t, np.inf), s)
    print(f"ASA, CVRP-{args.customers} (NDS preset), 8 slots x 200 sets x 5 repairs per "
          f"iteration, {args.seconds:g} s searches, best of {args.rounds} interleaved rounds, "
          f"{os.cpu_count()} cores")
    print(f"{'destroy':8s} {'threads':>7s} {'it/s':>8s} {'repairs/s':>10s} {'vs 1 thread':>12s}")
    for (name, t), rate in sorted(best.items()):
        print(f"{name:8s} {t:7d} {rate:8.2f} {rate * 8000:10.0f} "
              f"{rate / best[name, 1]:11.2f}x")
    for t in threads:
        print(f"start solutions (8 slots), {t} thread(s): {start[t]:.2f} s")
    for name, d in destroys.items():
        parts = breakdown(arrays, d, cores)
        total = sum(parts.values())
        print(f"{name}: ms per iteration ({cores} threads): " + ", ".join(
            f"{k} {v:.1f} ({100 * v / total:.0f} %)" for k, v in parts.items()))


if __name__ == "__main__":
    main()
