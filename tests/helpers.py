"""What several test modules share: random solutions and the one tiny training setup."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Sequence

from torch_geometric.data import Batch

from pyg_routing.data import CVRPGenerator, RoutingData

#: The tiny DACT configuration of every training test (Python keyword arguments of
#: ``DACTLightning`` / the data module); :func:`tiny_argv` gives the same as CLI options.
TINY = dict(num_customers=8, dim=16, heads=2, num_layers=1, pe_dim=8, num_bands=2,
            batch_size=4, t_train=4, n_step=2, val_steps=3, warm_up=1.0, seed=0)
#: The tiny data module: batches per epoch and validation instances.
TINY_DATA = dict(batches_per_epoch=2, val_size=4)
#: The tiny NDS (paper preset: NDS's capacity table has no 10-customer entry)
NDS_TINY = dict(num_customers=10, dim=16, heads=2, num_layers=2, pe_dim=8, num_bands=2,
                batch_size=3, rollouts=6, remove=4, warmup_steps=2, iterations=3, val_steps=2,
                val_rollouts=4, val_augment=2, preset="paper", seed=0)

def tiny_argv(backbone: str = "dact", **overrides) -> list[str]:
    """:data:`TINY` and :data:`TINY_DATA` (for ``backbone``) as ``pyg-routing train`` /
    ``compare`` options (CPU, no progress bar, JSON output); ``overrides`` replace or add
    options, by their flat names (``epochs=1``: ``--train.epochs 1``)."""
    from pyg_routing.training import backbones

    cls = backbones.get(backbone).config_class
    top = {"problem", "num_customers", "pe", "seed"}
    opts = {**TINY, **TINY_DATA, **overrides} if backbone != "nds" else \
        {**NDS_TINY, **TINY_DATA, **overrides}
    test = {"instances": "test.instances", "steps": "test.steps", "augment": "test.augment"}
    argv: list[str] = []
    for key, value in opts.items():
        flag = key if key in top else test.get(key) or cls._route(key, cls.section_types())
        argv += [f"--{flag}", str(value)]
    return [*argv, "--trainer.accelerator", "cpu", "--no_progress", "--json"]


def random_routes(num_customers: int, rng: random.Random, max_routes: int = 6,
                  keep: float = 1.0) -> list[list[int]]:
    """A random partition of (a subset of) the customers into non-empty routes."""
    nodes = [v for v in range(1, num_customers + 1) if rng.random() < keep] or [1]
    rng.shuffle(nodes)
    k = rng.randint(1, min(max_routes, len(nodes)))
    cuts = sorted(rng.sample(range(1, len(nodes)), k - 1)) if k > 1 else []
    bounds = [0, *cuts, len(nodes)]
    return [nodes[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def random_pcvrp_solutions(count: int, n: int, seed: int = 0,
                           keep: float = 0.7) -> list[RoutingData]:
    """``count`` PCVRP solutions of growing size (``n``, ``n + 1``, ...) that visit a
    random subset (about ``keep``) of the customers."""
    from pyg_routing.data import PCVRPGenerator

    rng = random.Random(seed)
    out = []
    for g in range(count):
        inst = PCVRPGenerator(n + g, seed=seed + g).sample(1)[0]
        out.append(RoutingData.from_routes(inst, random_routes(n + g, rng, keep=keep)))
    return out




def fixed_route_batch(num: int = 3, n: int = 12) -> Batch:
    """``num`` CVRP-``n`` instances, each with the same four routes (``n >= 12``)."""
    inst = CVRPGenerator(n, seed=0).sample(num)
    routes = [[1, 2, 3, 4], [5, 6, 7], [8], [9, 10, 11, 12]]
    return Batch.from_data_list([RoutingData.from_routes(inst[i], routes) for i in range(num)])


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """``pyg-routing ARGV`` in-process: exit code, stdout, stderr."""
    from pyg_routing.cli import main

    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def straight_and_resumed(make_model, make_trainer, make_datamodule, checkpoint):
    """Two fits of fresh models from ``make_model()``: 2 epochs x 1 batch in one go, and
    1 epoch, a checkpoint at ``checkpoint``, then a resume to epoch 2. Returns both
    models ``(straight, resumed)``; an exact resume leaves them equal."""
    straight = make_model()
    make_trainer(max_epochs=2, limit_train_batches=1).fit(straight,
                                                          datamodule=make_datamodule())
    first = make_model()
    t1 = make_trainer(max_epochs=1, limit_train_batches=1)
    t1.fit(first, datamodule=make_datamodule())
    t1.save_checkpoint(checkpoint)
    resumed = make_model()
    make_trainer(max_epochs=2, limit_train_batches=1).fit(
        resumed, datamodule=make_datamodule(), ckpt_path=checkpoint)
    return straight, resumed


def all_route_sets(customers: Sequence[int]) -> Iterator[list[list[int]]]:
    """Every way to serve ``customers`` by ordered routes: each customer order, cut
    into routes at every subset of its gaps (the brute force of tiny instances)."""
    for perm in itertools.permutations(customers):
        for cuts in itertools.product((False, True), repeat=len(perm) - 1):
            routes, current = [], [perm[0]]
            for c, cut in zip(perm[1:], cuts):
                if cut:
                    routes.append(current)
                    current = []
                current.append(c)
            routes.append(current)
            yield routes
