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
import math
import time
import warnings
from collections.abc import Callable

import lightning as L
import torch
from _n2s_floor import N2SFloor

from pyg_routing.data.generators import make_generator
from pyg_routing.envs import PairReinsertionEnv, improve
from pyg_routing.models import DACTPolicy, N2SPolicy
from pyg_routing.models.gps_encoder import LOCAL_MPS
from pyg_routing.training import DACTLightning, N2SLightning, RoutingDataModule

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
        model = DACTLightning(problem="tsp", num_customers=n, pe=pe, dim=64, heads=4,
                              num_layers=3, batch_size=b, t_train=t_train, n_step=n_step,
                              warm_up=0, compiled=compiled, local_mp=local_mp)
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


def interleaved_rates(runners: dict[str, Callable[[int], float]], inst_steps: int | dict,
                      repeat: int = REPEAT) -> dict[str, float]:
    """Instance-steps/s of every runner, best of ``repeat`` rounds that time each
    runner once in turn, so a slow phase of the machine hits all of them alike.
    ``inst_steps``: instance-steps of one run, for all runners or per runner."""
    best = dict.fromkeys(runners, math.inf)
    for r in range(repeat):
        for name, run in runners.items():
            best[name] = min(best[name], run(r))
    work = inst_steps if isinstance(inst_steps, dict) else dict.fromkeys(runners, inst_steps)
    return {name: work[name] / sec for name, sec in best.items()}


def rl4co_training(n: int, b: int, t_train: int, n_step: int,
                   batches: int) -> Callable[[int], float]:
    """rl4co's short PPO fit: ``run(round) -> seconds`` of its fastest timed batch."""
    def run(_: int) -> float:
        _, model = rl4co_models(n, b, t_train, n_step, batches)
        timer = BatchTimer()
        trainer(timer, batches).fit(model)
        return fastest_batch(timer.times)
    return run


# --------------------------------------------------------------------------- N2S
N2S_DIM, N2S_HEADS, N2S_LAYERS = 128, 4, 3
N2S_GRAD_CLIP = 0.05        # rl4co's default; the same for ours (speed only)


def ours_n2s_inference(n: int, b: int, steps: int, pe: str) -> Callable[[int], float]:
    """Our N2S: a warmed-up timed rollout of ``steps`` steps, ``run(repeat) -> seconds``
    (``improve``'s wall time: the random initial tours count, as in the DACT rows)."""
    policy = N2SPolicy.build("pdtsp", pe=pe, dim=N2S_DIM, heads=N2S_HEADS,
                             num_layers=N2S_LAYERS)
    env = PairReinsertionEnv()
    inst = make_generator("pdtsp", n, seed=0).sample(b)
    improve(inst, policy, steps=2, init="random", env=env)             # warm-up
    return lambda r: improve(inst, policy, steps=steps, init="random", env=env,
                             generator=torch.Generator().manual_seed(r)).seconds


def ours_n2s_lightning(n: int, b: int, t_train: int, n_step: int, pe: str) -> N2SLightning:
    return N2SLightning(problem="pdtsp", num_customers=n, pe=pe, dim=N2S_DIM, heads=N2S_HEADS,
                        num_layers=N2S_LAYERS, batch_size=b, t_train=t_train, n_step=n_step,
                        ppo_epochs=3, warm_up=0.0, max_grad_norm=N2S_GRAD_CLIP)


def ours_n2s_training(n: int, b: int, t_train: int, n_step: int, batches: int,
                      pe: str) -> Callable[[int], float]:
    """Our N2S's short PPO fit: ``run(round) -> seconds`` of its fastest timed batch."""
    def run(_: int) -> float:
        model = ours_n2s_lightning(n, b, t_train, n_step, pe)
        data = RoutingDataModule("pdtsp", n, batch_size=b, batches_per_epoch=batches,
                                 val_size=b)
        timer = BatchTimer()
        trainer(timer, batches).fit(model, data)
        return fastest_batch(timer.times)
    return run


