"""NDS's greedy repair (``pyg_routing.envs.deconstruction``): repairs per second on one
core, against the pure-Python reference of the same rules measured in the same run,
and the speed-up of two threads over solution slots.

Setting of NDS's own measurement: 200 removal sets, each a random seed customer and
its 14 nearest customers (ordered by distance), applied sequentially with simulated
annealing at T = 0.001, best of 5 repairs per set (so 1 000 repairs), starting from
an NDS start solution. CVRP: uniform instances with capacity 100 (N = 500) and 300
(N = 2000), as NDS; VRPTW and PCVRP: ``make_generator`` instances (their capacity
C(n) of App. F is larger than NDS's, so their tours are longer than in NDS's sets).

For scale, NDS's C++ on one core of the development machine (the NDS anchor):
CVRP 9.3 us/repair at N = 500 and 28.8 us at N = 2000; VRPTW-500 8.0 and PCVRP-500
6.0 on NDS's own test instances; PCVRP-2000 14.2 on a synthetic instance.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from pyg_routing.data.generators import (
    CVRPGenerator,
    PCVRPGenerator,
    calibrate_kappa,
    make_generator,
)
from pyg_routing.data.problems import capacity_for
from pyg_routing.envs.deconstruction import (
    ProblemArrays,
    apply_sets_sa,
    draw_uniforms,
    start_solutions,
)
from pyg_routing.envs.deconstruction import repair_reference as ref

RECREATE = 5


def nearest_sets(arrays: ProblemArrays, num_sets: int, size: int, rng) -> np.ndarray:
    """``[num_sets, size]``: a random seed customer and its ``size - 1`` nearest customers."""
    seeds = rng.integers(1, arrays.num_customers + 1, num_sets)
    rows = arrays.dist[0, seeds, 1:]                               # distances to customers
    return (np.argsort(rows, axis=1, kind="stable")[:, :size] + 1).astype(np.int32)


def instance(problem: str, n: int) -> ProblemArrays:
    if problem == "cvrp":
        gen = CVRPGenerator(n, seed=0, capacity=100 if n <= 500 else 300)
    elif problem == "pcvrp":
        # The generator's prize scale, calibrated on 8 instances instead of 128: the
        # default calibration takes many minutes at N = 2000.
        kappa = calibrate_kappa(n, "uniform", float(capacity_for(n)), num_instances=8)
        gen = PCVRPGenerator(n, seed=0, kappa=kappa)
    else:
        gen = make_generator(problem, n, seed=0)
    return ProblemArrays.from_instances(gen.sample(1))


def _timed(fn, cpu: bool = False) -> float:
    """Wall-clock seconds of ``fn()``, or the process's CPU seconds (``cpu``): on a
    machine shared with other jobs, a single thread's CPU time is the steadier measure."""
    clock = time.process_time if cpu else time.perf_counter
    t = clock()
    fn()
    return clock() - t


def measure(problem: str, n: int, num_sets: int, ref_sets: int, repeat: int) -> dict:
    arrays = instance(problem, n)
    numba.set_num_threads(1)
    start_s = _timed(lambda: start_solutions(arrays, np.zeros(1, np.int32), rng=0))
    start = start_solutions(arrays, np.zeros(1, np.int32), rng=0)
    rng = np.random.default_rng(1)
    sets = nearest_sets(arrays, num_sets, 15, rng)[None]           # [1, R, 15]
    u = draw_uniforms(rng, sets.shape[:2], 15, RECREATE)

    def ours(slots: int, threads: int, cpu: bool = False) -> float:
        """Seconds for the sets on ``slots`` copies of the start solution."""
        state = start.take(np.zeros(slots, np.int64))
        best = state.clone()
        numba.set_num_threads(threads)
        try:
            return _timed(lambda: apply_sets_sa(state, best, arrays, np.repeat(sets, slots, 0),
                                                np.repeat(u, slots, 0), 0.001, RECREATE), cpu)
        finally:
            numba.set_num_threads(1)

    two = min(2, numba.config.NUMBA_NUM_THREADS)
    runs: dict[tuple, list[float]] = {(1, 1, True): [], (1, 1, False): [], (2, 1, False): [],
                                      (2, two, False): []}
    for _ in range(repeat):          # interleaved rounds: a slow phase hits every runner
        for key in runs:
            runs[key].append(ours(*key))
    routes = start.to_routes()
    ref_s = _timed(lambda: ref.apply_sets_sa(arrays, routes, [0], sets[:, :ref_sets],
                                             u[:, :ref_sets], 0.001, RECREATE), cpu=True)
    us = min(runs[1, 1, True]) / (num_sets * RECREATE) * 1e6
    ref_us = ref_s / (ref_sets * RECREATE) * 1e6
    return {"us": us, "wall_us": min(runs[1, 1, False]) / (num_sets * RECREATE) * 1e6,
            "ref_us": ref_us, "per_s": 1e6 / us, "ratio": ref_us / us,
            "threads": min(runs[2, 1, False]) / min(runs[2, two, False]), "start_s": start_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--problems", nargs="+", default=["cvrp", "vrptw", "pcvrp"])
    parser.add_argument("--sets", type=int, default=200)
    parser.add_argument("--ref-sets", type=int, default=20,
                        help="sets the pure-Python reference repairs (it is slow)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    numba.set_num_threads(1)
    tiny = instance("cvrp", 10)                   # compile or load the kernels first
    apply_sets_sa(start_solutions(tiny, np.zeros(1, np.int32), rng=0),
                  start_solutions(tiny, np.zeros(1, np.int32), rng=0), tiny,
                  np.array([[[1, 2]]]), rng=0)
    print(f"NDS repair, {args.sets} sets x best of {RECREATE} (seed + 14 nearest), SA T = "
          f"0.001, one thread; reference on the first {args.ref_sets} sets")
    print("'us/repair', 'ref us': CPU time per repair (best of the rounds); 'wall us': "
          "wall-clock")
    print(f"'2 threads': speed-up of 2 threads on 2 slots ({numba.config.NUMBA_NUM_THREADS} "
          f"cores seen); 'start s': one NDS start solution, one thread")
    print(f"{'problem':<8}{'N':>6}{'us/repair':>11}{'wall us':>9}{'repairs/s':>11}"
          f"{'ref us':>9}{'ratio':>8}{'2 threads':>11}{'start s':>9}")
    for n in args.sizes:
        for problem in args.problems:
            r = measure(problem, n, args.sets, args.ref_sets, args.repeat)
            print(f"{problem:<8}{n:>6}{r['us']:>11.2f}{r['wall_us']:>9.2f}{r['per_s']:>11.0f}"
                  f"{r['ref_us']:>9.0f}{r['ratio']:>7.0f}x{r['threads']:>10.2f}x"
                  f"{r['start_s']:>9.2f}")


if __name__ == "__main__":
    main()
