"""The pieces of the DACT backbone fit together: env state -> encoder -> decoder -> step."""

import torch

from pyg_routing.data import CVRPGenerator, RoutingData
from pyg_routing.data.route_quantities import edge_index_from_successors
from pyg_routing.envs.two_opt import (
    action_mask,
    node_features,
    positional_encoding,
    reset,
    route_quantities,
    step,
    to_routes,
)
from pyg_routing.models import GPSEncoder, PairDecoder, ValueHead


def test_a_policy_drives_the_environment_with_encodings_recomputed_every_step():
    torch.manual_seed(0)
    inst = CVRPGenerator(10, seed=0).sample(4)
    state = reset(inst, init="sweep")
    b, m = state.order.shape
    enc = GPSEncoder(in_channels=7, dim=32, heads=4, num_layers=1, pe="ipexpe", pe_dim=16)
    dec, critic = PairDecoder(32), ValueHead(32)
    start = state.best_cost.clone()
    for _ in range(8):
        rq = route_quantities(state)
        pe = positional_encoding(state, dim=16, num_bands=4, rq=rq)
        h = enc.forward_dense(node_features(state).float(), edge_index_from_successors(state.succ),
                              pe, rq.route_pos.view(b, m), rq.route_id.view(b, m))
        action, logp, _ = dec.act(h, action_mask(state))
        value = critic(h)
        assert torch.isfinite(logp).all() and value.shape == (b,)
        state, reward = step(state, action)
        assert (reward >= 0).all()
    assert (state.best_cost <= start + 1e-9).all()
    for i, routes in enumerate(to_routes(state)):
        data = RoutingData.from_routes(inst[i], routes)
        data.check()
        torch.testing.assert_close(data.cost().double(), state.best_cost[i].double(),
                                   atol=1e-5, rtol=1e-5)


def test_the_policy_gathers_along_the_observed_successors_with_the_scatter_values():
    """``observe`` hands the policy the successor arrays; the directed encoder gathers
    along them and embeds as from ``edge_index`` alone (``succ=None``)."""
    from dataclasses import replace

    from pyg_routing.envs.two_opt import observe
    from pyg_routing.models import DACTPolicy

    torch.manual_seed(0)
    state = reset(CVRPGenerator(10, seed=4).sample(3), init="sweep")
    policy = DACTPolicy.build("cvrp", pe="ipexpe", dim=32, heads=4, num_layers=2).eval()
    obs = observe(state)
    assert torch.equal(obs.succ, state.succ)
    assert torch.equal(obs.edge_index, edge_index_from_successors(state.succ))
    with torch.no_grad():
        torch.testing.assert_close(policy.embed(obs), policy.embed(replace(obs, succ=None)),
                                   atol=1e-6, rtol=1e-5)
