"""N2S and NDS with ``encoder="gps"``: the GraphGPS-style encoder, decoders unchanged."""

import pytest
import torch

from pyg_routing.cli import main as cli
from pyg_routing.data.generators import make_generator
from pyg_routing.envs import PairReinsertionEnv
from pyg_routing.envs.deconstruction import (
    NDSFeatures,
    PolicyDestroy,
    ProblemArrays,
    observe,
    start_solutions,
)
from pyg_routing.models import GPSEncoder, N2SEncoder, N2SPolicy, NDSEncoder, NDSPolicy
from pyg_routing.search import DestroyRepairSearch, MaxIterations, StepSearch


@pytest.mark.parametrize("pe", ["ipexpe", "rpe", "ape", "rope", "none"])
def test_n2s_on_the_gps_encoder_searches_feasible_tours(pe):
    torch.manual_seed(0)
    native = N2SPolicy.build("pdtsp", pe=pe, dim=32, heads=4, pe_dim=16)
    gps = N2SPolicy.build("pdtsp", pe=pe, dim=32, heads=4, pe_dim=16, encoder="gps")
    assert isinstance(native.encoder, N2SEncoder) and isinstance(gps.encoder, GPSEncoder)
    assert gps.encoder.dim == native.encoder.dim and gps.encoder.heads == 4
    # the decoders and the critic are N2S's, parameter for parameter
    decoders = {k: v.shape for k, v in native.state_dict().items() if not k.startswith("enc")}
    assert decoders == {k: v.shape for k, v in gps.state_dict().items()
                        if not k.startswith("enc")}
    inst = make_generator("pdtsp", 8, seed=1).sample(2)
    res = StepSearch(env=PairReinsertionEnv(), augment=2).run(inst, gps, MaxIterations(6),
                                                             seed=3)
    for routes in res.routes:                    # one tour, every node once, pickup first
        (tour,) = routes
        assert sorted(tour) == list(range(1, 9))                # 8 customers, 4 pairs
        assert all(tour.index(p) < tour.index(p + 4) for p in range(1, 5))


@pytest.mark.parametrize("problem", ["cvrp", "vrptw", "pcvrp"])
def test_nds_on_the_gps_encoder_marks_the_depot_and_keeps_nds_decoder(problem):
    torch.manual_seed(0)
    policy = NDSPolicy.build(problem, pe="ipexpe", dim=32, heads=4, encoder="gps")
    native = NDSPolicy.build(problem, pe="ipexpe", dim=32, heads=4, ff_hidden=64)
    assert isinstance(policy.encoder, GPSEncoder) and isinstance(native.encoder, NDSEncoder)
    assert policy.encoder.mark_depot and policy.encoder.feature_width == \
        native.encoder.feature_width
    assert len(policy.encoder.layers) == 4                       # NDS's 2 + 2 layers
    assert {k: v.shape for k, v in policy.decoder.state_dict().items()} == \
        {k: v.shape for k, v in native.decoder.state_dict().items()}
    inst = make_generator(problem, 12, seed=2).sample(2)
    arrays = ProblemArrays.from_instances(inst)
    import numpy as np
    state = start_solutions(arrays, np.repeat(np.arange(2, dtype=np.int32), 2), rng=0)
    obs = observe(state, NDSFeatures.from_instances(inst))
    sets, log_prob, _ = policy(obs, 3, 4, generator=torch.Generator().manual_seed(0))
    assert sets.shape == (4, 3, 4) and torch.isfinite(log_prob).all()
    assert bool((sets >= 1).all()) and bool((sets <= 12).all())
    res = DestroyRepairSearch(augment=2, rollouts=4).run(
        inst, PolicyDestroy(policy, inst, k=4), MaxIterations(2), seed=0)
    assert res.iterations == 2 and (res.cost <= res.initial_cost + 1e-9).all()


def test_gps_only_settings_are_refused_for_nds_own_encoder():
    with pytest.raises(ValueError, match="directed and ff_hidden are options of NDS's own"):
        NDSPolicy.build("cvrp", encoder="gps", directed=True)
    with pytest.raises(ValueError, match="unknown encoder 'gin'"):
        N2SPolicy.build("pdtsp", encoder="gin")


def test_the_cli_takes_encoder_for_every_backbone(tmp_path, capsys):
    common = ["--trainer.accelerator", "cpu", "--no-progress", "--train.epochs", "1",
              "--train.batches-per-epoch", "1", "--train.batch-size", "2",
              "--validate.instances", "2", "--out", str(tmp_path)]
    assert cli(["train", "--backbone", "n2s", "--problem", "pdtsp", "--num-customers", "6",
                "--model.encoder", "gps", "--model.local-mp", "undirected", "--model.dim",
                "16", "--encoding.dim", "8", "--train.t-train", "2", "--train.n-step", "2",
                "--validate.steps", "2", *common]) == 0
    assert cli(["train", "--backbone", "dact", "--model.encoder", "native",
                "--model.pe-init", "default", *common]) == 2
    assert ("--model.pe_init is an option of the gps encoder; --model.encoder native has no "
            "such setting") in capsys.readouterr().err
    assert cli(["train", "--backbone", "nds", "--model.local-mp", "none", *common]) == 2
    assert ("--model.local_mp is an option of the gps encoder; --model.encoder native has no "
            "such setting") in capsys.readouterr().err
