"""``pyg-routing reproduce``: the cells of every table at every scale, sharding, resume,
collect, refused options, and the smoke run of one table (tab1; every table under the
opt-in ``tables`` marker: ``PYG_ROUTING_TABLES=1 pytest -m tables``)."""

from __future__ import annotations

import json

import pytest

from pyg_routing.cli import main
from pyg_routing.commands.reproduce import cells as cells_module
from pyg_routing.commands.reproduce.budgets import DACT_CPU_EPOCHS, SCALES
from pyg_routing.commands.reproduce.cells import shard
from pyg_routing.commands.reproduce.tables import TABLES
from pyg_routing.probes import paper_values

#: cells per table at smoke/cpu and at paper scale (3 seeds for the DACT/N2S tables)
COUNTS = {"tab1": (5, 5), "tab2": (42, 126), "tab3": (1, 1), "tab4": (9, 27),
          "tab5": (18, 54), "tab6": (8, 20), "tab7": (2, 6), "tab8": (5, 15),
          "tab9": (12, 36), "tab10": (6, 18)}


@pytest.mark.parametrize("table", list(TABLES))
@pytest.mark.parametrize("scale", SCALES)
def test_every_table_has_its_cells_at_every_scale(table, scale):
    spec = TABLES[table]
    cells = spec.cells(scale, {})
    assert len(cells) == COUNTS[table][scale == "paper"]
    assert len({c.id for c in cells}) == len(cells)            # one file per cell
    filled = {c.row for c in cells}
    # every row of the table is filled by some cell (the reference by every compare)
    for row, _ in spec.rows:
        assert row in filled or "*" in filled or row == "reference", row
    for cell in cells:
        assert cell.column in spec.columns
        assert cell.steps[0][0] in ("compare", "evaluate", "train", "probe", "search")


def test_every_paper_row_has_its_value():
    assert set(TABLES["tab2"].paper()) >= {(e, c) for e in paper_values.MAIN_COMPARISON[
        "CVRP-100"] for c in ("CVRP-100", "VRPTW-100", "PDTSP-51")}
    for table, source in (("tab4", paper_values.MODEL_AGNOSTIC),
                          ("tab8", paper_values.ABLATION), ("tab9", paper_values.AGGREGATION),
                          ("tab10", paper_values.DIRECTION)):
        spec = TABLES[table]
        values = spec.paper()
        for row, _ in spec.rows:
            for column in spec.columns:
                if row in source[column]:
                    assert values[(row, column)]["gap_percent"] == source[column][row][1]
    assert paper_values.ABLATION["CVRP-100"]["ipe_index"] == (16.18, 3.85)
    assert paper_values.DIRECTION["PDTSP-51"]["invariant"] == (7.12, 3.71)
    assert TABLES["tab5"].paper()[("ipexpe", "CVRP-2000")]["gap_percent"] == -2.45
    assert TABLES["tab6"].paper()[("sisr", "nds_clustered")]["objective"] == 44.31


def test_ablation_cells_use_the_phase_aggregation_and_direction_options():
    def options(table, row):
        return next(c.steps[0] for c in TABLES[table].cells("smoke", {}) if c.row == row)

    assert " --encoding.ipe_phase index " in " ".join(options("tab8", "ipe_index")) + " "
    assert "--encoding.xpe_aggregation circular_mean" in " ".join(
        options("tab9", "circular_mean"))
    assert "--encoding.ipe_direction invariant" in " ".join(options("tab10", "invariant"))


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_shards_partition_the_cells(n):
    cells = TABLES["tab2"].cells("paper", {})
    parts = [shard(cells, (i, n)) for i in range(1, n + 1)]
    ids = [c.id for part in parts for c in part]
    assert sorted(ids) == sorted(c.id for c in cells) and len(set(ids)) == len(ids)


