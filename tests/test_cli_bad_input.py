"""Issue 28: bad command lines through the real entry point (``pyg_routing.cli.main``).

Every row of the tables is refused with exit status 2 and ONE line on stderr that
names the offending option (no traceback), before anything is written: the tests
run in an empty ``tmp_path`` (also the working directory, so default output and
cache folders would land there) and check it stays empty. Out-of-range numbers are
refused by the option parser; options that do not apply, and hardware this machine
does not have, by the command before it writes, solves or trains anything.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

from pyg_routing.cli import main

#: a tiny ``compare`` (DACT, CPU-sized), never reached: every row fails before training
COMPARE = ["compare", "--config", "smoke/dact", "--pe", "none", "--num_customers", "8",
           "--test.instances", "2", "--test.steps", "2", "--no_progress"]
#: the NDS counterpart
COMPARE_NDS = ["compare", "--backbone", "nds", "--config", "smoke/nds", "--pe", "none",
               "--num_customers", "10", "--data.preset", "paper", "--test.instances", "2",
               "--test.steps", "2", "--no_progress"]
TRAIN = ["train", "--config", "smoke/dact", "--num_customers", "8", "--no_progress"]
EVALUATE = ["evaluate", "--policy", "random", "--test.instances", "1", "--test.steps", "1",
            "--no_progress"]
SEARCH = ["search", "--num_customers", "10", "--data.preset", "paper", "--test.instances", "1",
          "--test.steps", "1", "--no_progress"]
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
    (["solve", "--solver-seed", "-2"], "argument --solver_seed: must be >= 0, got -2"),
    (["probe", "anisometry", "--num-customers", "0"], "argument --num_customers: must be >= 1"),
    (["probe", "entropy", "--seconds", "0"], "argument --seconds: must be a finite"),
    (["probe", "entropy", "--workers", "0"], "argument --workers: must be >= 1, got 0"),
    (["probe", "spearman", "--dim", "7"], "argument --dim: must be an even integer >= 2"),
    (["probe", "spearman", "--pairs", "0"], "argument --pairs: must be >= 1, got 0"),
    (["probe", "spearman", "--probe-seed", "-1"], "argument --probe_seed: must be >= 0"),
    ([*TRAIN, "--seed", "-1"], "--seed must be >= 0, got -1"),
    ([*TRAIN, "--seed", "4294967296"], "--seed must be <= 4.29497e+09, got 4294967296"),
    ([*COMPARE, "--seed", "-1"], "--seed must be >= 0, got -1"),
    ([*COMPARE, "--test.seed", "-1"], "--test.seed must be >= 0, got -1"),
    ([*COMPARE, "--seeds=-1,2"], "argument --seeds: must be integers in 0..4294967295"),
    ([*COMPARE, "--seeds", "1,1"], "argument --seeds: needs distinct integers, got '1,1'"),
    ([*COMPARE, "--seeds", "a"], "argument --seeds: must be comma-separated integers"),
    ([*COMPARE, "--test.seconds", "0"], "--test.seconds must be > 0, got 0"),
    ([*COMPARE, "--test.steps", "-1"], "--test.steps must be >= 0, got -1"),
    ([*COMPARE, "--test.instances", "0"], "--test.instances must be >= 1, got 0"),
    ([*COMPARE, "--test.augment", "0"], "--test.augment must be >= 1, got 0"),
    ([*COMPARE, "--select", "worst"], "argument --select: invalid choice: 'worst'"),
    ([*COMPARE, "--reference.solver", "hgs"],
     "--reference.solver must be one of auto, pyvrp, ortools, none; got 'hgs'"),
    ([*COMPARE, "--test.init", "best"], "--test.init: unknown init 'best'"),
    ([*EVALUATE, "--test.seed", "-1"], "--test.seed must be >= 0, got -1"),
    ([*EVALUATE, "--workers", "0"], "argument --workers: must be >= 1, got 0"),
    ([*SEARCH, "--test.seed", "-1"], "--test.seed must be >= 0, got -1"),
    ([*SEARCH, "--test.augment", "0"], "--test.augment must be >= 1, got 0"),
    ([*SEARCH, "--test.seconds", "inf"], 'Parser key "test.seconds"'),
    # no abbreviations: --test.sec is not --test.seconds, --train.epoch not --train.epochs
    ([*SEARCH, "--test.sec", "5"], "unrecognized arguments: --test.sec 5"),
    ([*TRAIN, "--train.epoch", "3"], "unrecognized arguments: --train.epoch 3"),
    ([*EVALUATE, "--check", "x.ckpt"], "unrecognized arguments: --check x.ckpt"),
    (["probe", "spearman", "--probe", "1"], "unrecognized arguments: --probe 1"),
])
def test_the_option_parser_refuses_a_bad_value(argv, message, tmp_path, monkeypatch, capsys):
    _refused(argv, message, tmp_path, monkeypatch, capsys)


def test_no_parser_takes_abbreviations():
    from pyg_routing.commands.grammar import CommandParser

    assert CommandParser(prog="x").allow_abbrev is False


def test_the_grammar_records_the_options_typed_with_their_spelling():
    from pyg_routing.commands.grammar import normalize, typed

    argv = ["--num-instances=4", "--dim", "8", "--test.steps", "3", "--", "--seed"]
    assert normalize(argv)[:3] == ["--num_instances=4", "--dim", "8"]
    got = typed(argv)
    assert got["num_instances"] == "--num-instances" and got["dim"] == "--dim"
    assert got["test.steps"] == "--test.steps" and "seed" not in got     # after --


# ------------------------------------------------------------- 2: options that do not apply
@pytest.mark.parametrize("argv, message", [
    # benchmark-only options without --benchmark, generated-only ones with it
    ([*SEARCH, "--names", "X-n101-k25"], "--names X-n101-k25 applies to --benchmark x only"),
    ([*SEARCH, "--max-customers", "100"], "--max-customers 100 applies to --benchmark x only"),
    ([*SEARCH, "--data-dir", "x"], "--data-dir x applies to --benchmark x only"),
    (["search", "--benchmark", "x", "--problem", "cvrp"],
     "--problem cvrp does not apply with --benchmark x"),
    (["search", "--benchmark", "x", "--num-customers", "500"],     # the default, typed
     "--num-customers 500 does not apply with --benchmark x"),
    (["search", "--benchmark", "x", "--test.exact", "true"],
     "--test.exact does not apply with --benchmark x"),
    (["search", "--benchmark", "x", "--data.preset", "paper"],
     "--data.preset paper does not apply with --benchmark x"),
    (["search", "--benchmark", "x", "--test.instances", "2"],
     "--test.instances 2 does not apply with --benchmark x"),
    (["search", "--benchmark", "x", "--reference.solver", "pyvrp"],
     "--reference.solver pyvrp does not apply with --benchmark x"),
    ([*EVALUATE, "--names", "X-n101-k25"], "--names X-n101-k25 applies to --benchmark x only"),
    ([*EVALUATE, "--max-customers", "100"], "--max-customers 100 applies to --benchmark x"),
    (["evaluate", "--policy", "random", "--benchmark", "x", "--num-customers", "20"],
     "--num-customers 20 does not apply with --benchmark x (it searches CVRPLib's "
     "instances, whose problem and sizes are fixed)"),
    (["evaluate", "--policy", "random", "--benchmark", "x", "--data.preset", "nds"],
     "--data.preset nds does not apply with --benchmark x"),
    (["evaluate", "--policy", "random", "--benchmark", "x", "--test.instances", "3"],
     "--test.instances 3 does not apply with --benchmark x"),
    (["evaluate", "--policy", "random", "--benchmark", "x", "--reference.solver", "none"],
     "--reference.solver none does not apply with --benchmark x"),
    (["evaluate", "--policy", "random", "--benchmark", "x", "--reference.seconds", "2"],
     "--reference.seconds 2.0 does not apply with --benchmark x"),
    # the reference's options without a reference
    ([*SEARCH, "--reference.seconds", "2"],
     "--reference.seconds 2.0 does not apply with --reference.solver none"),
    ([*EVALUATE, "--reference.solver", "none", "--reference.seconds", "2"],
     "--reference.seconds 2.0 does not apply with --reference.solver none"),
    ([*COMPARE, "--reference.solver", "none", "--reference.seconds", "2"],
     "--reference.seconds 2.0 does not apply with --reference.solver none"),
    # a recipe's training options given to a test command
    ([*EVALUATE, "--train.epochs", "3"], "--train.epochs does not apply to evaluate"),
    ([*SEARCH, "--model.dim", "8"], "--model.dim does not apply to search"),
    # the street grid without street costs
    (["generate", "--data.grid", "10"], "--data.grid 10 applies to --data.costs streets only"),
    # what only a trained policy takes, given to a baseline
    ([*EVALUATE, "--any-size"], "--any-size applies to a trained policy (--checkpoint) only"),
    ([*EVALUATE, "--test.compile", "true"], "--test.compile applies to a trained policy"),
    ([*EVALUATE, "--accelerator", "cpu"], "--accelerator cpu applies to a trained policy"),
    ([*EVALUATE, "--trust-checkpoint"], "--trust-checkpoint applies to a trained policy"),
    ([*EVALUATE, "--checkpoint", "x.ckpt"], "x.ckpt"),
    ([*SEARCH, "--accelerator", "cpu"], "--accelerator cpu applies to --destroy policy only"),
    ([*SEARCH, "--trust-checkpoint"], "--trust-checkpoint applies to --destroy policy only"),
    ([*TRAIN, "--trust-checkpoint"], "--trust-checkpoint applies to --resume only"),
    # copies that are not there
    ([*EVALUATE, "--test.starts", "independent", "--test.augment", "1"],
     "--test.starts independent does not apply with --test.augment 1"),
    # a start the backbone's environment does not have; more copies than the step search
    ([*EVALUATE, "--test.init", "nds"], "--test.init: unknown init 'nds'; choose from sweep"),
    ([*EVALUATE, "--test.augment", "9"], "--test.augment: augment must be an integer in 1..8"),
    # removal sets larger than the instances
    ([*SEARCH, "--test.remove", "30"], "--test.remove 30 exceeds the 10 customers of the "
                                       "instances"),
    ([*SEARCH, "--destroy", "random"],
     "--test.remove: the random destroy removes 15 customers per set by default, more than "
     "the 10 customers"),
    (["evaluate", "--backbone", "nds", "--policy", "sisr", "--num-customers", "10",
      "--data.preset", "paper", "--test.remove", "11", "--test.instances", "1",
      "--test.steps", "1"],
     "--test.remove 11 exceeds the 10 customers of the instances"),
    (["evaluate", "--backbone", "nds", "--policy", "random", "--num-customers", "10",
      "--data.preset", "paper", "--test.instances", "1", "--test.steps", "1"],
     "--test.remove: the random destroy removes 15"),
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
                          pe_dim=8, num_bands=2, pe="ipexpe")
    path = tmp_path_factory.mktemp("ckpt") / "tiny.ckpt"
    torch.save({"hyper_parameters": dict(model.hparams), "state_dict": model.state_dict()},
               path)
    return str(path)


@pytest.mark.parametrize("options, message", [
    (["--backbone", "n2s"], "--backbone n2s conflicts with checkpoint"),
    (["--num-customers", "20"], "trained on cvrp-8, but --num_customers is 20"),
    (["--benchmark", "x", "--any-size"], "--any-size does not apply with --benchmark x"),
    (["--policy", "sisr"], "--checkpoint is the trained policy; --policy sisr takes none"),
    (["--test.augment", "9"], "--test.augment: augment must be an integer in 1..8"),
    (["--test.starts", "shared", "--test.augment", "1"],
     "--test.starts shared does not apply with --test.augment 1"),
    (["--train.rollouts", "3"], "--train.rollouts is an option of the nds backbone"),
])
def test_evaluate_refuses_what_its_checkpoint_does_not_take(options, message, dact_checkpoint,
                                                           tmp_path, monkeypatch, capsys):
    generated = [] if "--benchmark" in options else ["--test.instances", "1",
                                                      "--reference.solver", "none"]
    _refused(["evaluate", "--checkpoint", dact_checkpoint, "--no-progress",
              *([] if "--benchmark" in options else ["--test.steps", "1"]),
              *generated, *options], message, tmp_path, monkeypatch, capsys)


# ------------------------------------------------ 4: hardware that is not there, Lightning
@pytest.mark.parametrize("command", ["train", "compare"])
@pytest.mark.parametrize("options, message", [
    pytest.param(["--trainer.accelerator", "gpu"],
                 "--trainer.accelerator gpu: no CUDA device is available here",
                 marks=pytest.mark.skipif(CUDA, reason="needs a machine without CUDA")),
    pytest.param(["--trainer.accelerator", "cuda"],
                 "--trainer.accelerator cuda: no CUDA device is available",
                 marks=pytest.mark.skipif(CUDA, reason="needs a machine without CUDA")),
    pytest.param(["--trainer.accelerator", "mps"],
                 "--trainer.accelerator mps: `MPSAccelerator` can not run",
                 marks=pytest.mark.skipif(MPS, reason="needs a machine without MPS")),
    (["--trainer.accelerator", "abacus"],
     "--trainer.accelerator abacus: You selected an invalid accelerator"),
    (["--trainer.accelerator", "cpu", "--trainer.precision", "16-mixed"],
     "--trainer.precision 16-mixed: float16 mixed precision needs a GPU"),
    (["--trainer.accelerator", "cpu", "--trainer.precision", "bogus"],
     "--trainer.precision bogus: Precision 'bogus'"),
    (["--trainer.accelerator", "cpu", "--trainer.strategy", "foo"],
     "--trainer.strategy foo: You selected an invalid strategy name"),
    pytest.param(["--trainer.accelerator", "cpu", "--trainer.strategy", "deepspeed"],
                 "--trainer.strategy deepspeed: To use the `DeepSpeedStrategy`",
                 marks=pytest.mark.skipif(importlib.util.find_spec("deepspeed") is not None,
                                          reason="deepspeed is installed")),
    (["--trainer.accelerator", "cpu", "--trainer.devices", "100000"],
     "--trainer.devices 100000 asks for more than the"),
    (["--trainer.accelerator", "cpu", "--trainer.devices", "x"],
     "--trainer.devices must be an integer or 'auto'"),
    (["--trainer.accelerator", "cpu", "--trainer.devices", "0"],
     "--trainer.devices must be >= 1, got 0"),
])
def test_a_trainer_option_this_machine_cannot_run_is_one_line(command, options, message,
                                                              tmp_path, monkeypatch, capsys):
    base = TRAIN if command == "train" else COMPARE
    _refused([*base, *options], message, tmp_path, monkeypatch, capsys)


@pytest.mark.parametrize("argv, message", [
    ([*EVALUATE, "--workers", "100000"], "--workers 100000 asks for more than the"),
    ([*SEARCH, "--workers", "100000"], "--workers 100000 asks for more than the"),
])
def test_search_workers_this_machine_does_not_have_are_one_line(argv, message, tmp_path,
                                                                monkeypatch, capsys):
    _refused(argv, message, tmp_path, monkeypatch, capsys)


# ----------------------------------------- 5: compare checks every option before training
@pytest.mark.parametrize("argv, message", [
    ([*COMPARE, "--test.augment", "9"], "--test.augment: augment must be an integer in 1..8"),
    ([*COMPARE, "--test.init", "nds"], "--test.init: unknown init 'nds'; choose from sweep"),
    ([*COMPARE_NDS, "--test.rollouts", "2000"],
     "--test.rollouts 2000: a trained NDS policy samples at most 1024"),
    ([*COMPARE_NDS, "--train.remove", "11"], "--train.remove 11 exceeds the 10 customers"),
    ([*COMPARE, "--test.rollouts", "5"], "--test.rollouts is an option of the nds backbone"),
    ([*COMPARE, "--pe", "ipexpe,fourier"], "unknown encoding 'fourier'"),
    ([*COMPARE, "--model.heads", "3"], "--model.heads 3 must divide --model.dim 16"),
    ([*COMPARE, "--reference.solver", "none", "--reference.seconds", "0.5"],
     "--reference.seconds 0.5 does not apply with --reference.solver none"),
    ([*COMPARE, "--trainer.accelerator", "cpu", "--trainer.precision", "16-mixed"],
     "--trainer.precision 16-mixed"),
    ([*COMPARE, "--trainer.accelerator", "cpu", "--trainer.devices", "100000"],
     "--trainer.devices 100000"),
    ([*COMPARE, "--pe", "none,sin", "--encoding.ipe_phase", "index"],
     "--encoding.ipe_phase is an option of the ipe and ipexpe encodings; --pe none,sin has "
     "none"),
    ([*COMPARE, "--pe", "ipe,rope", "--encoding.xpe_aggregation", "median"],
     "--encoding.xpe_aggregation is an option of the xpe and ipexpe encodings; --pe ipe,rope"),
    (["compare", "--config", "dact/pdtsp20", "--config", "smoke/dact", "--pe", "xpe",
      "--encoding.xpe_aggregation", "demand_mean", "--no_progress"],
     "--encoding.xpe_aggregation demand_mean weighs by demand; pdtsp has no demands"),
])
def test_compare_refuses_a_bad_option_before_it_writes_or_trains(argv, message, tmp_path,
                                                                 monkeypatch, capsys):
    _refused(argv, message, tmp_path, monkeypatch, capsys)


def test_a_family_the_generators_lack_is_refused_before_lightning_writes(tmp_path, monkeypatch,
                                                                       capsys):
    _refused(["train", "--backbone", "nds", "--data.costs", "streets"],
             "of preset 'nds' has no generator option 'costs'", tmp_path, monkeypatch, capsys)
