"""VRP-DACT's training rules in the shared PPO: its sigmoid curriculum (step counts against
its formula, restated with numpy as ``agent/ppo.py`` writes it), the best warm-up start,
per-group gradient clipping, its first-fit initial solutions (against a restatement of
``problems/problem_vrp.py``'s ``get_initial_solutions``) and sampled validation."""

import math

import numpy as np
import pytest
import torch

from pyg_routing.data.generators import make_generator
from pyg_routing.envs import PairReinsertionEnv, TwoOptEnv
from pyg_routing.envs.two_opt.first_fit import first_fit_order
from pyg_routing.training import backbones
from pyg_routing.training.dact_config import DACTConfig, default_init
from pyg_routing.training.n2s_config import N2SConfig
from pyg_routing.training.ppo import clip_grad_norms, sigmoid_curriculum_steps


def dact_curriculum(epoch_end: int, xi: float) -> list[int]:
    """VRP-DACT's warm-up steps per epoch, as its train_batch computes them."""
    x = np.linspace(0, epoch_end - 1, epoch_end)
    k = 0.02
    y = 1 / (1 + np.exp((-k * x) + epoch_end / 2 * k))
    y = (y - y.min()) / (y.max() - y.min())
    z = y * epoch_end * xi
    return [int(z[e]) for e in range(epoch_end)]


@pytest.mark.parametrize("epochs", [2, 3, 6, 50, 200])
@pytest.mark.parametrize("xi", [0.25, 1.0, 2.0])
def test_sigmoid_curriculum_equals_vrp_dacts_formula(epochs, xi):
    ours = [sigmoid_curriculum_steps(e, epochs, xi) for e in range(epochs)]
    assert ours == dact_curriculum(epochs, xi)
    assert ours[0] == 0 and ours[-1] == int(epochs * xi)


def test_curriculum_totals_and_the_rule_is_a_config_choice():
    # over VRP-DACT's 200 CVRP epochs with Xi_CL 1: about 19.9k warm-up steps
    assert sum(dact_curriculum(200, 1.0)) == sum(sigmoid_curriculum_steps(e, 200, 1.0)
                                                 for e in range(200)) == 19_858
    assert sigmoid_curriculum_steps(0, 1, 1.0) == 0        # one epoch: none (DACT: NaN)
    # a long cap (compare's 100,000 epochs under a time budget) does not overflow exp
    assert [sigmoid_curriculum_steps(e, 100_000, 1.0) for e in (0, 5, 99_999)] == [0, 0, 100_000]
    dact = backbones.get("dact")(problem="cvrp", num_customers=8, dim=16, heads=2,
                                 num_layers=1)
    assert [dact.curriculum_steps(e, epochs=6) for e in range(6)] == dact_curriculum(6, 1.0)
    floor = backbones.get("dact")(problem="cvrp", num_customers=8, dim=16, heads=2,
                                  num_layers=1, curriculum="floor", warm_up=2.0)
    assert [floor.curriculum_steps(e) for e in range(6)] == [0, 0, 1, 1, 2, 2]
    n2s = N2SConfig(num_customers=20)
    # PDP-N2S's rules: floor(epoch / warm_up), the last warm-up solution, per-group clipping
    assert (n2s.train.curriculum, n2s.train.curriculum_start, n2s.train.grad_clip) == (
        "floor", "last", "per_group")
    with pytest.raises(ValueError, match="number of epochs"):
        dact.curriculum_steps(1)                           # no trainer: no max_epochs
    tsp, cvrp = DACTConfig(problem="tsp"), DACTConfig()
    assert (tsp.train.xi_cl, cvrp.train.xi_cl, tsp.train.init, cvrp.train.init) == (
        2.0, 1.0, "random", "first_fit")
    assert DACTConfig.create(xi_cl=0.25).train.xi_cl == 0.25
    with pytest.raises(ValueError, match="--train.xi_cl must be >= 0"):
        DACTConfig.create(xi_cl=-2.0)
    with pytest.raises(ValueError, match="--train.curriculum must be one of floor, sigmoid"):
        DACTConfig.create(curriculum="linear")


def test_per_group_clipping_clips_each_group_to_the_norm():
    a, b = torch.nn.Parameter(torch.zeros(4)), torch.nn.Parameter(torch.zeros(3))
    c = torch.nn.Parameter(torch.zeros(2))
    a.grad, b.grad = torch.tensor([3.0, 0, 0, 4]), torch.tensor([0.0, 0.6, 0.8])
    c.grad = torch.tensor([0.03, 0.04])
    groups = [{"params": [a, b]}, {"params": [c]}]
    norms = clip_grad_norms(groups, 0.5)
    torch.testing.assert_close(torch.stack(norms), torch.tensor([math.sqrt(26.0), 0.05]))
    joint = torch.cat([a.grad, b.grad]).norm()
    assert float(joint) == pytest.approx(0.5, rel=1e-5)       # clipped to 0.5 ...
    torch.testing.assert_close(c.grad, torch.tensor([0.03, 0.04]))   # ... this one not
    torch.testing.assert_close(a.grad / a.grad.norm(), torch.tensor([0.6, 0, 0, 0.8]))


