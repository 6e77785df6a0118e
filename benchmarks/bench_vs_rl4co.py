"""DACT on TSP-50 (embed 64, 3 layers, 4 heads, batch 64): our batched policy and
2-opt environment against rl4co 0.7.0's ``DACT`` in the same run; then N2S on PDTSP
(PDP-51: 50 customers + depot; embed 128, 3 layers, 4 heads, batch 64): our
``N2SPolicy`` + ``PairReinsertionEnv`` against rl4co 0.7.0's ``N2S`` +
``PDPRuinRepairEnv`` ("pdp_ruin_repair"), both eager.

* inference: instance-steps per second of a sampling rollout (policy + env step),
  best of 5 rounds that time every runner once in turn (this VM's speed drifts);
* training: instance-steps per second of n-step PPO (``T_train`` steps in chunks of
  ``n_step``, ``K = 3`` updates per chunk), timed per training batch by a Lightning
  callback (fastest batch after a warm-up one), so the Trainer's setup is not counted;
  short fits of every runner interleaved the same way, best of 3 rounds;
* CVRP-50 inference for ours alone (rl4co has no CVRP improvement environment).

Ours is timed twice: eager, and with ``compiled=True`` (the pair scores under
``torch.compile``; the compile itself happens in the warm-up and is not timed).

The N2S section times the same way: inference at PDP-51 and (fewer steps) PDP-101,
best of 5 interleaved rounds; training with n-step PPO (``n_step`` 5, ``K = 3``, a
short ``T_train``, no curriculum, the same gradient clip for both), fastest batch after
a warm-up one, best of interleaved short fits. Both policies use N2S's own CPE
(``pe="dact_cpe"`` for ours); their parameter counts are printed (actor, and with
the critic). The ``floor`` rows time only the products, softmaxes and norms N2S's
architecture needs (``_n2s_floor.py``): rl4co over floor is the ceiling of any eager
speed-up. ``--only dact|n2s`` runs one section; ``--profile`` adds a
``torch.profiler`` summary of one of our N2S inference steps and one training batch.

Needs the optional ``bench`` extra (``pip install -e ".[bench]" -c
benchmarks/constraints.txt``); without rl4co only our numbers are printed.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable

import torch
from _fit_timing import (
    TRAIN_ROUNDS,
    fit_runner,
    interleaved_rates,
    print_table,
    rl4co_rollout,
)
from _n2s_vs_rl4co import n2s_section, profile_n2s

from pyg_routing.data.generators import make_generator
from pyg_routing.models import DACTPolicy
from pyg_routing.options import LOCAL_MPS
from pyg_routing.search import improve
from pyg_routing.training import DACTLightning, RoutingDataModule


def ours_inference(problem: str, n: int, b: int, steps: int, pe: str,
                   compiled: bool = False, local_mp: str = "directed") -> Callable[[int], float]:
    """A warmed-up timed rollout of ``steps`` steps: ``run(repeat) -> seconds``."""
    policy = DACTPolicy.build(problem, pe=pe, dim=64, heads=4, num_layers=3, compiled=compiled,
                              local_mp=local_mp)
    inst = make_generator(problem, n, seed=0).sample(b)
    improve(inst, policy, steps=2, init="random")                   # warm-up (and compile)
    return lambda r: improve(inst, policy, steps=steps, init="random",
                             generator=torch.Generator().manual_seed(r)).seconds


def ours_training(n: int, b: int, t_train: int, n_step: int, batches: int, pe: str,
                  compiled: bool = False, local_mp: str = "directed") -> Callable[[int], float]:
    """A short PPO fit: ``run(round) -> seconds`` of its fastest timed batch."""
    return fit_runner(
        lambda: DACTLightning(problem="tsp", num_customers=n, pe=pe, dim=64, heads=4,
                              num_layers=3, batch_size=b, t_train=t_train, n_step=n_step,
                              warm_up=0, compiled=compiled, local_mp=local_mp),
        batches, lambda: RoutingDataModule("tsp", n, batch_size=b, batches_per_epoch=batches,
                                           val_size=b))


def rl4co_models(n: int, b: int, t_train: int, n_step: int, batches: int):
    from rl4co.envs.routing import TSPkoptEnv
    from rl4co.models import DACT

    env = TSPkoptEnv(generator_params={"num_loc": n})
    model = DACT(env, policy_kwargs={"embed_dim": 64, "num_encoder_layers": 3, "num_heads": 4},
                 batch_size=b, train_data_size=b * batches, val_data_size=b, T_train=t_train,
                 n_step=n_step, T_test=1)
    return env, model


def rl4co_inference(n: int, b: int, steps: int) -> Callable[[int], float]:
    return rl4co_rollout(*rl4co_models(n, b, 4, 4, 1), b, steps)


def rl4co_training(n: int, b: int, t_train: int, n_step: int,
                   batches: int) -> Callable[[int], float]:
    """rl4co's short PPO fit: ``run(round) -> seconds`` of its fastest timed batch."""
    return fit_runner(lambda: rl4co_models(n, b, t_train, n_step, batches)[1], batches)


