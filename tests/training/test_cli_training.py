import json
from pathlib import Path

import pytest
import torch

from pyg_routing.cli import main
from tests.helpers import tiny_argv

TINY = tiny_argv(epochs=1)


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    assert main(["train", "--problem", "cvrp", "--pe", "ipexpe", "--out", str(out), *TINY]) == 0
    found = sorted(Path(out).rglob("last.ckpt"))
    assert found
    return str(found[0])


@pytest.mark.slow
def test_train_writes_a_checkpoint_and_finite_metrics(checkpoint):
    assert Path(checkpoint).exists()
    metrics = Path(checkpoint).parents[1] / "logs"
    assert list(metrics.rglob("metrics.csv"))


@pytest.mark.slow
def test_evaluate_a_checkpoint_and_the_random_baseline(checkpoint, tmp_path, capsys):
    common = ["--problem", "cvrp", "--num-customers", "8", "--test.instances", "3",
              "--test.steps", "6", "--test.augment", "2", "--out", str(tmp_path / "eval"),
              "--json"]
    code, out, err = run(capsys, "evaluate", "--checkpoint", checkpoint, "--reference.solver",
                         "pyvrp", "--reference.seconds", "0.1", "--root", str(tmp_path),
                         *common)
    assert code == 0, err
    res = json.loads(out)
    assert res["cost"] <= res["initial_cost"] + 1e-9
    assert res["gap_percent"] > -1e-6       # PyVRP is at least as good on CVRP-8
    assert res["device"] == "cpu"
    code, out, _ = run(capsys, "evaluate", "--policy", "random", "--reference.solver", "none",
                       "--test.init", "random", *common)
    res = json.loads(out)
    assert code == 0 and res["init"] == "random" and res["device"] == "cpu"
    assert res["cost"] <= res["initial_cost"] + 1e-9


@pytest.mark.slow
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_evaluate_on_cuda_reports_the_device_it_ran_on(checkpoint, tmp_path, capsys):
    """The trained policy searches on the GPU, and the result says so (Lightning moves
    the predictor back to the CPU when ``predict`` ends; the device is read before)."""
    code, out, err = run(capsys, "evaluate", "--checkpoint", checkpoint, "--accelerator", "gpu",
                         "--problem", "cvrp", "--num-customers", "8", "--test.instances", "3",
                         "--test.steps", "6", "--reference.solver", "none",
                         "--out", str(tmp_path / "eval"), "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["device"] == "cuda" and res["cost"] <= res["initial_cost"] + 1e-9


@pytest.mark.slow
def test_mismatched_checkpoints_and_bad_options_are_clear_errors(checkpoint, capsys):
    code, _, err = run(capsys, "evaluate", "--checkpoint", checkpoint, "--problem", "tsp",
                       "--num-customers", "8", "--reference.solver", "none")
    assert code == 2 and "trained with problem 'cvrp'" in err
    code, _, err = run(capsys, "evaluate", "--checkpoint", checkpoint, "--num-customers", "20",
                       "--reference.solver", "none")
    assert code == 2 and "trained on cvrp-8" in err and "--any_size" in err
    code, _, err = run(capsys, "train", "--trainer.devices", "999", *TINY)
    assert code == 2 and "--trainer.devices 999 asks for more than the" in err
    # main returns a usage error's status; --pe is a registry name, checked by the recipe
    code, _, err = run(capsys, "train", "--pe", "fourier")
    assert code == 2 and "--pe: unknown encoding 'fourier'" in err and err.count("\n") == 1


@pytest.mark.slow
def test_train_command_runs_plain_ddp_on_two_cpu_processes(tmp_path):
    """`--trainer.devices 2 --trainer.strategy ddp`: Lightning re-launches the same
    command as rank 1."""
    import os
    import subprocess
    import sys

    argv = [sys.executable, "-m", "pyg_routing.cli", "train", "--problem", "tsp", "--pe", "ipe",
            "--out", str(tmp_path), *TINY, "--trainer.devices", "2", "--trainer.strategy",
            "ddp", "--verbose", "--json"]  # Lightning's notices are shown with --verbose only
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env,
                          cwd=tmp_path)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert "GLOBAL_RANK: 1, MEMBER: 2/2" in log
    assert list(tmp_path.rglob("last.ckpt"))
    import json

    result = json.loads(proc.stdout)          # one object: rank 1 prints nothing
    assert result["checkpoint"].endswith("last.ckpt"), proc.stdout


