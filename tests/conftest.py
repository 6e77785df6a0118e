import random

import pytest
import torch

from pyg_routing.data import RoutingData


@pytest.fixture
def rng() -> random.Random:
    return random.Random(0)


@pytest.fixture
def small_cvrp() -> RoutingData:
    pos = torch.tensor([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    return RoutingData.from_instance("cvrp", pos, demand=[0, 1, 2, 3, 4], capacity=8)