def dact_section(args: argparse.Namespace, have_rl4co: bool) -> None:
    n, b = args.customers, args.batch
    variants = (False,) if args.no_compile else (False, True)
    runners = {}
    for problem in ("tsp", "cvrp"):
        for compiled in variants:
            runners[(problem, compiled)] = ours_inference(problem, n, b, args.steps, args.pe,
                                                          compiled, args.local_mp)
    if have_rl4co:
        runners["rl4co"] = rl4co_inference(n, b, args.steps)
    rate = interleaved_rates(runners, b * args.steps)
    trainers = {compiled: ours_training(n, b, args.t_train, args.n_step, args.batches,
                                        args.pe, compiled, args.local_mp)
                for compiled in variants}
    if have_rl4co:
        trainers["rl4co"] = rl4co_training(n, b, args.t_train, args.n_step, args.batches)
    train_rate = interleaved_rates(trainers, b * args.t_train, TRAIN_ROUNDS)
    rows = []
    for compiled in variants:
        tag = " compiled" if compiled else ""
        rows += [(f"inference TSP{tag}", rate[("tsp", compiled)], rate.get("rl4co")),
                 (f"training TSP{tag}", train_rate[compiled], train_rate.get("rl4co")),
                 (f"inference CVRP{tag}", rate[("cvrp", compiled)], None)]
    print(f"DACT, {n} customers, batch {b}, embed 64, 3 layers, pe={args.pe}, "
          f"local_mp={args.local_mp}; "
          f"training T_train={args.t_train}, n_step={args.n_step}, K=3")
    print_table(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", choices=("dact", "n2s"), help="run one section only")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    parser.add_argument("--customers", type=int, default=50,
                        help="customers (N2S: PDP-(n+1), and 2n customers for the large row)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=40, help="inference steps timed")
    parser.add_argument("--t-train", type=int, default=20)
    parser.add_argument("--n-step", type=int, default=4)
    parser.add_argument("--batches", type=int, default=4, help="training batches (1st = warm-up)")
    parser.add_argument("--pe", default="ipexpe", help="our encoding (dact_cpe = DACT's own)")
    parser.add_argument("--no-compile", action="store_true", help="skip the compiled rows")
    parser.add_argument("--local-mp", choices=LOCAL_MPS, default="directed",
                        help="our encoder's route-graph message passing")
    n2s = parser.add_argument_group("N2S")
    n2s.add_argument("--n2s-pe", default="dact_cpe", help="our N2S encoding (dact_cpe = N2S's CPE)")
    n2s.add_argument("--n2s-steps", type=int, default=20, help="inference steps timed, PDP-51")
    n2s.add_argument("--n2s-steps-big", type=int, default=5,
                     help="inference steps timed at 2x the customers (PDP-101)")
    n2s.add_argument("--n2s-t-train", type=int, default=10)
    n2s.add_argument("--n2s-n-step", type=int, default=5)
    n2s.add_argument("--n2s-batches", type=int, default=3,
                     help="training batches per fit (1st = warm-up)")
    n2s.add_argument("--n2s-train-rounds", type=int, default=TRAIN_ROUNDS)
    n2s.add_argument("--profile", action="store_true",
                     help="print torch.profiler tables of our N2S (one step, one batch)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    try:
        import rl4co  # noqa: F401
        have_rl4co = True
    except ImportError:
        have_rl4co = False
        print("rl4co is not installed: pip install -e '.[bench]' -c benchmarks/constraints.txt")
    if args.only != "n2s":
        dact_section(args, have_rl4co)
    if args.only != "dact":
        n2s_section(args, have_rl4co)
        if args.profile:
            profile_n2s(args.customers, args.batch, args.n2s_t_train, args.n2s_n_step,
                        args.n2s_pe)


if __name__ == "__main__":
    main()