@pytest.mark.slow
def test_pe_init_reaches_the_checkpoint(tmp_path):
    """--model.pe_init default is recorded and reloads with the trained weights."""
    from pyg_routing.training import load_policy

    assert main(["train", "--problem", "cvrp", "--pe", "ipe", "--model.encoder", "gps",
                 "--model.pe_init", "default",
                 "--out", str(tmp_path / "default"), *TINY]) == 0
    (ckpt,) = Path(tmp_path / "default").rglob("last.ckpt")
    policy = load_policy(ckpt, expect_problem="cvrp", expect_pe="ipe")
    assert policy.encoder.pe_init == "default" and "pe_init='default'" in repr(policy.encoder)
    torch.testing.assert_close(dict(policy.state_dict()),
                               {k[len("policy."):]: v for k, v in _weights(ckpt).items()})
    assert main(["train", "--model.pe_init", "xavier", *TINY]) == 2


def test_pe_init_option_takes_a_number_and_refuses_a_bad_one_by_name(tmp_path, capsys):
    from pyg_routing.commands import compare, train
    from pyg_routing.commands.grammar import normalize

    for command, module in (("train", train), ("compare", compare)):
        config = module.parse(normalize(["--pe", "none", "--model.encoder", "gps",
                                                "--model.pe-init", "0.25"])).config
        assert config.model.pe_init == 0.25
        assert module.parse(normalize(["--pe", "none"])).config.model.pe_init == "zero"
        code, _, err = run(capsys, command, "--model.pe_init", "-1", "--out", str(tmp_path))
        assert code == 2 and "--model.pe_init: unknown pe_init '-1'" in err
        assert err.count("\n") == 1 and not any(tmp_path.iterdir())


@pytest.mark.slow
def test_train_with_the_papers_geometric_ipe_frequencies(tmp_path, capsys):
    """--encoding.ipe_frequencies geometric reaches the policy's code, in the checkpoint
    and in the search loop's observation; other encodings refuse it; a bad value is
    refused."""
    from pyg_routing.data import CVRPGenerator
    from pyg_routing.envs.two_opt import observe, reset, route_quantities
    from pyg_routing.functional import ipe
    from pyg_routing.training import DACTLightning, load_policy

    argv = ["train", "--problem", "cvrp", "--pe", "ipexpe", "--encoding.ipe_frequencies",
            "geometric", "--out", str(tmp_path / "geo"), *TINY]
    assert main(argv) == 0
    (ckpt,) = Path(tmp_path / "geo").rglob("last.ckpt")
    policy = load_policy(ckpt, expect_problem="cvrp", expect_pe="ipexpe")
    assert policy.encoder.positional.node_pe.ipe.frequencies == "geometric"
    state = reset(CVRPGenerator(8, seed=3).sample(2), init="sweep")
    rq = route_quantities(state)
    code = policy.prepare(observe(state)).pe                                 # [B, M, 8 + 8]
    literal = ipe(rq.cum_dist, rq.route_length, 8, "invariant", "geometric",
                  route_pos=rq.route_pos).view(2, -1, 8)
    torch.testing.assert_close(code[..., :8], literal)
    harmonic = ipe(rq.cum_dist, rq.route_length, 8, "invariant", "harmonic",
                   route_pos=rq.route_pos).view(2, -1, 8)
    assert not torch.allclose(code[..., :8], harmonic)
    capsys.readouterr()
    assert main(["train", "--problem", "cvrp", "--pe", "none", "--encoding.ipe_frequencies",
                 "geometric", "--out", str(tmp_path / "none"), *TINY]) == 2
    assert "--encoding.ipe_frequencies is an option of the ipe and ipexpe encodings; --pe " \
           "none has none of them" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()
    with pytest.raises(ValueError,
                       match="--encoding.ipe_frequencies must be one of .*harmonic.*got 'linear'"):
        DACTLightning(pe="ipe", ipe_frequencies="linear")
    assert main(["train", "--encoding.ipe_frequencies", "linear", *TINY]) == 2
    assert "encoding.ipe_frequencies" in capsys.readouterr().err