def rl4co_n2s_models(n: int, b: int, t_train: int, n_step: int, batches: int):
    from rl4co.envs import get_env
    from rl4co.models.zoo.n2s import N2S

    env = get_env("pdp_ruin_repair", generator_params={"num_loc": n})
    model = N2S(env, policy_kwargs={"embed_dim": N2S_DIM, "num_encoder_layers": N2S_LAYERS,
                                    "num_heads": N2S_HEADS},
                critic_kwargs={"num_heads": N2S_HEADS}, batch_size=b,
                train_data_size=b * batches, val_data_size=b, T_train=t_train, n_step=n_step,
                ppo_epochs=3, max_grad_norm=N2S_GRAD_CLIP, T_test=1)
    return env, model


def rl4co_n2s_inference(n: int, b: int, steps: int) -> Callable[[int], float]:
    env, model = rl4co_n2s_models(n, b, 5, 5, 1)
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


def rl4co_n2s_training(n: int, b: int, t_train: int, n_step: int,
                       batches: int) -> Callable[[int], float]:
    """rl4co N2S's short PPO fit: ``run(round) -> seconds`` of its fastest timed batch."""
    def run(_: int) -> float:
        _, model = rl4co_n2s_models(n, b, t_train, n_step, batches)
        timer = BatchTimer()
        trainer(timer, batches).fit(model)
        return fastest_batch(timer.times)
    return run


def count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def n2s_parameters(pe: str, have_rl4co: bool) -> dict[str, tuple[int, int]]:
    """``(actor, actor + critic)`` parameter counts of both N2S models."""
    ours = N2SPolicy.build("pdtsp", pe=pe, dim=N2S_DIM, heads=N2S_HEADS, num_layers=N2S_LAYERS)
    counts = {"ours": (count(ours) - count(ours.critic), count(ours))}
    if have_rl4co:
        _, model = rl4co_n2s_models(50, 2, 5, 5, 1)
        counts["rl4co"] = (count(model.policy), count(model.policy) + count(model.critic))
    return counts


class ProfileBatch(L.Callback):
    """A ``torch.profiler`` table of training batch ``index``."""

    def __init__(self, index: int = 1, rows: int = 15) -> None:
        self.index, self.rows = index, rows

    def on_train_batch_start(self, trainer: L.Trainer, module: L.LightningModule, batch: object,
                             batch_idx: int) -> None:
        if batch_idx == self.index:
            self.prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
            self.prof.__enter__()

    def on_train_batch_end(self, trainer: L.Trainer, module: L.LightningModule,
                           outputs: object, batch: object, batch_idx: int) -> None:
        if batch_idx == self.index:
            self.prof.__exit__(None, None, None)
            print(self.prof.key_averages().table(sort_by="self_cpu_time_total",
                                                 row_limit=self.rows))


def profile_n2s(n: int, b: int, t_train: int, n_step: int, pe: str, rows: int = 15) -> None:
    """Where our N2S's time goes: one inference step (policy + env step), then one
    training batch (the second of a short fit)."""
    policy = N2SPolicy.build("pdtsp", pe=pe, dim=N2S_DIM, heads=N2S_HEADS,
                             num_layers=N2S_LAYERS).eval()
    env = PairReinsertionEnv()
    state = env.reset(make_generator("pdtsp", n, seed=0).sample(b), init="random")

    def step(state):
        obs = env.policy_observation(state, policy)
        return env.step(state, policy.act(obs))[0]

    with torch.no_grad():
        for _ in range(3):                                           # warm-up
            state = step(state)
        start = time.perf_counter()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            step(state)
    print(f"our N2S, one inference step, PDP-{n + 1}, batch {b} "
          f"({1e3 * (time.perf_counter() - start):.0f} ms with the profiler):")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows))
    print(f"our N2S, one training batch, PDP-{n + 1}, batch {b}, T_train={t_train}, "
          f"n_step={n_step}, K=3:")
    model = ours_n2s_lightning(n, b, t_train, n_step, pe)
    data = RoutingDataModule("pdtsp", n, batch_size=b, batches_per_epoch=2, val_size=b)
    L.Trainer(max_epochs=1, limit_train_batches=2, limit_val_batches=0, num_sanity_val_steps=0,
              logger=False, enable_checkpointing=False, enable_progress_bar=False,
              enable_model_summary=False, callbacks=[ProfileBatch(1, rows)],
              accelerator="cpu").fit(model, data)


