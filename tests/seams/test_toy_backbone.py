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


TOY = ["--problem", "tsp", "--num_customers", "8", "--train.epochs", "1",
       "--train.batches_per_epoch", "2", "--train.batch_size", "4", "--train.t_train", "4",
       "--train.n_step", "2", "--validate.instances", "4", "--validate.steps", "3",
       "--model.dim", "16", "--trainer.accelerator", "cpu", "--no_progress", "--json"]


@pytest.mark.slow
def test_a_registered_fourth_backbone_trains_and_evaluates_through_the_cli(
        relocate, tmp_path, capsys):
    assert "relocate" in backbones.available()
    # a recipe file of the toy, written by --print_config and read back by --config
    assert main(["train", "--backbone", "relocate", *TOY, "--print_config"]) == 0
    recipe = tmp_path / "relocate.yaml"
    recipe.write_text(capsys.readouterr().out)
    assert "backbone: relocate" in recipe.read_text()
    code = main(["train", "--config", str(recipe), "--out", str(tmp_path), "--json"])
    trained = json.loads(capsys.readouterr().out)
    assert code == 0 and trained["epochs"] == 1 and trained["best_val_cost"] is not None
    code = main(["evaluate", "--checkpoint", trained["checkpoint"], "--test.instances", "4",
                 "--test.steps", "10", "--test.augment", "2", "--reference.solver", "none",
                 "--accelerator", "cpu", "--out", str(tmp_path / "eval"), "--json"])
    searched = json.loads(capsys.readouterr().out)
    assert code == 0 and searched["backbone"] == "relocate" and searched["problem"] == "tsp"
    assert searched["cost"] <= searched["initial_cost"] + 1e-6
    # compare runs the toy from the same recipe file, with its random-move baseline
    code = main(["compare", "--config", str(recipe), "--pe", "none", "--test.instances", "4",
                 "--test.steps", "5", "--test.augment", "1", "--reference.solver", "none",
                 "--out", str(tmp_path / "cmp"), "--json"])
    compared = json.loads(capsys.readouterr().out)
    assert code == 0 and [r["encoding"] for r in compared["rows"]] == ["random", "none"]
    assert compared["config"]["backbone"] == "relocate"
    # the toy backbone's options are its own: another backbone's are refused
    assert main(["train", "--backbone", "relocate", "--train.rollouts", "3"]) == 2
    assert "--train.rollouts is an option of the nds backbone" in capsys.readouterr().err
