"""The search networks under ``torch.compile`` (``models/compiled.py``) compute what
the eager code computes, up to float reassociation; they run only where no gradient
flows; and a policy without a compiled path says so."""

import shutil
import time

import pytest
import torch

from pyg_routing.data.generators import make_generator
from pyg_routing.envs import PairReinsertionEnv
from pyg_routing.envs.two_opt import TwoOptEnv
from pyg_routing.functional import chunks
from pyg_routing.models import DACTPolicy, N2SPolicy, NDSPolicy
from pyg_routing.models import compiled as compiled_module
from pyg_routing.models.compiled import is_compiled, set_compiled
from pyg_routing.search import StepSearch, budget

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="torch.compile on CPU needs a C++ compiler")


def _observation(env, problem: str, n: int, b: int, seed: int = 0):
    inst = make_generator(problem, n, seed=seed).sample(b)
    state = env.reset(inst, init="random", generator=torch.Generator().manual_seed(seed))
    return env.policy_observation(state, torch.float32)


def _twins(build):
    """An eager policy and a compiled one with the same weights."""
    torch.manual_seed(0)
    eager = build().eval()
    twin = build().eval()
    twin.load_state_dict(eager.state_dict())
    return eager, twin


def test_dact_gps_policy_compiled_in_slices_matches_eager(monkeypatch):
    obs = _observation(TwoOptEnv(), "cvrp", 12, 7)
    eager, twin = _twins(lambda: DACTPolicy.build("cvrp", dim=32, pe_dim=8))
    assert set_compiled(twin, True) == ["encoder", "decoder"]
    assert "compiled=True" in repr(twin.encoder) and "compiled=True" in repr(twin.decoder)
    # slices of 3, 3 and 1 instances: two shapes, the second compiled with a dynamic batch
    monkeypatch.setattr(chunks, "CHUNK_ELEMENTS", 3 * 8 * obs.x.size(1) * 32)
    with torch.no_grad():
        assert twin.encoder.slices_without_arcs(7, obs.x.size(1),
                                                twin.encoder.dense_inputs(obs)) == 3
        torch.testing.assert_close(twin.embed(obs), eager.embed(obs), atol=1e-5, rtol=1e-5)
        assert torch.equal(twin.act(obs, greedy=True), eager.act(obs, greedy=True))
    # set back: the eager code again, bit for bit
    assert set_compiled(twin, False) == ["encoder", "decoder"]
    with torch.no_grad():
        assert torch.equal(twin.embed(obs), eager.embed(obs))


def test_compiled_paths_stay_eager_with_gradients(monkeypatch):
    obs = _observation(TwoOptEnv(), "cvrp", 8, 3)
    eager, twin = _twins(lambda: DACTPolicy.build("cvrp", dim=16, pe_dim=8, compiled=True))
    set_compiled(eager, False)

    def refuse(fn):
        raise AssertionError("compiled with a gradient")

    monkeypatch.setattr(compiled_module, "compiled_function", refuse)
    h = twin.embed(obs)                               # training: autograd, eager code
    assert h.requires_grad and torch.equal(h, eager.embed(obs))
    with torch.no_grad(), pytest.raises(AssertionError, match="compiled with a gradient"):
        twin.embed(obs)