def n2s_section(args: argparse.Namespace, have_rl4co: bool) -> None:
    n, b, pe = args.customers, args.batch, args.n2s_pe
    big = 2 * n
    runners = {("ours", n): ours_n2s_inference(n, b, args.n2s_steps, pe),
               ("ours", big): ours_n2s_inference(big, b, args.n2s_steps_big, pe)}
    if have_rl4co:
        runners[("rl4co", n)] = rl4co_n2s_inference(n, b, args.n2s_steps)
        runners[("rl4co", big)] = rl4co_n2s_inference(big, b, args.n2s_steps_big)
    floor = {size: N2SFloor(b, size + 1, N2S_DIM, N2S_HEADS, N2S_LAYERS) for size in (n, big)}
    runners[("floor", n)] = floor[n].inference(args.n2s_steps)
    runners[("floor", big)] = floor[big].inference(args.n2s_steps_big)
    work = {key: b * (args.n2s_steps if key[1] == n else args.n2s_steps_big) for key in runners}
    rate = interleaved_rates(runners, work)
    trainers = {"ours": ours_n2s_training(n, b, args.n2s_t_train, args.n2s_n_step,
                                          args.n2s_batches, pe),
                "floor": floor[n].training(args.n2s_t_train, args.n2s_n_step)}
    if have_rl4co:
        trainers["rl4co"] = rl4co_n2s_training(n, b, args.n2s_t_train, args.n2s_n_step,
                                               args.n2s_batches)
    train_rate = interleaved_rates(trainers, b * args.n2s_t_train, args.n2s_train_rounds)
    params = n2s_parameters(pe, have_rl4co)
    rows = [(f"inference PDP-{n + 1}", rate[("ours", n)], rate.get(("rl4co", n))),
            (f"inference PDP-{big + 1}", rate[("ours", big)], rate.get(("rl4co", big))),
            (f"training PDP-{n + 1}", train_rate["ours"], train_rate.get("rl4co")),
            (f"floor inference PDP-{n + 1}", rate[("floor", n)], rate.get(("rl4co", n))),
            (f"floor inference PDP-{big + 1}", rate[("floor", big)], rate.get(("rl4co", big))),
            (f"floor training PDP-{n + 1}", train_rate["floor"], train_rate.get("rl4co"))]
    print(f"N2S, PDP-{n + 1} (and PDP-{big + 1} inference), batch {b}, embed {N2S_DIM}, "
          f"{N2S_LAYERS} layers, {N2S_HEADS} heads, pe={pe}, eager, "
          f"{torch.get_num_threads()} threads; inference {args.n2s_steps} steps "
          f"({args.n2s_steps_big} at PDP-{big + 1}), best of {REPEAT}; training "
          f"T_train={args.n2s_t_train}, n_step={args.n2s_n_step}, K=3, best batch of "
          f"{args.n2s_train_rounds} rounds x {args.n2s_batches - 1}")
    print_table(rows)
    print("floor rows: the architecture's matrix products, softmaxes and norms alone "
          "(benchmarks/_n2s_floor.py); their ratio is the most any eager implementation "
          "could gain over rl4co here")
    for name, (actor, total) in params.items():
        print(f"parameters {name:6s} actor {actor:,}, with critic {total:,}")


def print_table(rows: list[tuple[str, float, float | None]]) -> None:
    print(f"{'':25s} {'ours inst-steps/s':>18s} {'rl4co inst-steps/s':>19s} {'ratio':>7s}")
    for name, ours, ref in rows:
        ref_s = "-" if ref is None else f"{ref:.0f}"
        ratio = "-" if ref is None else f"{ours / ref:.1f}x"
        print(f"{name:25s} {ours:18.0f} {ref_s:>19s} {ratio:>7s}")


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
