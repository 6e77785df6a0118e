"""Searching one's own instance file: the batch a search takes keeps the file's matrix,
the reported cost is the matrix's sum over the returned routes, benchmark folders read
their best-known values from ``bks.csv``, ``.sol`` files or the paper's table."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from pyg_routing.data import (
    RoutingData,
    RoutingInstances,
    benchmark_search_instances,
    load_instance,
    load_search_instance,
    search_instances,
    stack_instances,
)
from pyg_routing.data.benchmarks import BUNDLED_DIR, ENV_VAR, BenchmarkDataset, paper_x_bks
from pyg_routing.data.problems import Problem
from pyg_routing.envs import TwoOptEnv
from pyg_routing.envs.deconstruction import SISRDestroy
from pyg_routing.errors import InstanceFormatError, InvalidInstanceError
from pyg_routing.search import DestroyRepairSearch, MaxIterations, improve
from tests.helpers import all_route_sets

SHARED_X = Path(__file__).resolve().parents[3] / "shared" / "data" / "cvrplib" / "X"
CUSTOMERS = 7


def _asymmetric_file(folder: Path, name: str = "my-asym", seed: int = 0) -> tuple[Path, dict]:
    """An EXPLICIT FULL_MATRIX CVRP whose display coordinates have nothing to do with its
    strongly asymmetric matrix; the depot is file node 3. Returns the path and the facts
    the test checks against (file ids are 1-based)."""
    rng = np.random.default_rng(seed)
    n = CUSTOMERS + 1
    matrix = rng.integers(1, 100, size=(n, n))
    matrix[np.triu_indices(n, 1)] += 300                 # forward arcs cost far more
    np.fill_diagonal(matrix, 0)
    coords = rng.integers(0, 50, size=(n, 2))
    demand = rng.integers(1, 5, size=n)
    depot = 3
    demand[depot - 1] = 0
    lines = [f"NAME : {name}", "TYPE : CVRP", f"DIMENSION : {n}",
             "EDGE_WEIGHT_TYPE : EXPLICIT", "EDGE_WEIGHT_FORMAT : FULL_MATRIX",
             "CAPACITY : 10", "EDGE_WEIGHT_SECTION"]
    lines += [" ".join(map(str, row)) for row in matrix]
    lines += ["DISPLAY_DATA_SECTION"] + [f"{i + 1} {x} {y}" for i, (x, y) in enumerate(coords)]
    lines += ["DEMAND_SECTION"] + [f"{i + 1} {d}" for i, d in enumerate(demand)]
    lines += ["DEPOT_SECTION", str(depot), "-1", "EOF"]
    path = folder / f"{name}.vrp"
    path.write_text("\n".join(lines) + "\n")
    # our node k is file node order[k] (the depot first, the others in file order)
    order = [depot] + [i for i in range(1, n + 1) if i != depot]
    return path, {"matrix": matrix, "order": order, "demand": demand, "coords": coords}


def _matrix_sum(routes: list[list[int]], facts: dict) -> float:
    """The cost of ``routes`` (our node ids) by the file's matrix, summed by hand."""
    m, order = facts["matrix"], facts["order"]
    total = 0
    for route in routes:
        tour = [0, *route, 0]
        total += sum(m[order[a] - 1, order[b] - 1] for a, b in zip(tour, tour[1:]))
    return float(total)


def _brute_force_optimum(facts: dict, capacity: int = 10) -> float:
    """The cheapest routes by the file's matrix, over every customer order and split."""
    demand = {k: int(facts["demand"][facts["order"][k] - 1]) for k in range(1, CUSTOMERS + 1)}
    best = float("inf")
    for routes in all_route_sets(range(1, CUSTOMERS + 1)):
        if all(sum(demand[c] for c in r) <= capacity for r in routes):
            best = min(best, _matrix_sum(routes, facts))
    return best


