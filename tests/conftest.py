import random

import pytest
import torch

from pyg_routing.data import RoutingData


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


@pytest.fixture
def rng() -> random.Random:
    return random.Random(0)


@pytest.fixture
def small_cvrp() -> RoutingData:
    pos = torch.tensor([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    return RoutingData.from_instance("cvrp", pos, demand=[0, 1, 2, 3, 4], capacity=8)