def test_n2s_policy_compiled_in_slices_matches_eager(monkeypatch):
    """N2S's encoder and both decoders compiled (the pair MLP and the places' MLP in
    their elementwise forms), each in slices of one or two instances: embeddings and
    both decoders' logits at 1e-5, the greedy action exactly."""
    obs = _observation(PairReinsertionEnv(), "pdtsp", 10, 5)
    eager, twin = _twins(lambda: N2SPolicy.build("pdtsp", dim=32, pe_dim=16))
    assert set_compiled(twin, True) == ["encoder", "removal", "reinsertion"]
    assert "compiled=True" in repr(twin.removal) and "compiled=True" in repr(twin.reinsertion)
    obs = eager.prepare(obs)
    m = obs.x.size(1)
    # encoder slices of 2, 2, 1 (4 H M^2 elements per instance); one instance per
    # slice in the removal decoder and the places' MLP
    monkeypatch.setattr(chunks, "CHUNK_ELEMENTS", 2 * 4 * 4 * m * m)
    with torch.no_grad():
        h = eager.embed(obs)
        torch.testing.assert_close(twin.embed(obs), h, atol=1e-5, rtol=1e-5)
        ours, ref = (p._choose(h, obs, None, True, None) for p in (twin, eager))
    assert torch.equal(ours[0], ref[0])
    for got, want in ((ours[1], ref[1]), (ours[3], ref[3])):      # removal, places
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_dact_native_policy_compiled_in_slices_matches_eager(monkeypatch):
    obs = _observation(TwoOptEnv(), "cvrp", 12, 5)
    eager, twin = _twins(lambda: DACTPolicy.build("cvrp", encoder="native", dim=16))
    assert set_compiled(twin, True) == ["encoder", "decoder"]
    assert "compiled=True" in repr(twin.encoder) and "compiled=True" in repr(twin.decoder)
    obs = eager.prepare(obs)
    m = obs.x.size(1)
    # the decoder's scores in slices of 2, 2 and 1 instances
    monkeypatch.setattr(chunks, "CHUNK_ELEMENTS", 2 * m * m * twin.decoder.mix[0].out_features)
    with torch.no_grad():
        h = eager.embed(obs)
        torch.testing.assert_close(twin.embed(obs), h, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(twin.decoder.dact_logits(h), eager.decoder.dact_logits(h),
                                   atol=1e-5, rtol=1e-5)
        assert torch.equal(twin.act(obs, greedy=True), eager.act(obs, greedy=True))


class _Power(torch.nn.Module):
    """A module whose compiled body needs one graph per ``power`` (an int attribute
    Dynamo specializes on), as each encoding of a compared policy needs its own."""

    def __init__(self, power: int) -> None:
        super().__init__()
        self.power, self.compiled = power, True

    def body(self, x):
        return x ** self.power

    def forward(self, x):
        return compiled_module.search_body(self, "body", x)(x)


def test_many_configurations_all_run_compiled(monkeypatch):
    """``compare --test.compile`` over the 14 encodings compiles one graph per encoding
    of the same method: past Dynamo's default limit of 8 graphs per function the later
    ones would run eagerly (a timed comparison between compiled and eager policies).
    With a backend that counts graphs: 12 configurations, 12 graphs, each result right."""
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    real = torch.compile
    monkeypatch.setattr(compiled_module.torch, "compile",
                        lambda fn, **kw: real(fn, backend=counting, **kw))
    x = torch.arange(1.0, 5.0)
    with torch.no_grad():
        for power in range(1, 13):
            assert torch.equal(_Power(power)(x), x ** power)
    assert len(graphs) == 12


def test_a_policy_without_a_compiled_path_sets_nothing():
    policy = NDSPolicy.build("cvrp", pe="none")
    assert set_compiled(policy, True) == [] and not is_compiled(policy)


def test_step_search_compiles_untimed_and_draws_what_the_eager_policy_draws(monkeypatch):
    """The search's first, greedy move compiles (here: a stand-in that takes 1 s on its
    first call and then runs the eager code); it draws nothing and is not timed."""
    first_calls = []

    def slow_first_call(fn):
        def run(*args, **kwargs):
            if not first_calls:
                first_calls.append(True)
                time.sleep(1.0)
            return fn(*args, **kwargs)
        return run

    monkeypatch.setattr(compiled_module, "compiled_function", slow_first_call)
    inst = make_generator("cvrp", 8, seed=0).sample(3)
    eager, twin = _twins(lambda: DACTPolicy.build("cvrp", dim=16, pe_dim=8))
    twin.encoder.compiled = True
    assert is_compiled(twin) and not is_compiled(eager)
    search = StepSearch(TwoOptEnv(), init="random", augment=2)
    a = search.run(inst, eager, budget(iterations=6), seed=1)
    b = search.run(inst, twin, budget(iterations=6), seed=1)
    assert first_calls and torch.equal(a.cost, b.cost) and a.routes == b.routes
    first_calls.clear()
    timed = search.run(inst, twin, budget(seconds=0.5), seed=1)
    assert first_calls and timed.iterations > 0 and timed.seconds < 1.0


_CUDA_CASES = {
    "dact_gps": (TwoOptEnv, "cvrp", 12, lambda: DACTPolicy.build("cvrp", dim=32, pe_dim=8)),
    "dact_native": (TwoOptEnv, "cvrp", 12,
                    lambda: DACTPolicy.build("cvrp", encoder="native", dim=16)),
    "n2s": (PairReinsertionEnv, "pdtsp", 10,
            lambda: N2SPolicy.build("pdtsp", dim=32, pe_dim=16)),
}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("case", list(_CUDA_CASES))
def test_policies_compiled_on_cuda_match_eager(case):
    """Each compiled search network under Triton: embeddings at 1e-4, greedy moves
    exactly (the forms written for the compiler included)."""
    env, problem, n, build = _CUDA_CASES[case]
    obs = _observation(env(), problem, n, 7)
    eager, twin = _twins(build)
    eager, twin = eager.cuda(), twin.cuda()
    set_compiled(twin, True)
    obs = eager.prepare(obs.to("cuda"))
    with torch.no_grad():
        torch.testing.assert_close(twin.embed(obs), eager.embed(obs), atol=1e-4, rtol=1e-4)
        assert torch.equal(twin.act(obs, greedy=True), eager.act(obs, greedy=True))