# ------------------------------------------------------------- end to end on a file
def test_the_reported_cost_is_the_matrix_sum_of_the_returned_routes(tmp_path):
    path, facts = _asymmetric_file(tmp_path)
    mine = load_search_instance(path)
    assert mine.name == "my-asym" and mine.bks is None
    assert isinstance(mine.instances, RoutingInstances) and len(mine.instances) == 1
    expected = torch.tensor(facts["matrix"], dtype=torch.float64)[
        np.ix_(np.array(facts["order"]) - 1, np.array(facts["order"]) - 1)]
    torch.testing.assert_close(mine.instances.cost_matrix[0].double() * mine.scale, expected)
    result = DestroyRepairSearch(augment=4, rollouts=20).run(
        mine.instances, SISRDestroy(c_bar=3), MaxIterations(60), seed=0)
    reported = mine.cost(result.routes[0])
    assert reported == _matrix_sum(result.routes[0], facts)
    assert reported == pytest.approx(float(result.cost[0]) * mine.scale, rel=1e-6)
    # the search optimised the matrix, not the display coordinates
    assert reported == _brute_force_optimum(facts)


def test_stack_instances_of_a_loaded_file_searches_the_matrix(tmp_path):
    path, facts = _asymmetric_file(tmp_path, seed=1)
    data = load_instance(path)
    stacked = stack_instances([data])
    assert torch.equal(stacked.cost_matrix, search_instances(data).cost_matrix)
    result = improve(stacked, steps=200, env=TwoOptEnv(), generator=torch.Generator()
                     .manual_seed(0))
    routes = result.routes[0]
    scale = float(data.scale)
    assert float(RoutingData.from_routes(data, routes).cost()) == _matrix_sum(routes, facts)
    assert float(result.cost[0]) * scale == pytest.approx(_matrix_sum(routes, facts), rel=1e-5)
    coords_only = RoutingData.from_instance("cvrp", data.pos, demand=data.demand,
                                            capacity=data.capacity)
    euclid = float(RoutingData.from_routes(coords_only, routes).cost())
    assert abs(float(result.cost[0]) - euclid) > 1.0   # not the coordinates' length


def test_a_search_instance_from_a_batch_equals_one_by_one(tmp_path):
    a = load_instance(_asymmetric_file(tmp_path, "a", seed=2)[0])
    b = load_instance(_asymmetric_file(tmp_path, "b", seed=3)[0])
    both = search_instances([a, b])
    for i, one in enumerate((a, b)):
        alone = search_instances(one)
        assert torch.equal(both.cost_matrix[i], alone.cost_matrix[0])
        assert torch.equal(both.pos[i], alone.pos[0])
    search = DestroyRepairSearch(augment=2, rollouts=10)
    # the cost of the returned routes is the same however they were searched
    together = search.run(both, SISRDestroy(c_bar=3), MaxIterations(5), seed=0)
    for i, one in enumerate((a, b)):
        assert float(RoutingData.from_routes(one, together.routes[i]).cost()) == \
            pytest.approx(float(together.cost[i]) * float(one.scale), rel=1e-6)


def test_scale_uses_the_files_own_units(tmp_path):
    path, facts = _asymmetric_file(tmp_path)
    mine = load_search_instance(path, scale=100)
    assert mine.scale == 100.0
    torch.testing.assert_close(
        mine.instances.cost_matrix[0].double() * 100,
        torch.tensor(facts["matrix"], dtype=torch.float64)[
            np.ix_(np.array(facts["order"]) - 1, np.array(facts["order"]) - 1)])
    with pytest.raises(InvalidInstanceError, match="scale must be a finite number > 0"):
        search_instances(mine.data, scale=0)
    plain = RoutingData.from_instance("cvrp", torch.rand(4, 2), demand=[0, 1, 1, 1],
                                      capacity=3)
    with pytest.raises(InvalidInstanceError, match="scale= needs the original units"):
        search_instances(plain, scale=10)
    with pytest.raises(TypeError, match="search_instances takes RoutingData"):
        search_instances([plain, "x"])