def test_training_clips_per_group_with_dacts_rule(monkeypatch, tmp_path):
    import lightning as L

    from pyg_routing.training import ppo
    from pyg_routing.training.datamodule import RoutingDataModule

    seen = []

    def record(groups, max_norm):
        seen.append((len(groups), max_norm))
        return clip_grad_norms(groups, max_norm)

    monkeypatch.setattr(ppo, "clip_grad_norms", record)
    model = backbones.get("dact")(problem="cvrp", num_customers=6, dim=16, heads=2,
                                  num_layers=1, batch_size=4, t_train=4, n_step=2,
                                  ppo_epochs=2, max_grad_norm=0.04, val_steps=2)
    data = RoutingDataModule("cvrp", 6, batch_size=4, batches_per_epoch=1, val_size=2)
    L.Trainer(max_epochs=2, accelerator="cpu", logger=False, enable_checkpointing=False,
              limit_val_batches=0, enable_progress_bar=False, enable_model_summary=False,
              default_root_dir=tmp_path).fit(model, data)
    assert seen == [(2, 0.04)] * (2 * 2 * 2)                # epochs x chunks x K


def dact_first_fit(demand: torch.Tensor, dummies: int, capacity: torch.Tensor) -> torch.Tensor:
    """VRP-DACT's 'random' initial CVRP solution as its linked list ``rec`` (``rec[i]``:
    the node after ``i``), restated: nodes ``0 .. dummies-1`` are depot copies. VRP-DACT
    sums demands divided by the capacity in float32 and compares with 1; here the
    integer demands are summed and compared with the capacity (the rule, without the
    rounding that can refuse a customer filling the vehicle exactly)."""
    b, size = demand.shape
    candidates = torch.ones(b, size, dtype=torch.bool)
    candidates[:, :dummies] = False
    rec = torch.zeros(b, size, dtype=torch.long)
    selected = torch.zeros(b, 1, dtype=torch.long)
    cum = torch.zeros(b, 2, dtype=torch.float64)            # [routes opened, load]
    for _ in range(size - 1):
        dists = torch.arange(size, dtype=torch.float64).expand(b, size).clone()
        dists.scatter_(1, selected, 1e5)
        dists[~candidates] = 1e5
        dists[cum[:, -1:] + demand > capacity.view(-1, 1)] = 1e5
        dists.scatter_(1, cum[:, :-1].long() + 1, 1e4)
        nxt = dists.min(-1)[1].view(-1, 1)
        picked = demand.gather(1, nxt)
        cum[:, -1:] = torch.where(picked > 0, picked + cum[:, -1:], 0 * cum[:, -1:])
        cum[:, :-1] = torch.where(picked > 0, cum[:, :-1], cum[:, :-1] + 1)
        rec.scatter_(1, selected, nxt)
        candidates.scatter_(1, nxt, False)
        selected = nxt
    return rec


@pytest.mark.parametrize("n,rate", [(20, 0.5), (50, 0.4)])
def test_first_fit_is_vrp_dacts_initial_solution(n, rate):
    env = TwoOptEnv(depot_rate=rate)
    inst = make_generator("cvrp", n, seed=n).sample(6)
    state = env.reset(inst, init="first_fit")
    k = state.num_depots
    demand = torch.cat([torch.zeros(6, k - 1, dtype=torch.float64), inst.demand.double()], 1)
    assert torch.equal(state.succ, dact_first_fit(demand, k, inst.capacity.double()))
    assert default_init("cvrp") == "first_fit"


def test_first_fit_on_tsp_is_the_index_order_and_bad_cases_are_refused():
    state = TwoOptEnv().reset(make_generator("tsp", 7, seed=0).sample(2), init="first_fit")
    assert torch.equal(state.order, torch.arange(7).expand(2, 7))
    with pytest.raises(ValueError, match="first_fit.*vrptw"):
        TwoOptEnv().reset(make_generator("vrptw", 7, seed=0).sample(2), init="first_fit")
    with pytest.raises(ValueError, match="demand above the capacity in instance.*1"):
        first_fit_order(torch.tensor([[0.0, 3, 3], [0, 3, 9]]), torch.tensor([5.0, 5.0]))


@pytest.mark.parametrize("env_name", ["two_opt", "pair_reinsertion"])
def test_resume_best_starts_from_the_best_solution(env_name):
    env = TwoOptEnv() if env_name == "two_opt" else PairReinsertionEnv()
    problem = "cvrp" if env_name == "two_opt" else "pdtsp"
    inst = make_generator(problem, 10, seed=1).sample(4)
    state = env.reset(inst, init="random", generator=torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(2)
    for _ in range(30):
        state, _ = env.step(state, env.random_action(state, generator=gen))
    start = env.restart_best(env.resume_best(state))
    assert torch.equal(start.order, state.best_order)
    assert torch.equal(start.cost, state.best_cost)
    fresh = env.reset(inst, init="random", generator=torch.Generator().manual_seed(0))
    for name in ("succ", "rank"):
        ref = type(fresh)(**{**fresh.__dict__, "order": state.best_order})
        assert torch.equal(getattr(start, name),
                           getattr(env.rebuild_solution(ref), name)), name
    assert torch.equal(start.succ.gather(1, start.order[:, :-1]), start.order[:, 1:])
    costs = env.solution_cost(start, start.pos, best=False)
    torch.testing.assert_close(costs, state.best_cost)


def test_dact_validates_by_sampling_over_its_horizon():
    model = backbones.get("dact")(problem="cvrp", num_customers=6, dim=16, heads=2,
                                  num_layers=1)
    search = model.validation_search()
    assert (search.greedy, search.init, model.config.validate.steps) == (False, "first_fit",
                                                                         1500)
