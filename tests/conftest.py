import os
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


def pytest_collection_modifyitems(config, items):
    """The ``tables`` tier (every paper table at ``reproduce --scale smoke``, minutes
    each) runs only with ``PYG_ROUTING_TABLES=1``: CI's default ``pytest tests`` skips it."""
    if os.environ.get("PYG_ROUTING_TABLES") == "1":
        return
    skip = pytest.mark.skip(reason="a whole table's smoke run: set PYG_ROUTING_TABLES=1")
    for item in items:
        if "tables" in item.keywords:
            item.add_marker(skip)