@pytest.mark.slow
def test_the_ablation_options_reach_the_checkpoint_and_the_search_code(tmp_path, capsys):
    """--encoding.ipe_phase index and --encoding.xpe_aggregation median (Tabs. 8, 9) are
    in the checkpoint, in the policy it loads and in the search loop's code; a resume must keep
    them; encodings without the part and problems without demands refuse them."""
    from pyg_routing.data import CVRPGenerator, RoutingData
    from pyg_routing.envs.two_opt import observe, reset, to_routes
    from pyg_routing.training import load_policy
    from pyg_routing.transforms import IPEXPE

    out = tmp_path / "variant"
    assert main(["train", "--problem", "cvrp", "--pe", "ipexpe", "--encoding.ipe_phase",
                 "index", "--encoding.xpe_aggregation", "median", "--out", str(out),
                 *TINY]) == 0
    (ckpt,) = out.rglob("last.ckpt")
    node_pe = load_policy(ckpt, expect_pe="ipexpe").encoder.positional.node_pe
    assert (node_pe.ipe.phase, node_pe.xpe.aggregation) == ("index", "median")
    policy = load_policy(ckpt)
    inst = CVRPGenerator(8, seed=3).sample(2)
    state = reset(inst, init="sweep")
    code = policy.prepare(observe(state)).pe
    want = IPEXPE(8, node_pe.xpe.num_bands, phase="index", aggregation="median",
                  attr_name=None)
    for i, routes in enumerate(to_routes(state, best=False)):
        ref = want.encode(RoutingData.from_routes(inst[i], routes))
        torch.testing.assert_close(code[i, state.num_depots:], ref[1:], rtol=1e-5, atol=1e-5)
    capsys.readouterr()
    for argv, said in (
            (["--pe", "ipexpe", "--resume", str(ckpt)],
             "encoding.ipe_phase='index' (this run: 'distance')"),
            (["--pe", "sin", "--encoding.ipe_phase", "index"],
             "--encoding.ipe_phase is an option of the ipe and ipexpe encodings; --pe sin"),
            (["--pe", "ipe", "--encoding.xpe_aggregation", "mean"],
             "--encoding.xpe_aggregation is an option of the xpe and ipexpe encodings; --pe ipe"),
            (["--problem", "tsp", "--pe", "xpe", "--encoding.xpe_aggregation", "demand_mean"],
             "--encoding.xpe_aggregation demand_mean weighs by demand; tsp has no demands")):
        code = main(["train", *(["--problem", "cvrp"] if "--problem" not in argv else []),
                     *argv, "--out", str(tmp_path / "refused"), *TINY])
        err = capsys.readouterr().err
        assert code == 2 and said in err and err.count("\n") == 1, err
        assert not (tmp_path / "refused").exists()


@pytest.mark.slow
def test_ipe_direction_reaches_the_code_and_a_resume_must_keep_it(tmp_path, capsys):
    """--encoding.ipe_direction aware gives CVRP (invariant under auto) the sin/cos code,
    in the search loop's observation; resuming it with another direction or other
    frequencies is refused by name; a bad value is refused."""
    from pyg_routing.data import CVRPGenerator
    from pyg_routing.envs.two_opt import observe, reset, route_quantities
    from pyg_routing.functional import ipe
    from pyg_routing.training import DACTLightning, load_policy

    assert main(["train", "--problem", "cvrp", "--pe", "ipexpe", "--encoding.ipe_direction",
                 "aware", "--out", str(tmp_path / "aware"), *TINY]) == 0
    (ckpt,) = Path(tmp_path / "aware").rglob("last.ckpt")
    policy = load_policy(ckpt, expect_problem="cvrp", expect_pe="ipexpe")
    assert policy.encoder.positional.node_pe.ipe.direction == "aware"
    state = reset(CVRPGenerator(8, seed=3).sample(2), init="sweep")
    rq = route_quantities(state)
    code = policy.prepare(observe(state)).pe[..., :8]
    for direction, same in (("aware", True), ("invariant", False)):
        want = ipe(rq.cum_dist, rq.route_length, 8, direction, route_pos=rq.route_pos)
        assert torch.allclose(code, want.view(2, -1, 8)) is same
    for option, said in ((["--encoding.ipe_direction", "invariant"],
                          "encoding.ipe_direction='aware' (this run: 'invariant')"),
                         (["--encoding.ipe_direction", "aware", "--encoding.ipe_frequencies",
                           "geometric"],
                          "encoding.ipe_frequencies='harmonic' (this run: 'geometric')")):
        code = main(["train", "--problem", "cvrp", "--pe", "ipexpe", *option, "--resume",
                     str(ckpt), "--out", str(tmp_path / "r"), *TINY])
        assert code == 2 and said in capsys.readouterr().err
    with pytest.raises(ValueError,
                       match="--encoding.ipe_direction must be one of .*auto.*aware.*got 'both'"):
        DACTLightning(pe="ipe", ipe_direction="both")
    assert main(["train", "--encoding.ipe_direction", "both", *TINY]) == 2
    assert "encoding.ipe_direction" in capsys.readouterr().err


