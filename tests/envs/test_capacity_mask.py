"""The 2-opt capacity mask written slice by slice equals its formula on the whole batch."""

import pytest
import torch

from pyg_routing.data.feasibility import CAPACITY_RTOL
from pyg_routing.data.generators import make_generator
from pyg_routing.envs.two_opt import TwoOptEnv
from pyg_routing.envs.two_opt.moves import capacity_mask, route_loads
from pyg_routing.functional import chunks


@pytest.mark.parametrize("budget", [None, 50, 1000])
def test_capacity_mask_in_slices_is_the_formula(monkeypatch, budget):
    if budget is not None:
        monkeypatch.setattr(chunks, "CHUNK_ELEMENTS", budget)
    inst = make_generator("cvrp", 15, seed=3).sample(7)
    state = TwoOptEnv().reset(inst, init="random", generator=torch.Generator().manual_seed(0))
    ridx, upto, after = route_loads(state)
    cap = state.capacity.double().unsqueeze(1) * (1 + CAPACITY_RTOL)
    m = upto.size(1)
    room_upto, room_after = cap - upto, cap - after
    # brute force over the pairs: both new routes within the capacity, or one route
    expected = torch.zeros(7, m, m, dtype=torch.bool)
    for b in range(7):
        for i in range(m):
            for j in range(m):
                expected[b, i, j] = bool(
                    (upto[b, j] <= room_upto[b, i] and after[b, j] <= room_after[b, i])
                    or ridx[b, i] == ridx[b, j])
    got = capacity_mask(state)
    assert got.dtype == torch.bool and got.shape == (7, m, m)
    assert torch.equal(got, expected)
    assert 0 < got.float().mean() < 1                      # the test sees both answers
