"""Issue 28: bad command lines through the real entry point (``pyg_routing.cli.main``).

Every row of the tables is refused with exit status 2 and ONE line on stderr that
names the offending option (no traceback), before anything is written: the tests
run in an empty ``tmp_path`` (also the working directory, so default output and
cache folders would land there) and check it stays empty. Out-of-range numbers are
refused by the option parser; options that do not apply, and hardware this machine
does not have, by the command before it writes, solves or trains anything.
"""

from __future__ import annotations

import argparse
import importlib.util

import pytest
import torch

from pyg_routing.cli import build_parser, main

#: a tiny ``compare`` (DACT, CPU-sized), never reached: every row fails before training
COMPARE = ["compare", "--pe", "none", "--num-customers", "8", "--epochs", "1", "--dim", "16",
           "--heads", "2", "--layers", "1", "--pe-dim", "8", "--batch-size", "4",
           "--t-train", "4", "--n-step", "2", "--val-steps", "3", "--batches-per-epoch", "2",
           "--val-size", "4", "--instances", "2", "--steps", "2", "--no-progress"]
#: the NDS counterpart
COMPARE_NDS = ["compare", "--backbone", "nds", "--pe", "none", "--num-customers", "10",
               "--epochs", "1", "--dim", "16", "--heads", "2", "--layers", "2", "--pe-dim", "8",
               "--batch-size", "3", "--rollouts", "6", "--remove", "4", "--warmup-steps", "2",
               "--iterations", "3", "--val-steps", "2", "--val-rollouts", "4",
               "--val-augment", "2", "--preset", "paper", "--batches-per-epoch", "1",
               "--val-size", "2", "--instances", "2", "--steps", "2", "--no-progress"]
TRAIN = ["train", "--num-customers", "8", "--epochs", "1", "--dim", "16", "--heads", "2",
         "--layers", "1", "--batch-size", "4", "--t-train", "4", "--n-step", "2",
         "--no-progress"]
EVALUATE = ["evaluate", "--policy", "random", "--instances", "1", "--steps", "1",
            "--no-progress"]
SEARCH = ["search", "--num-customers", "10", "--instances", "1", "--iterations", "1",
          "--no-progress"]
CUDA = torch.cuda.is_available()
MPS = torch.backends.mps.is_available()


