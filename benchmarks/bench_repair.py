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
from _timing import best_of

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


def measure(problem: str, n: int, num_sets: int, ref_sets: int, repeat: int) -> dict:
    arrays = instance(problem, n)
    t = time.perf_counter()
    start = start_solutions(arrays, np.zeros(1, np.int32), rng=0)
    start_s = time.perf_counter() - t
    rng = np.random.default_rng(1)
    sets = nearest_sets(arrays, num_sets, 15, rng)[None]           # [1, R, 15]
    u = draw_uniforms(rng, sets.shape[:2], 15, RECREATE)

    def ours(slots: int = 1) -> None:
        """The 200 sets on ``slots`` copies of the start solution (one per slot)."""
        state = start.take(np.zeros(slots, np.int64))
        apply_sets_sa(state, state.clone(), arrays, np.repeat(sets, slots, 0),
                      np.repeat(u, slots, 0), 0.001, RECREATE)

    numba.set_num_threads(1)
    one = best_of(ours, repeat=repeat)
    routes = start.to_routes()
    t = time.perf_counter()
    ref.apply_sets_sa(arrays, routes, [0], sets[:, :ref_sets], u[:, :ref_sets], 0.001, RECREATE)
    ref_s = time.perf_counter() - t
    two_slots_one = best_of(lambda: ours(2), repeat=repeat)
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    two_slots_two = best_of(lambda: ours(2), repeat=repeat)
    numba.set_num_threads(1)
    us = one / (num_sets * RECREATE) * 1e6
    ref_us = ref_s / (ref_sets * RECREATE) * 1e6
    return {"us": us, "ref_us": ref_us, "per_s": 1e6 / us, "ratio": ref_us / us,
            "threads": two_slots_one / two_slots_two, "start_s": start_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--problems", nargs="+", default=["cvrp", "vrptw", "pcvrp"])
    parser.add_argument("--sets", type=int, default=200)
    parser.add_argument("--ref-sets", type=int, default=20,
                        help="sets the pure-Python reference repairs (it is slow)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"NDS repair, {args.sets} sets x best of {RECREATE} (seed + 14 nearest), SA T = "
          f"0.001, one thread; reference on the first {args.ref_sets} sets")
    print(f"{'problem':<8}{'N':>6}{'us/repair':>11}{'repairs/s':>11}{'ref us':>10}"
          f"{'ratio':>9}{'2 threads':>11}{'start s':>9}")
    for n in args.sizes:
        for problem in args.problems:
            r = measure(problem, n, args.sets, args.ref_sets, args.repeat)
            print(f"{problem:<8}{n:>6}{r['us']:>11.2f}{r['per_s']:>11.0f}{r['ref_us']:>10.0f}"
                  f"{r['ratio']:>8.0f}x{r['threads']:>10.2f}x{r['start_s']:>9.2f}")


if __name__ == "__main__":
    main()
