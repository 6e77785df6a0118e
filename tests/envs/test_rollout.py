"""Observations, the DACT policy and batched improvement rollouts with augmentation."""

import pytest
import torch

from pyg_routing.data import CVRPGenerator, RoutingData, TSPGenerator
from pyg_routing.envs import TwoOptEnv, UnsupportedProblemError, augment_positions
from pyg_routing.envs.two_opt import action_mask, observe, reset, step, to_routes
from pyg_routing.models.dact.policy import DACTPolicy
from pyg_routing.search import improve
from pyg_routing.transforms import RandomWalkPE

ALL_PE = ["ipexpe", "ipe", "xpe", "sin", "cycleformer", "dact_cpe", "ape", "alibi", "rpe",
          "spd", "rope", "none", "lap", "rwse"]


def _check(inst, result):
    for i, routes in enumerate(result.routes):
        data = RoutingData.from_routes(inst[i], routes)
        data.check()
        torch.testing.assert_close(data.cost().double(), result.cost[i].double(),
                                   atol=1e-5, rtol=1e-5)


def test_augmentation_keeps_routes_and_costs():
    inst = CVRPGenerator(20, seed=1).sample(4)
    state = reset(inst)
    aug = TwoOptEnv().augment(state, 8)
    assert len(aug) == 32 and torch.equal(aug.order.view(8, 4, -1)[0], state.order)
    assert torch.equal(aug.pos.view(8, 4, -1, 2)[0], state.pos)          # identity first
    torch.testing.assert_close(aug.cost.view(8, 4), state.cost.expand(8, 4),
                               atol=1e-5, rtol=1e-6)
    # The 8 copies are distinct (no symmetry repeated) and keep the depot fixed.
    pos = augment_positions(inst.pos, 8).view(8, 4, -1, 2)
    assert torch.equal(pos[:, :, 0], inst.pos[:, 0].expand(8, 4, 2))
    flat = pos[:, 0, 1:].reshape(8, -1)
    assert torch.cdist(flat, flat).add(torch.eye(8)).min() > 1e-3
    with pytest.raises(ValueError, match="augment"):
        augment_positions(inst.pos, 9)
    # Exact under autocast too (a matmul there would round coordinates to bf16).
    with torch.autocast("cpu", dtype=torch.bfloat16):
        amp = augment_positions(inst.pos, 8)
    assert amp.dtype == inst.pos.dtype and torch.equal(amp.view(8, 4, -1, 2), pos)


def test_best_of_eight_is_no_worse_than_one_copy():
    torch.manual_seed(0)
    inst = CVRPGenerator(10, seed=2).sample(3)
    pol = DACTPolicy.build("cvrp", pe="ipexpe", dim=32, heads=4, num_layers=1, pe_dim=16)
    one = improve(inst, pol, steps=6, greedy=True)
    eight = improve(inst, pol, steps=6, greedy=True, augment=8)
    torch.testing.assert_close(one.initial_cost, eight.initial_cost)
    # Copy 0 of the augmented run is the unaugmented run (greedy is deterministic).
    assert (eight.cost <= one.cost + 1e-6).all()
    _check(inst, one)
    _check(inst, eight)
    rnd = improve(inst, steps=20, augment=8, generator=torch.Generator().manual_seed(0))
    _check(inst, rnd)
    assert (rnd.cost <= rnd.initial_cost + 1e-6).all()


def test_random_policy_improves_cvrp20_and_solutions_are_feasible():
    inst = CVRPGenerator(20, seed=0).sample(16)
    res = improve(inst, steps=200, generator=torch.Generator().manual_seed(0))
    assert res.cost.shape == res.initial_cost.shape == (16,)
    assert (res.cost <= res.initial_cost + 1e-6).all()
    assert res.cost.mean() < res.initial_cost.mean()
    assert res.seconds > 0
    _check(inst, res)
    # Same generator seed -> same result.
    again = improve(inst, steps=200, generator=torch.Generator().manual_seed(0))
    assert torch.equal(again.cost, res.cost) and again.routes == res.routes


