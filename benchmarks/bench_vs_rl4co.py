"""DACT on TSP-50 (embed 64, 3 layers, 4 heads, batch 64): our batched policy and
2-opt environment against rl4co 0.7.0's ``DACT`` in the same run.

* inference: instance-steps per second of a sampling rollout (policy + env step),
  best of 5 rounds that time every runner once in turn (this VM's speed drifts);
* training: instance-steps per second of n-step PPO (``T_train`` steps in chunks of
  ``n_step``, ``K = 3`` updates per chunk), timed per training batch by a Lightning
  callback (fastest batch after a warm-up one), so the Trainer's setup is not counted;
  short fits of every runner interleaved the same way, best of 3 rounds;
* CVRP-50 inference for ours alone (rl4co has no CVRP improvement environment).

Ours is timed twice: eager, and with ``compiled=True`` (the pair scores under
``torch.compile``; the compile itself happens in the warm-up and is not timed).

Needs the optional ``bench`` extra (``pip install -e ".[bench]" -c
benchmarks/constraints.txt``); without rl4co only our numbers are printed.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from collections.abc import Callable

import lightning as L
import torch

from pyg_routing.data.generators import make_generator
from pyg_routing.envs import improve
from pyg_routing.models import DACTPolicy
from pyg_routing.models.gps_encoder import LOCAL_MPS
from pyg_routing.training import DACTLightning, RoutingDataModule

REPEAT = 5         # inference: best of 5 interleaved rounds for every runner
TRAIN_ROUNDS = 3   # training: best batch over 3 interleaved short fits per runner


class BatchTimer(L.Callback):
    """Wall time of every training batch."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def on_train_batch_start(self, *args: object) -> None:
        self._t = time.perf_counter()

    def on_train_batch_end(self, *args: object) -> None:
        self.times.append(time.perf_counter() - self._t)


def trainer(timer: BatchTimer, batches: int) -> L.Trainer:
    return L.Trainer(max_epochs=1, limit_train_batches=batches, limit_val_batches=0,
                     num_sanity_val_steps=0, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False, callbacks=[timer],
                     accelerator="cpu")


def fastest_batch(times: list[float]) -> float:
    """Seconds of the fastest batch after the first (warm-up): the machine's noise
    only ever adds time."""
    return min(times[1:] or times)


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
    def run(_: int) -> float:
        model = DACTLightning("tsp", n, pe=pe, dim=64, heads=4, num_layers=3, batch_size=b,
                              t_train=t_train, n_step=n_step, warm_up=0, compiled=compiled,
                              local_mp=local_mp)
        data = RoutingDataModule("tsp", n, batch_size=b, batches_per_epoch=batches,
                                 val_size=b)
        timer = BatchTimer()
        trainer(timer, batches).fit(model, data)
        return fastest_batch(timer.times)
    return run


def rl4co_models(n: int, b: int, t_train: int, n_step: int, batches: int):
    from rl4co.envs.routing import TSPkoptEnv
    from rl4co.models import DACT

    env = TSPkoptEnv(generator_params={"num_loc": n})
    model = DACT(env, policy_kwargs={"embed_dim": 64, "num_encoder_layers": 3, "num_heads": 4},
                 batch_size=b, train_data_size=b * batches, val_data_size=b, T_train=t_train,
                 n_step=n_step, T_test=1)
    return env, model


def rl4co_inference(n: int, b: int, steps: int) -> Callable[[int], float]:
    env, model = rl4co_models(n, b, 4, 4, 1)
    policy = model.policy.eval()
    td = env.reset(batch_size=[b])
    with torch.no_grad():
        for _ in range(2):                                           # warm-up
            policy(td, env, phase="test")
            env.step(td)

    def run(_: int) -> float:
        with torch.no_grad():
            start = time.perf_counter()
            for _ in range(steps):
                policy(td, env, phase="test")
                env.step(td)
            return time.perf_counter() - start
    return run


def interleaved_rates(runners: dict[str, Callable[[int], float]], inst_steps: int,
                      repeat: int = REPEAT) -> dict[str, float]:
    """Instance-steps/s of every runner, best of ``repeat`` rounds that time each
    runner once in turn, so a slow phase of the machine hits all of them alike."""
    best = dict.fromkeys(runners, math.inf)
    for r in range(repeat):
        for name, run in runners.items():
            best[name] = min(best[name], run(r))
    return {name: inst_steps / sec for name, sec in best.items()}


def rl4co_training(n: int, b: int, t_train: int, n_step: int,
                   batches: int) -> Callable[[int], float]:
    """rl4co's short PPO fit: ``run(round) -> seconds`` of its fastest timed batch."""
    def run(_: int) -> float:
        _, model = rl4co_models(n, b, t_train, n_step, batches)
        timer = BatchTimer()
        trainer(timer, batches).fit(model)
        return fastest_batch(timer.times)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--customers", type=int, default=50)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=40, help="inference steps timed")
    parser.add_argument("--t-train", type=int, default=20)
    parser.add_argument("--n-step", type=int, default=4)
    parser.add_argument("--batches", type=int, default=4, help="training batches (1st = warm-up)")
    parser.add_argument("--pe", default="ipexpe", help="our encoding (dact_cpe = DACT's own)")
    parser.add_argument("--no-compile", action="store_true", help="skip the compiled rows")
    parser.add_argument("--local-mp", choices=LOCAL_MPS, default="directed",
                        help="our encoder's route-graph message passing")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    n, b = args.customers, args.batch
    try:
        import rl4co  # noqa: F401
        have_rl4co = True
    except ImportError:
        have_rl4co = False
        print("rl4co is not installed: pip install -e '.[bench]' -c benchmarks/constraints.txt")

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
    print(f"{'':25s} {'ours inst-steps/s':>18s} {'rl4co inst-steps/s':>19s} {'ratio':>7s}")
    for name, ours, ref in rows:
        ref_s = "-" if ref is None else f"{ref:.0f}"
        ratio = "-" if ref is None else f"{ours / ref:.1f}x"
        print(f"{name:25s} {ours:18.0f} {ref_s:>19s} {ratio:>7s}")


if __name__ == "__main__":
    main()
