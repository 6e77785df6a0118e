"""Proof of the seams: a fourth backbone (tests/seams/toy_backbone.py: environment,
policy, config) registered from the test, trained one epoch and searched through the
real command line, with its environment checked against brute force."""

from __future__ import annotations

import json
import random

import pytest
import torch

from pyg_routing.cli import main
from pyg_routing.data import TSPGenerator
from pyg_routing.search import MaxIterations, StepSearch
from pyg_routing.training import backbones
from tests.seams.toy_backbone import RelocateEnv, RelocateLightning, tour_cost


@pytest.fixture
def relocate():
    backbones.register(RelocateLightning)
    yield RelocateLightning
    backbones.unregister("relocate")


def _relocated(tour: list[int], u: int, v: int) -> list[int]:
    rest = [c for c in tour if c != u]
    at = rest.index(v) + 1
    return rest[:at] + [u] + rest[at:]


def test_relocate_steps_and_mask_match_brute_force():
    inst = TSPGenerator(7, seed=0).sample(3)
    env, rng = RelocateEnv(), random.Random(0)
    state = env.reset(inst, "random", torch.Generator().manual_seed(0))
    n = inst.pos.size(1)
    for _ in range(6):
        mask = env.action_mask(state)
        for b, tour in enumerate(state.tour.tolist()):
            changes = {(u, v) for u in range(1, n) for v in range(n) if u != v
                       and _relocated(tour, u, v) != tour}
            allowed = {(u, v) for u in range(n) for v in range(n) if mask[b, u, v]}
            assert allowed == changes
        action = torch.tensor([rng.choice(sorted(torch.nonzero(mask[b]).tolist()))
                               for b in range(len(state))])
        action = action[:, 0] * n + action[:, 1]
        new, reward = env.step(state, action)
        for b, tour in enumerate(state.tour.tolist()):
            assert new.tour[b].tolist() == _relocated(tour, *divmod(int(action[b]), n))
        torch.testing.assert_close(new.cost, tour_cost(inst.pos, new.tour))
        assert torch.equal(reward, (state.best_cost - new.cost).clamp(min=0))
        state = new


def test_the_shared_step_search_runs_the_toy_environment():
    inst = TSPGenerator(9, seed=1).sample(4)
    res = StepSearch(RelocateEnv(), augment=2).run(inst, None, MaxIterations(30), seed=3)
    for b, routes in enumerate(res.routes):
        assert sorted(routes[0]) == list(range(1, 9))
        tour = torch.tensor([[0, *routes[0]]])
        assert float(tour_cost(inst.pos[b:b + 1], tour)) == pytest.approx(float(res.cost[b]),
                                                                          rel=1e-5)
    assert (res.cost <= res.initial_cost + 1e-6).all()


@pytest.mark.slow
def test_a_registered_fourth_backbone_trains_and_evaluates_through_the_cli(
        relocate, tmp_path, capsys):
    assert "relocate" in backbones.available()
    code = main(["train", "--backbone", "relocate", "--problem", "tsp", "--num-customers", "8",
                 "--epochs", "1", "--batches-per-epoch", "2", "--batch-size", "4",
                 "--t-train", "4", "--n-step", "2", "--val-size", "4", "--val-steps", "3",
                 "--dim", "16", "--accelerator", "cpu", "--no-progress", "--json",
                 "--out", str(tmp_path)])
    trained = json.loads(capsys.readouterr().out)
    assert code == 0 and trained["epochs"] == 1 and trained["best_val_cost"] is not None
    code = main(["evaluate", "--checkpoint", trained["checkpoint"], "--instances", "4",
                 "--steps", "10", "--augment", "2", "--reference", "none", "--device", "cpu",
                 "--out", str(tmp_path / "eval"), "--json"])
    searched = json.loads(capsys.readouterr().out)
    assert code == 0 and searched["backbone"] == "relocate" and searched["problem"] == "tsp"
    assert searched["cost"] <= searched["initial_cost"] + 1e-6
    # the toy backbone's options are its own: another backbone's are refused
    assert main(["train", "--backbone", "relocate", "--rollouts", "3"]) == 2
    assert "--rollouts is an option of the nds backbone" in capsys.readouterr().err
