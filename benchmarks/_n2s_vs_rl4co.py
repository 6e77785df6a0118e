"""The N2S section of ``bench_vs_rl4co.py``: our ``N2SPolicy`` + ``PairReinsertionEnv``
against rl4co 0.7.0's ``N2S`` + ``PDPRuinRepairEnv`` on PDTSP, the floor rows
(``_n2s_floor.py``), and ``--profile``'s tables."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import lightning as L
import torch
from _fit_timing import REPEAT, fit_runner, interleaved_rates, print_table, rl4co_rollout
from _n2s_floor import N2SFloor

from pyg_routing.data.generators import make_generator
from pyg_routing.envs import PairReinsertionEnv
from pyg_routing.models import N2SPolicy
from pyg_routing.search import improve
from pyg_routing.training import N2SLightning, RoutingDataModule

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
    return fit_runner(lambda: ours_n2s_lightning(n, b, t_train, n_step, pe), batches,
                      lambda: RoutingDataModule("pdtsp", n, batch_size=b,
                                                batches_per_epoch=batches, val_size=b))


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
    return rl4co_rollout(*rl4co_n2s_models(n, b, 5, 5, 1), b, steps)


def rl4co_n2s_training(n: int, b: int, t_train: int, n_step: int,
                       batches: int) -> Callable[[int], float]:
    """rl4co N2S's short PPO fit: ``run(round) -> seconds`` of its fastest timed batch."""
    return fit_runner(lambda: rl4co_n2s_models(n, b, t_train, n_step, batches)[1], batches)


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
        obs = env.policy_observation(state)
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