def _status(argv: list[str]) -> int:
    """``main``'s exit status: returned, or argparse's ``SystemExit``."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)


def _refused(argv: list[str], message: str, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    command = argv[0]
    status = _status([*argv, "--out", str(tmp_path / "out")] if _has_out(argv) else argv)
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"pyg-routing {command}"), err
    assert message in err, err
    assert not any(tmp_path.iterdir()), list(tmp_path.rglob("*"))


def _has_out(argv: list[str]) -> bool:
    return argv[0] in ("train", "evaluate", "compare", "search")


# ------------------------------------------------ 3: numbers out of range, abbreviations
@pytest.mark.parametrize("argv, message", [
    (["generate", "--seed", "-1"], "argument --seed: must be >= 0, got -1"),
    (["generate", "--capacity", "0"], "argument --capacity: must be a finite number > 0"),
    (["solve", "--solver-seed", "-2"], "argument --solver-seed: must be >= 0, got -2"),
    (["probe", "anisometry", "--num-customers", "0"], "argument --num-customers: must be >= 1"),
    (["probe", "entropy", "--time-limit", "0"], "argument --time-limit: must be a finite"),
    (["probe", "entropy", "--workers", "0"], "argument --workers: must be >= 1, got 0"),
    (["probe", "spearman", "--dim", "7"], "argument --dim: must be an even integer >= 2"),
    (["probe", "spearman", "--pairs", "0"], "argument --pairs: must be >= 1, got 0"),
    (["probe", "spearman", "--probe-seed", "-1"], "argument --probe-seed: must be >= 0"),
    ([*TRAIN, "--seed", "-1"], "argument --seed: must be an integer in 0..4294967295"),
    ([*TRAIN, "--seed", "4294967296"], "argument --seed: must be an integer in 0..4294967295"),
    ([*COMPARE, "--seed", "-1"], "argument --seed: must be an integer in 0..4294967295"),
    ([*COMPARE, "--test-seed", "-1"], "argument --test-seed: must be >= 0, got -1"),
    ([*COMPARE, "--seeds=-1,2"], "argument --seeds: must be integers in 0..4294967295"),
    ([*COMPARE, "--seeds", "1,1"], "argument --seeds: needs distinct integers, got '1,1'"),
    ([*COMPARE, "--seeds", "a"], "argument --seeds: must be comma-separated integers"),
    ([*COMPARE, "--search-seconds", "0"], "argument --search-seconds: must be a finite"),
    ([*COMPARE, "--steps", "-1"], "argument --steps: must be >= 0, got -1"),
    ([*COMPARE, "--instances", "0"], "argument --instances: must be >= 1, got 0"),
    ([*COMPARE, "--augment", "0"], "argument --augment: must be >= 1, got 0"),
    ([*COMPARE, "--select", "worst"], "argument --select: invalid choice: 'worst'"),
    ([*COMPARE, "--reference", "hgs"], "argument --reference: invalid choice: 'hgs'"),
    ([*COMPARE, "--init", "best"], "argument --init: invalid choice: 'best'"),
    ([*EVALUATE, "--seed", "-1"], "argument --seed: must be >= 0, got -1"),
    ([*EVALUATE, "--devices", "0"], "argument --devices: must be >= 1, got 0"),
    ([*SEARCH, "--seed", "-1"], "argument --seed: must be >= 0, got -1"),
    ([*SEARCH, "--augment", "0"], "argument --augment: must be >= 1, got 0"),
    ([*SEARCH, "--time-limit", "inf"], "argument --time-limit: must be a finite number > 0"),
    # no abbreviations: --time is not --time-limit, --epoch not --epochs
    ([*SEARCH, "--time", "5"], "unrecognized arguments: --time 5"),
    ([*TRAIN, "--epoch", "3"], "unrecognized arguments: --epoch 3"),
    ([*EVALUATE, "--check", "x.ckpt"], "unrecognized arguments: --check x.ckpt"),
    (["probe", "spearman", "--probe", "1"], "unrecognized arguments: --probe 1"),
])
def test_the_option_parser_refuses_a_bad_value(argv, message, tmp_path, monkeypatch, capsys):
    _refused(argv, message, tmp_path, monkeypatch, capsys)


def test_no_parser_takes_abbreviations():
    def parsers(p: argparse.ArgumentParser):
        yield p
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from parsers(sub)

    found = list(parsers(build_parser()))
    assert len(found) > 10 and not any(p.allow_abbrev for p in found)


def test_the_parser_records_the_options_typed_with_their_spelling():
    from pyg_routing.training.fit import given

    args = build_parser().parse_args(["probe", "spearman", "--num-instances=4", "--dim", "8"])
    assert given(args, "num_instances") == "--num-instances" and given(args, "dim") == "--dim"
    assert given(args, "seed") is None                 # the default, not typed
    args = build_parser().parse_args(["search", "--num-customers", "500"])
    assert given(args, "num_customers") == "--num-customers"     # the default value, typed


# ------------------------------------------------------------- 2: options that do not apply
@pytest.mark.parametrize("argv, message", [
    # benchmark-only options without --benchmark, generated-only ones with it
    ([*SEARCH, "--names", "X-n101-k25"], "--names X-n101-k25 applies to --benchmark x only"),
    ([*SEARCH, "--max-customers", "100"], "--max-customers 100 applies to --benchmark x only"),
    ([*SEARCH, "--data-dir", "x"], "--data-dir x applies to --benchmark x only"),
    (["search", "--benchmark", "x", "--problem", "cvrp"],
     "--problem: --benchmark x fixes the problem and the sizes"),
    (["search", "--benchmark", "x", "--num-customers", "500"],     # the default, typed
     "--num-customers: --benchmark x fixes the problem and the sizes"),
    (["search", "--benchmark", "x", "--exact"], "--exact: --benchmark x fixes the problem"),
    (["search", "--benchmark", "x", "--preset", "paper"],
     "--preset paper does not apply with --benchmark x"),
    (["search", "--benchmark", "x", "--instances", "2"],
     "--instances 2 does not apply with --benchmark x"),
    (["search", "--benchmark", "x", "--reference", "pyvrp"],
     "--reference pyvrp does not apply with --benchmark x"),
    ([*EVALUATE, "--names", "X-n101-k25"], "--names X-n101-k25 applies to --benchmark x only"),
    ([*EVALUATE, "--max-customers", "100"], "--max-customers 100 applies to --benchmark x"),
    (["evaluate", "--policy", "random", "--benchmark", "x", "--num-customers", "20"],
     "--num-customers: --benchmark x fixes the problem and the sizes: --problem, "
     "--num-customers and --exact do not apply"),
    (["evaluate", "--policy", "random", "--benchmark", "x", "--preset", "nds"],
     "--preset nds does not apply with --benchmark x"),
    (["evaluate", "--policy", "random", "--benchmark", "x", "--instances", "3"],
     "--instances 3 does not apply with --benchmark x"),
    (["evaluate", "--policy", "random", "--benchmark", "x", "--reference", "none"],
     "--reference none does not apply with --benchmark x"),
    (["evaluate", "--policy", "random", "--benchmark", "x", "--time-limit", "2"],
     "--time-limit 2.0 does not apply with --benchmark x"),
    # the reference's options without a reference
    ([*SEARCH, "--reference-time-limit", "2"],
     "--reference-time-limit 2.0 does not apply with --reference none"),
    ([*EVALUATE, "--reference", "none", "--time-limit", "2"],
     "--time-limit 2.0 does not apply with --reference none"),
    ([*COMPARE, "--reference", "none", "--time-limit", "2"],
     "--time-limit 2.0 does not apply with --reference none"),
    # what only a trained policy takes, given to a baseline
    ([*EVALUATE, "--any-size"], "--any-size applies to a trained policy (--checkpoint) only"),
    ([*EVALUATE, "--compile"], "--compile applies to a trained policy (--checkpoint) only"),
    ([*EVALUATE, "--accelerator", "cpu"], "--accelerator cpu applies to a trained policy"),
    ([*EVALUATE, "--device", "cpu"], "--device cpu applies to a trained policy"),
    ([*EVALUATE, "--trust-checkpoint"], "--trust-checkpoint applies to a trained policy"),
    ([*EVALUATE, "--checkpoint", "x.ckpt"], "--checkpoint is the trained policy; --policy "
                                            "random takes none"),
    ([*SEARCH, "--accelerator", "cpu"], "--accelerator cpu applies to --destroy policy only"),
    ([*SEARCH, "--trust-checkpoint"], "--trust-checkpoint applies to --destroy policy only"),
    ([*SEARCH, "--destroy", "sisr", "--checkpoint", "x.ckpt"], "--destroy sisr takes none"),
    ([*TRAIN, "--trust-checkpoint"], "--trust-checkpoint applies to --resume only"),
    # the two spellings of one option; copies that are not there
    ([*EVALUATE, "--device", "cpu", "--accelerator", "cpu"],
     "--device cpu is the former spelling of --accelerator"),
    ([*EVALUATE, "--starts", "independent", "--augment", "1"],
     "--starts independent does not apply with --augment 1"),
    # a start the backbone's environment does not have; more copies than the step search
    ([*EVALUATE, "--init", "nds"], "--init nds: the dact backbone starts from sweep"),
    ([*EVALUATE, "--augment", "9"], "--augment 9: augment must be an integer in 1..8"),
    # removal sets larger than the instances
    ([*SEARCH, "--remove", "30"], "--remove 30 exceeds the 10 customers of the instances"),
    ([*SEARCH, "--destroy", "random"],
     "--remove: the random destroy removes 15 customers per set by default, more than the "
     "10 customers"),
    (["evaluate", "--backbone", "nds", "--policy", "sisr", "--num-customers", "10",
      "--remove", "11", "--instances", "1", "--steps", "1"],
     "--remove 11 exceeds the 10 customers of the instances"),
    (["evaluate", "--backbone", "nds", "--policy", "random", "--num-customers", "10",
      "--instances", "1", "--steps", "1"], "--remove: the random destroy removes 15"),
    # NDS's trained policy samples at most 1024 distinct removal sets
    ([*SEARCH, "--destroy", "policy", "--rollouts", "2000"],
     "--rollouts 2000: rollouts=2000: a trained NDS policy samples at most 1024"),
    # generated-dataset options given to `solve --instance`
    (["solve", "--instance", "X-n101-k25", "--num-customers", "10"],
     "--num-customers 10 does not apply with --instance"),
    (["solve", "--instance", "X-n101-k25", "--root", "data"],
     "--root data does not apply with --instance"),
])
def test_an_option_that_does_not_apply_is_refused(argv, message, tmp_path, monkeypatch,
                                                  capsys):
    _refused(argv, message, tmp_path, monkeypatch, capsys)


@pytest.fixture(scope="module")
def dact_checkpoint(tmp_path_factory):
    """A tiny untrained DACT CVRP-8 checkpoint (what ``read_checkpoint`` reads)."""
    from pyg_routing.training import DACTLightning

    torch.manual_seed(0)
    model = DACTLightning(problem="cvrp", num_customers=8, dim=16, heads=2, num_layers=1,
                          pe_dim=8, num_bands=2)
    path = tmp_path_factory.mktemp("ckpt") / "tiny.ckpt"
    torch.save({"hyper_parameters": dict(model.hparams), "state_dict": model.state_dict()},
               path)
    return str(path)


@pytest.mark.parametrize("options, message", [
    (["--backbone", "n2s"], "--backbone n2s conflicts with checkpoint"),
    (["--num-customers", "20"], "trained on cvrp-8, but --num-customers is 20"),
    (["--benchmark", "x", "--any-size"], "--any-size does not apply with --benchmark x"),
    (["--policy", "sisr"], "--checkpoint is the trained policy; --policy sisr takes none"),
    (["--augment", "9"], "--augment 9: augment must be an integer in 1..8"),
    (["--starts", "shared", "--augment", "1"], "--starts shared does not apply with --augment 1"),
])
def test_evaluate_refuses_what_its_checkpoint_does_not_take(options, message, dact_checkpoint,
                                                           tmp_path, monkeypatch, capsys):
    generated = [] if "--benchmark" in options else ["--instances", "1", "--reference", "none"]
    _refused(["evaluate", "--checkpoint", dact_checkpoint, "--steps", "1", "--no-progress",
              *generated, *options], message, tmp_path, monkeypatch, capsys)


# ------------------------------------------------ 4: hardware that is not there, Lightning
@pytest.mark.parametrize("command", ["train", "compare"])
@pytest.mark.parametrize("options, message", [
    pytest.param(["--accelerator", "gpu"], "--accelerator gpu: no CUDA device is available here",
                 marks=pytest.mark.skipif(CUDA, reason="needs a machine without CUDA")),
    pytest.param(["--accelerator", "cuda"], "--accelerator cuda: no CUDA device is available",
                 marks=pytest.mark.skipif(CUDA, reason="needs a machine without CUDA")),
    pytest.param(["--accelerator", "mps"], "--accelerator mps: `MPSAccelerator` can not run",
                 marks=pytest.mark.skipif(MPS, reason="needs a machine without MPS")),
    (["--accelerator", "abacus"], "--accelerator abacus: You selected an invalid accelerator"),
    (["--accelerator", "cpu", "--precision", "16-mixed"],
     "--precision 16-mixed: float16 mixed precision needs a GPU"),
    (["--accelerator", "cpu", "--precision", "bogus"], "--precision bogus: Precision 'bogus'"),
    (["--accelerator", "cpu", "--strategy", "foo"], "--strategy foo: You selected an invalid "
                                                    "strategy name"),
    pytest.param(["--accelerator", "cpu", "--strategy", "deepspeed"],
                 "--strategy deepspeed: To use the `DeepSpeedStrategy`",
                 marks=pytest.mark.skipif(importlib.util.find_spec("deepspeed") is not None,
                                          reason="deepspeed is installed")),
    (["--accelerator", "cpu", "--devices", "100000"],
     "--devices 100000 asks for more than the"),
    (["--accelerator", "cpu", "--devices", "x"], "--devices must be an integer or 'auto'"),
    (["--accelerator", "cpu", "--devices", "0"], "--devices must be >= 1, got 0"),
])
def test_a_trainer_option_this_machine_cannot_run_is_one_line(command, options, message,
                                                              tmp_path, monkeypatch, capsys):
    base = TRAIN if command == "train" else COMPARE
    _refused([*base, *options], message, tmp_path, monkeypatch, capsys)


@pytest.mark.parametrize("argv, message", [
    ([*EVALUATE, "--devices", "100000"], "--devices 100000 asks for more than the"),
    ([*SEARCH, "--devices", "100000"], "--devices 100000 asks for more than the"),
    pytest.param([*EVALUATE, "--device", "cuda"], "--device cuda: no CUDA device is available",
                 marks=pytest.mark.skipif(CUDA, reason="needs a machine without CUDA")),
])
def test_search_workers_this_machine_does_not_have_are_one_line(argv, message, tmp_path,
                                                                monkeypatch, capsys):
    _refused(argv, message, tmp_path, monkeypatch, capsys)


# ----------------------------------------- 5: compare checks every option before training
@pytest.mark.parametrize("argv, message", [
    ([*COMPARE, "--augment", "9"], "--augment 9: augment must be an integer in 1..8, got 9"),
    ([*COMPARE, "--init", "nds"], "--init nds: the dact backbone starts from sweep"),
    ([*COMPARE_NDS, "--init", "sweep"], "--init sweep: the nds backbone starts from nds"),
    ([*COMPARE_NDS, "--search-rollouts", "2000"],
     "--search-rollouts 2000: rollouts=2000: a trained NDS policy samples at most 1024"),
    ([*COMPARE_NDS, "--remove", "11"], "--remove 11 exceeds the 10 customers"),
    ([*COMPARE, "--backbone", "dact", "--search-rollouts", "5"],
     "--search-rollouts is an option of the nds backbone"),
    ([*COMPARE, "--pe", "ipexpe,fourier"], "unknown encoding 'fourier'"),
    ([*COMPARE, "--heads", "3"], "--heads 3 must divide --dim 16"),
    ([*COMPARE, "--reference", "none", "--time-limit", "0.5"],
     "--time-limit 0.5 does not apply with --reference none"),
    ([*COMPARE, "--accelerator", "cpu", "--precision", "16-mixed"], "--precision 16-mixed"),
    ([*COMPARE, "--accelerator", "cpu", "--devices", "100000"], "--devices 100000"),
    ([*COMPARE, "--pe", "none,sin", "--ipe-phase", "index"],
     "--ipe-phase is an option of the ipe and ipexpe encodings; --pe none,sin has none"),
    ([*COMPARE, "--pe", "ipe,rope", "--xpe-aggregation", "median"],
     "--xpe-aggregation is an option of the xpe and ipexpe encodings; --pe ipe,rope"),
    ([*COMPARE, "--pe", "xpe", "--xpe-aggregation", "demand_mean", "--problem", "pdtsp"],
     "--xpe-aggregation demand_mean weighs by demand; pdtsp has no demands"),
])
def test_compare_refuses_a_bad_option_before_it_writes_or_trains(argv, message, tmp_path,
                                                                 monkeypatch, capsys):
    _refused(argv, message, tmp_path, monkeypatch, capsys)