def test_x_in_ndss_scale_is_what_the_search_used_before(monkeypatch):
    """``benchmark_search_instances(scale=1000)`` gives exactly the tensors ``x_jobs`` built
    by hand before (coordinates / 1000, no matrix): X numbers do not move."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    found = benchmark_search_instances("x", BUNDLED_DIR, scale=1000)
    data = load_instance(BUNDLED_DIR / "X-n101-k25.vrp")
    pos = (data.raw_pos / 1000.0).to(torch.get_default_dtype()).unsqueeze(0)
    old = RoutingInstances(Problem.CVRP, pos, demand=data.demand.unsqueeze(0),
                           capacity=data.capacity.reshape(1))
    new = found[0].instances
    assert torch.equal(new.pos, old.pos) and torch.equal(new.demand, old.demand)
    assert torch.equal(new.capacity, old.capacity)
    assert new.cost_matrix is None and new.open_routes is None


# ------------------------------------------------------------- best-known values
def test_the_bundled_folder_needs_no_bks_csv(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert not (BUNDLED_DIR / "bks.csv").exists()
    ds = BenchmarkDataset(None, "x", with_solutions=False)
    assert ds.bks == {"X-n101-k25": 27591.0}
    assert ds.bks_source["X-n101-k25"].endswith("X-n101-k25.sol")
    (one,) = benchmark_search_instances("x", scale=1000)
    assert one.bks == 27591.0


def test_bks_from_bks_csv_then_the_solution_file_then_the_papers_table(tmp_path):
    for suffix in (".vrp", ".sol"):
        shutil.copy(BUNDLED_DIR / f"X-n101-k25{suffix}", tmp_path)
    ds = BenchmarkDataset(tmp_path, "x", with_solutions=False)
    assert ds.bks == {"X-n101-k25": 27591.0}                     # the .sol's routes
    (tmp_path / "bks.csv").write_text("instance,bks\nX-n101-k25,27000\n")
    ds = BenchmarkDataset(tmp_path, "x", with_solutions=False)
    assert ds.bks == {"X-n101-k25": 27000.0}                     # bks.csv comes first
    assert ds.bks_source["X-n101-k25"] == str(tmp_path / "bks.csv")
    (tmp_path / "bks.csv").unlink()
    (tmp_path / "X-n101-k25.sol").unlink()
    ds = BenchmarkDataset(tmp_path, "x", with_solutions=False)
    assert ds.bks == {"X-n101-k25": paper_x_bks()["X-n101-k25"]}  # the paper's table
    assert "paper" in ds.bks_source["X-n101-k25"]
    assert len(paper_x_bks()) == 84


def test_a_bks_csv_without_the_instance_falls_back_to_its_solution(tmp_path):
    path, facts = _asymmetric_file(tmp_path, "X-mine")
    (tmp_path / "bks.csv").write_text("instance,bks\nX-other,1\n")
    assert benchmark_search_instances("x", tmp_path)[0].bks is None
    (tmp_path / "X-mine.sol").write_text("Route #1: 1 2 3\nRoute #2: 4 5 6 7\nCost 0\n")
    (one,) = benchmark_search_instances("x", tmp_path)
    assert one.bks == _matrix_sum([[1, 2, 3], [4, 5, 6, 7]], facts)   # the routes' cost
    assert one.bks_source == str(tmp_path / "X-mine.sol")


def test_a_damaged_solution_file_is_named_when_the_bks_is_read(tmp_path):
    _asymmetric_file(tmp_path, "X-mine")
    bad = tmp_path / "X-mine.sol"
    bad.write_text("no routes here\n")
    ds = BenchmarkDataset(tmp_path, "x", with_solutions=False)        # not read yet
    with pytest.raises(InstanceFormatError, match=str(bad)):
        _ = ds.bks


@pytest.mark.skipif(not (SHARED_X / "bks.csv").is_file(), reason=f"{SHARED_X} missing")
def test_solution_files_agree_with_bks_csv():
    ds = BenchmarkDataset(SHARED_X, "x", names=["X-n101-k25", "X-n106-k14"],
                          with_solutions=False)
    for name, path in zip(ds.instance_names, ds.paths):
        from pyg_routing.data.benchmarks import best_known_value

        assert best_known_value(path, folder_bks={})[0] == ds.bks[name]


# ------------------------------------------------------------- the benchmark command path
def test_x_jobs_keep_an_explicit_matrix_and_cost_the_routes_by_it(tmp_path, monkeypatch):
    from pyg_routing.commands.jobs import X_SCALE, x_jobs
    from pyg_routing.training.search_predictor import SearchPredictor

    monkeypatch.delenv(ENV_VAR, raising=False)
    path, facts = _asymmetric_file(tmp_path, "X-mine")
    (tmp_path / "X-mine.sol").write_text("Route #1: 1 2 3\nRoute #2: 4 5 6 7\nCost 0\n")
    (job,) = x_jobs(str(tmp_path))
    assert job.instances.cost_matrix is not None
    order = np.array(facts["order"]) - 1
    torch.testing.assert_close(job.instances.cost_matrix[0].double() * X_SCALE,
                               torch.tensor(facts["matrix"], dtype=torch.float64)[
                                   np.ix_(order, order)])
    predictor = SearchPredictor(DestroyRepairSearch(augment=2, rollouts=10),
                                MaxIterations(20), SISRDestroy(c_bar=3), seed=0)
    (row,) = predictor.predict_step(job)["rows"]
    assert row["target"] == _matrix_sum([[1, 2, 3], [4, 5, 6, 7]], facts)
    # the objective is the file's matrix summed over the routes the search returned
    routes = RoutingData.from_routes(job.data[0], _routes_of(job, predictor)).routes()
    assert row["objective"] == _matrix_sum(routes, facts)
    assert row["solution"] == routes                       # what the row reports
    (tmp_path / "X-mine.sol").unlink()
    with pytest.raises(InstanceFormatError, match=r"X-mine.vrp: instance 'X-mine' has no "
                                                  r"best-known value"):
        x_jobs(str(tmp_path))


def _routes_of(job, predictor) -> list[list[int]]:
    """The routes the predictor's search returns for ``job`` (same seed, same search)."""
    res = predictor.search.run(job.instances, predictor.searcher(), predictor.stop,
                               seed=predictor.seed + job.index)
    return res.routes[0]


