"""In-place ops only where they are cheap (``models/inplace.py``): ``InplaceReLU`` and
``writable``, and no training graph of a backbone rebuilding a view's base
(``CopySlices``)."""

import numpy as np
import pytest
import torch
from torch import nn

from pyg_routing.data.generators import make_generator
from pyg_routing.envs import PairReinsertionEnv, TwoOptEnv
from pyg_routing.envs.deconstruction import PolicyDestroy, ProblemArrays, start_solutions
from pyg_routing.models import DACTPolicy, N2SPolicy, NDSPolicy
from pyg_routing.models.inplace import InplaceReLU, writable


def _graph_nodes(root):
    """The names of every node of the autograd graph behind ``root``."""
    seen, stack, names = set(), [root.grad_fn], []
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        names.append(type(fn).__name__)
        stack.extend(next_fn for next_fn, _ in fn.next_functions)
    return names


def test_writable_is_false_only_for_a_view_that_autograd_records():
    leaf = torch.randn(4, 3, requires_grad=True)
    fresh = leaf * 2
    view = fresh.view(12)
    assert writable(fresh) and not writable(view)
    assert writable(torch.randn(4, 3).view(12))            # no gradient: any view
    with torch.no_grad():
        assert writable((leaf * 2).view(12))


def test_inplace_relu_is_in_place_where_writable_and_equal_everywhere():
    relu = InplaceReLU()
    assert repr(relu) == "InplaceReLU(inplace=True)"
    x = torch.randn(5, 4)
    want = torch.relu(x)
    assert relu(x) is x and torch.equal(x, want)            # no autograd: in place
    linear = nn.Linear(4, 6)
    inp = torch.randn(2, 5, 4)
    g = torch.randn(2, 5, 6)
    outs = {}
    for name, act in (("inplace", nn.ReLU(inplace=True)), ("ours", relu)):
        linear.zero_grad()
        y = act(linear(inp))                      # a view of the [10, 6] product
        (y * g).sum().backward()
        outs[name] = (y.detach(), linear.weight.grad.clone(), _graph_nodes(y))
    assert torch.equal(outs["ours"][0], outs["inplace"][0])
    assert torch.equal(outs["ours"][1], outs["inplace"][1])
    assert "CopySlices" in outs["inplace"][2] and "CopySlices" not in outs["ours"][2]


@pytest.mark.parametrize("backbone", ["dact native", "dact gps", "n2s", "nds"])
def test_no_training_graph_rebuilds_a_views_base(backbone):
    """A training forward (DACT's and N2S's actor and critic, NDS's log-probabilities
    of given removals) has no ``CopySlices`` node: no in-place op on a view that
    autograd records."""
    torch.manual_seed(0)
    if backbone == "nds":
        policy = NDSPolicy.build("cvrp")
        instances = make_generator("cvrp", 20, seed=0).sample(1)
        destroy = PolicyDestroy(policy, instances)
        arrays = ProblemArrays.from_instances(instances)
        obs = destroy.observe(start_solutions(arrays, np.zeros(2, np.int32),
                                              rng=np.random.default_rng(0)))
        with torch.no_grad():
            selected, _, z = policy(obs, 4, 5, generator=torch.Generator().manual_seed(4))
        policy.train()
        _, log_prob, _ = policy(obs, 4, selected=selected, z=z)
        names = _graph_nodes(log_prob.mean())
        assert len(names) > 50 and "CopySlices" not in names
        return
    if backbone == "n2s":
        env, problem = PairReinsertionEnv(), "pdtsp"
        policy = N2SPolicy.build(problem, pe="dact_cpe")
    else:
        env, problem = TwoOptEnv(), "tsp"
        policy = DACTPolicy.build(problem, encoder=backbone.split()[1])
    inst = make_generator(problem, 10, seed=0).sample(3)
    state = env.reset(inst, init="random", generator=torch.Generator().manual_seed(0))
    obs = policy.prepare(env.policy_observation(state, torch.float32))
    with torch.no_grad():
        action = policy.act(obs, generator=torch.Generator().manual_seed(0))
    policy.train()
    _, log_prob, entropy, value = policy(obs, action=action)
    loss = log_prob.mean() + entropy.mean() + value.square().mean()
    names = _graph_nodes(loss)
    assert len(names) > 50 and "CopySlices" not in names