@pytest.mark.slow
def test_train_a_plain_transformer_encoder_round_trips_through_the_checkpoint(tmp_path):
    from pyg_routing.training import load_policy

    assert main(["train", "--problem", "tsp", "--pe", "ipexpe", "--model.encoder", "gps",
                 "--model.local_mp", "none",
                 "--out", str(tmp_path), *TINY]) == 0
    (ckpt,) = Path(tmp_path).rglob("last.ckpt")
    policy = load_policy(ckpt, expect_problem="tsp", expect_pe="ipexpe")
    assert policy.encoder.local_mp == "none"
    assert all(layer.local is None for layer in policy.encoder.layers)
    assert not any(".local" in k for k in _weights(ckpt))


@pytest.mark.slow
def test_local_mp_reaches_the_checkpoint_and_a_resume_must_keep_it(tmp_path, capsys):
    """--model.local_mp undirected round-trips; resuming into another local_mp is refused
    by name."""
    from pyg_routing.training import load_policy

    assert main(["train", "--problem", "cvrp", "--pe", "ipe", "--model.encoder", "gps",
                 "--model.local_mp", "undirected",
                 "--out", str(tmp_path / "u"), *TINY]) == 0
    (ckpt,) = Path(tmp_path / "u").rglob("last.ckpt")
    policy = load_policy(ckpt)
    assert policy.encoder.local_mp == "undirected"
    assert "local_mp='undirected'" in repr(policy.encoder)
    assert not any("local_rev" in k for k in _weights(ckpt))
    code = main(["train", "--problem", "cvrp", "--pe", "ipe", "--model.encoder", "gps",
                 "--resume", str(ckpt), "--out", str(tmp_path / "r"), *TINY])
    err = capsys.readouterr().err
    assert code == 2 and f"cannot resume {ckpt}" in err
    assert "model.local_mp='undirected' (this run: 'directed')" in err
    assert not (tmp_path / "r").exists()          # refused before anything is written
    code = main(["train", "--problem", "cvrp", "--pe", "none", "--model.encoder", "gps",
                 "--model.local_mp",
                 "undirected", "--resume", str(ckpt), "--out", str(tmp_path / "r"), *TINY])
    assert code == 2 and "pe='ipe' (this run: 'none')" in capsys.readouterr().err
    assert main(["train", "--model.local_mp", "both", *TINY]) == 2
    assert "model.local_mp" in capsys.readouterr().err


def _weights(ckpt: Path) -> dict:
    return torch.load(ckpt, map_location="cpu", weights_only=False)["state_dict"]


@pytest.mark.slow
def test_train_resume_continues_like_an_uninterrupted_run(checkpoint, tmp_path):
    """`train --train.epochs 2 --resume last.ckpt` (the 1-epoch run of the fixture) ends
    with the weights of a straight 2-epoch run: same batches, same decayed lr."""
    args = list(TINY)
    args[args.index("--train.epochs") + 1] = "2"
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert main(["train", "--problem", "cvrp", "--pe", "ipexpe", "--out", str(straight),
                 *args]) == 0
    assert main(["train", "--problem", "cvrp", "--pe", "ipexpe", "--out", str(resumed),
                 "--resume", checkpoint, *args]) == 0
    a = _weights(next(straight.rglob("last.ckpt")))
    b = _weights(next(resumed.rglob("last.ckpt")))
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.mark.parametrize("argv, message", [
    (["--backbone", "dact", "--pe", "dact_cpe", "--encoding.cpe_scope", "ring"],
     "--encoding.cpe_scope must be one of route, tour, null; got 'ring'"),
    (["--backbone", "dact", "--train.curriculum", "linear"],
     "--train.curriculum must be one of floor, sigmoid; got 'linear'"),
    (["--backbone", "dact", "--train.grad_clip", "layer"],
     "--train.grad_clip must be one of joint, per_group; got 'layer'"),
    (["--backbone", "dact", "--pe", "ipexpe", "--encoding.cpe_scope", "tour"],
     "--encoding.cpe_scope is an option of the dact_cpe encodings; --pe ipexpe has none"),
    (["--backbone", "n2s", "--encoding.cpe_scope", "tour"],
     "--encoding.cpe_scope is an option of the dact backbone; the n2s backbone has no such"),
    (["--backbone", "dact", "--train.xi_cl", "-1"], "--train.xi_cl must be >= 0, got -1"),
])
def test_dact_training_rules_refuse_bad_values_in_one_line(argv, message, tmp_path, capsys):
    """DACT's rules (issue 38) refused by name, in the configuration's own words, before
    anything is written."""
    code, _, err = run(capsys, "train", *argv, "--out", str(tmp_path / "r"))
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "r").exists()