@pytest.mark.parametrize("pe", ALL_PE)
def test_untrained_policy_with_every_encoding_takes_valid_steps(pe):
    torch.manual_seed(0)
    for gen, problem in ((CVRPGenerator(10, seed=3), "cvrp"), (TSPGenerator(10, seed=3), "tsp")):
        inst = gen.sample(2)
        pol = DACTPolicy.build(problem, pe=pe, dim=32, heads=4, num_layers=1, pe_dim=16)
        state = reset(inst)
        for _ in range(3):
            obs = pol.prepare(observe(state))
            b, m = state.order.shape
            width = TwoOptEnv.feature_width(problem)
            assert obs.x.shape == (b, m, width) and obs.mask.shape == (b, m, m)
            assert obs.extra.shape == (b, 2)
            assert (obs.pe is None) == (pol.encoder.positional.node_pe is None)
            with torch.no_grad():
                action, logp, ent, value = pol(obs)
                assert obs.mask[torch.arange(b), action[:, 0], action[:, 1]].all()
                assert torch.isfinite(logp).all() and torch.isfinite(ent).all()
                assert value.shape == (b,) and torch.isfinite(value).all()
                # Greedy is deterministic; scoring the sampled action gives its log-prob.
                g1, g2 = pol(obs, greedy=True)[0], pol(obs, greedy=True)[0]
                assert torch.equal(g1, g2)
                torch.testing.assert_close(pol(obs, action=action)[1], logp)
            state, _ = step(state, action)
        for i, routes in enumerate(to_routes(state)):
            RoutingData.from_routes(inst[i], routes).check()


def test_log_prob_has_gradients_and_empty_mask_raises():
    torch.manual_seed(0)
    inst = CVRPGenerator(10, seed=4).sample(2)
    pol = DACTPolicy.build("cvrp", pe="ipexpe", dim=32, heads=4, num_layers=1, pe_dim=16)
    obs = observe(reset(inst))
    action, logp, ent, value = pol(obs)
    (logp.sum() + value.sum() - ent.sum()).backward()
    assert all(p.grad is not None for p in pol.decoder.parameters())
    obs.mask = torch.zeros_like(obs.mask)
    with pytest.raises(ValueError, match="no allowed move"):
        pol(obs)
    pol.reset_parameters()
    assert DACTPolicy.build("vrptw", pe="none").encoder.in_channels == 10
    with pytest.raises(UnsupportedProblemError,
                       match="the two_opt environment supports tsp, cvrp, vrptw, pdtsp, "
                             "not 'pcvrp'"):
        DACTPolicy.build("pcvrp")


def test_rwse_on_merged_depot_copies_matches_the_transform():
    inst = CVRPGenerator(12, seed=5).sample(3)
    state = reset(inst)
    a = torch.tensor([[state.num_depots, state.num_depots + 3]] * 3)
    a = torch.where(action_mask(state)[torch.arange(3), a[:, 0], a[:, 1]].unsqueeze(1), a,
                    torch.zeros_like(a))
    state, _ = step(state, a)
    pol = DACTPolicy.build("cvrp", pe="rwse", dim=32, num_layers=1)
    code = pol.prepare(observe(state)).pe                                     # [B, M, 8]
    k = state.num_depots
    for i, routes in enumerate(to_routes(state, best=False)):
        ref = RandomWalkPE(8, attr_name=None).encode(RoutingData.from_routes(inst[i], routes))
        torch.testing.assert_close(code[i, k:], ref[1:].to(code.dtype), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(code[i, :k], ref[:1].expand(k, -1).to(code.dtype))


def test_ipexpe_observation_matches_the_env_encoding():
    from pyg_routing.envs.two_opt import positional_encoding

    state = reset(CVRPGenerator(10, seed=6).sample(2))
    pol = DACTPolicy.build("cvrp", pe="ipexpe", dim=32, num_layers=1, pe_dim=16, num_bands=4)
    ref = positional_encoding(state, dim=16, num_bands=4)
    torch.testing.assert_close(pol.prepare(observe(state)).pe, ref.to(torch.float32))


class _ForwardOnly(torch.nn.Module):
    """A policy without ``act``: ``improve`` falls back to ``policy(obs)[0]``."""

    def __init__(self, policy: DACTPolicy) -> None:
        super().__init__()
        self.inner = policy
        self.encoder = policy.encoder

    def forward(self, obs, greedy=False, generator=None):
        return self.inner(obs, greedy=greedy, generator=generator)


def test_search_path_act_makes_the_same_moves_as_forward():
    torch.manual_seed(0)
    inst = CVRPGenerator(12, seed=5).sample(3)
    pol = DACTPolicy.build("cvrp", pe="ipexpe", dim=32, heads=4, num_layers=1, pe_dim=16)
    fast = improve(inst, pol, steps=15, init="random", augment=2,
                   generator=torch.Generator().manual_seed(7))
    full = improve(inst, _ForwardOnly(pol), steps=15, init="random", augment=2,
                   generator=torch.Generator().manual_seed(7))
    assert fast.routes == full.routes
    assert torch.equal(fast.cost, full.cost)
    obs = observe(reset(inst))
    with torch.no_grad():
        assert torch.equal(pol.act(obs, generator=torch.Generator().manual_seed(3)),
                           pol(obs, generator=torch.Generator().manual_seed(3))[0])
    _check(inst, fast)