# ------------------------------------------------------------- the command line
@pytest.mark.parametrize("command", [
    ["search", "--destroy", "sisr", "--test.remove", "3"],
    ["evaluate", "--backbone", "dact", "--policy", "random", "--test.augment", "1"],
])
def test_instance_file_on_the_command_line_reports_the_matrix_cost(command, tmp_path, capsys):
    """``search/evaluate --instance FILE`` on an asymmetric EXPLICIT file: the reported
    objective is the file's matrix summed over the routes returned (its ``rows``), with
    no gap (nothing knows the instance)."""
    import json

    from pyg_routing.cli import main

    path, facts = _asymmetric_file(tmp_path, seed=3)
    code = main([*command, "--instance", str(path), "--test.steps", "40", "--test.seconds",
                 "60", "--no_progress", "--out", str(tmp_path / "out"), "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    result = json.loads(out.out)
    (row,) = result["rows"]
    assert row["instance"] == "my-asym" and row["target"] is None
    assert "gap_percent" not in result or result["gap_percent"] is None
    # the routes it returns, costed by the file's matrix by hand: the reported objective
    assert row["objective"] == _matrix_sum(row["solution"], facts)
    assert row["objective"] == load_search_instance(path).cost(row["solution"])
    assert row["objective"] >= _brute_force_optimum(facts)
    # options of generated instances do not apply to a file
    assert main([*command, "--instance", str(path), "--num-customers", "20"]) == 2
    assert "--num-customers 20 does not apply with --instance" in capsys.readouterr().err