@pytest.mark.parametrize("value", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_bad_shard_is_refused(value, capsys):
    assert main(["reproduce", "tab1", "--scale", "smoke", "--shard", value]) == 2
    err = capsys.readouterr().err
    assert "--shard: must be i/n with 1 <= i <= n" in err and err.count("\n") == 1


@pytest.mark.parametrize(("argv", "message"), [
    (["tab1", "--accelerator", "cpu"], "--accelerator cpu does not apply to tab1"),
    (["tab3", "--devices", "2"], "--devices 2 does not apply to tab3"),
    (["tab2", "--checkpoint", "ipexpe=x.ckpt"], "--checkpoint applies to tab4-tab7 only"),
    (["tab4", "--checkpoint", "nope=x.ckpt"], "tab4 has no trained row 'nope'"),
    (["tab4", "--checkpoint", "ipexpe@PDTSP-7=x.ckpt"], "tab4 has no column 'PDTSP-7'"),
    (["tab4", "--checkpoint", "ipexpe=missing.ckpt"], "no such file 'missing.ckpt'"),
    (["tab2", "--collect", "--shard", "1/2"], "--shard 1/2 does not apply with --collect"),
    (["tab2", "--collect", "--dry-run"], "--dry-run does not apply with --collect"),
])
def test_options_that_do_not_apply_are_refused(argv, message, tmp_path, capsys):
    code = main(["reproduce", *argv, "--scale", "smoke", "--out", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("pyg-routing reproduce: error:"), err
    assert not any(tmp_path.iterdir())


def test_dry_run_prints_the_command_lines_with_their_recipes(capsys):
    assert main(["reproduce", "tab8", "--scale", "paper", "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["cells"]) == 15
    first = out["cells"][0]["commands"][0]
    assert first.startswith("pyg-routing compare --config dact/cvrp100 --pe none --seed 0")
    assert "--trainer.accelerator gpu" in first
    assert main(["reproduce", "tab2", "--scale", "cpu", "--dry-run", "--json"]) == 0
    cpu = json.loads(capsys.readouterr().out)["cells"][0]["commands"][0]
    assert f"--config dact/cvrp20 --config cpu/dact --train.epochs {DACT_CPU_EPOCHS['tab2']}" \
        in cpu


def _config_of(step):
    """The configuration a cell's compare or train step resolves to (parsed, not run)."""
    import importlib

    from pyg_routing.commands.grammar import normalize

    module = importlib.import_module(f"pyg_routing.commands.{step[0]}")
    return module.parse(normalize([t.replace("{data}", "d").replace("{cell}", "c")
                                   for t in step[1:]])).config


@pytest.mark.parametrize("scale", SCALES)
def test_every_training_cell_resolves_through_the_grammar(scale):
    for table, spec in TABLES.items():
        for cell in spec.cells(scale, {}):
            for step in cell.steps:
                if step[0] in ("compare", "train"):
                    config = _config_of(step)
                    assert config.seed == cell.seed, (table, cell.id)


def test_paper_cells_run_the_shipped_recipes():
    tab5 = {c.id: c for c in TABLES["tab5"].cells("paper", {})}
    # where it runs at paper scale (reproduce adds the GPU): the recipe's mixed precision
    config = _config_of((*tab5["cvrp-500__ipexpe__s2"].steps[0], "--trainer.accelerator", "gpu"))
    assert (config.backbone, config.problem, config.num_customers, config.pe) == \
        ("nds", "cvrp", 500, "ipexpe")
    # NDS's own test set, the paper's training schedule and mixed precision
    assert config.test.exact and config.test.instances == 128 and config.test.seconds == 60
    assert config.train.lr_milestones == [60, 85] and config.trainer.precision == "16-mixed"
    pcvrp = _config_of(tab5["pcvrp-1000__none__s0"].steps[0])
    assert pcvrp.test.augment == 128 and pcvrp.test.seconds == 120
    tab4 = {c.id: c for c in TABLES["tab4"].cells("paper", {})}
    dact = _config_of(tab4["pdtsp-51__dact__s0"].steps[0])
    n2s = _config_of(tab4["pdtsp-51__dact_cpe__s0"].steps[0])
    assert (dact.backbone, dact.pe, dact.test.steps) == ("dact", "dact_cpe", 3000)
    assert (n2s.backbone, n2s.pe, n2s.test.steps, n2s.test.window) == \
        ("n2s", "dact_cpe", 3000, 25)
    x = [c for c in TABLES["tab7"].cells("paper", {})]
    assert len(x) == 6 and "--names paper" in " ".join(x[0].steps[1])


def test_given_checkpoint_replaces_training_by_evaluate(tmp_path):
    ckpt = tmp_path / "m.ckpt"
    ckpt.write_bytes(b"")
    cells = TABLES["tab4"].cells("smoke", {"ipexpe@PDTSP-51": str(ckpt)})
    given = [c for c in cells if c.steps[0][0] == "evaluate"]
    assert [(c.row, c.column) for c in given] == [("ipexpe", "PDTSP-51")]
    assert str(ckpt) in given[0].steps[0]
    x = TABLES["tab7"].cells("smoke", {"none": str(ckpt)})
    assert [len(c.steps) for c in x] == [1, 2]


def _run(argv, capsys):
    code = main(["reproduce", *argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out), captured.err


def test_tab1_smoke_runs_resumes_shards_and_collects(tmp_path, capsys, monkeypatch):
    """The default tier's smoke run (tab1, the cheapest table), interrupted after one
    cell and resumed; then two shards collected equal the unsharded run."""
    real = cells_module.run_cell
    calls = []

    def stop_after_one(cell, *args, **kwargs):
        if calls:
            raise KeyboardInterrupt                          # "killed" in the second cell
        calls.append(cell.id)
        return real(cell, *args, **kwargs)

    whole = tmp_path / "whole"
    monkeypatch.setattr(cells_module, "run_cell", stop_after_one)
    with pytest.raises(KeyboardInterrupt):
        main(["reproduce", "tab1", "--scale", "smoke", "--out", str(whole)])
    capsys.readouterr()
    finished = list((whole / "tab1" / "smoke" / "cells").glob("*.json"))
    assert [p.stem for p in finished] == calls                   # only the finished cell

    ran = []
    monkeypatch.setattr(cells_module, "run_cell",
                        lambda cell, *a, **k: ran.append(cell.id) or real(cell, *a, **k))
    result, err = _run(["tab1", "--scale", "smoke", "--out", str(whole)], capsys)
    assert calls[0] not in ran and len(ran) == 4                # resumed, not rerun
    assert f"skip {calls[0]}: finished" in err
    assert result["finished"] == 5 and not result["missing"]
    row = next(r for r in result["rows"] if (r["row"], r["metric"]) == ("CVRP-100", "cv"))
    assert row["paper"] == 0.81 and row["ours"] > 0
    table = (whole / "tab1" / "smoke" / "table.csv").read_text()

    # two shards in two folders, then --collect from both
    a, b = tmp_path / "a", tmp_path / "b"
    for i, where in ((1, a), (2, b)):
        shard_result, _ = _run(["tab1", "--scale", "smoke", "--shard", f"{i}/2",
                                "--out", str(where)], capsys)
        assert len(shard_result["cells"]) == (3 if i == 1 else 2)
    partial, _ = _run(["tab1", "--scale", "smoke", "--collect", "--out", str(a)], capsys)
    assert len(partial["missing"]) == 2 and "Missing cells (2)" in partial["markdown"]
    merged, _ = _run(["tab1", "--scale", "smoke", "--out", str(tmp_path / "m"),
                      "--collect", str(a), str(b)], capsys)
    assert not merged["missing"]
    assert (tmp_path / "m" / "tab1" / "smoke" / "table.csv").read_text() == table


def test_a_result_of_another_scale_or_definition_is_refused(tmp_path, capsys):
    spec = TABLES["tab1"]
    cell = spec.cells("smoke", {})[0]
    path = cells_module.result_path(tmp_path, cell, "smoke")
    path.parent.mkdir(parents=True)
    record = cells_module.definition(cell, "cpu")
    path.write_text(json.dumps(record))
    code = main(["reproduce", "tab1", "--scale", "smoke", "--out", str(tmp_path)])
    assert code == 2 and "written at --scale cpu, not smoke" in capsys.readouterr().err
    record = {**cells_module.definition(cell, "smoke"), "commands": [["probe", "entropy"]]}
    path.write_text(json.dumps(record))
    code = main(["reproduce", "tab1", "--scale", "smoke", "--out", str(tmp_path)])
    assert code == 2 and "written by another definition of cell" in capsys.readouterr().err


@pytest.mark.tables
@pytest.mark.parametrize("table", [t for t in TABLES if t != "tab1"])
def test_smoke_run_of_every_table(table, tmp_path, capsys):
    result, _ = _run([table, "--scale", "smoke", "--out", str(tmp_path)], capsys)
    assert not result["missing"] and result["finished"] == COUNTS[table][0]
    ours = [r for r in result["rows"] if r["ours"] is not None]
    assert ours, result["markdown"]
    assert (tmp_path / table / "smoke" / "table.md").is_file()
    if "gap_percent" in TABLES[table].metrics:
        assert (tmp_path / table / "smoke" / "gap.png").is_file()


def test_paper_scale_gives_dact_its_own_depot_copies_on_cvrp_only():
    for cell in TABLES["tab2"].cells("paper", {})[::14]:
        rate = _config_of(cell.steps[0]).model.depot_rate
        assert rate == (0.2 if cell.column == "CVRP-100" else None), cell.id
    cpu = _config_of(TABLES["tab2"].cells("cpu", {})[0].steps[0])
    assert cpu.num_customers == 20 and cpu.model.depot_rate == 0.5      # VRP-DACT's CVRP-20


@pytest.mark.parametrize("content, message", [
    (b"[]", "not a reproduce result file (a JSON list, not an object)"),
    (b"\x80\x81\x00garbage", "not a reproduce result file"),
    (None, "not a finished reproduce result (no table values)"),
])
def test_a_damaged_result_file_is_one_line_naming_it(content, message, tmp_path, capsys):
    cell = TABLES["tab1"].cells("smoke", {})[0]
    path = cells_module.result_path(tmp_path, cell, "smoke")
    path.parent.mkdir(parents=True)
    if content is None:                    # the right cell, but no values
        content = json.dumps(cells_module.definition(cell, "smoke")).encode()
    path.write_bytes(content)
    for argv in (["--out", str(tmp_path)], ["--collect", "--out", str(tmp_path)]):
        assert main(["reproduce", "tab1", "--scale", "smoke", *argv]) == 2
        err = capsys.readouterr().err
        assert str(path) in err and message in err and err.count("\n") == 1, err


def test_collect_from_a_missing_folder_is_refused_by_name(tmp_path, capsys):
    there = tmp_path / "there"
    there.mkdir()
    code = main(["reproduce", "tab1", "--scale", "smoke", "--out", str(tmp_path / "m"),
                 "--collect", str(there), str(tmp_path / "gone")])
    assert code == 2
    assert f"--collect: no such folder {tmp_path / 'gone'}" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
