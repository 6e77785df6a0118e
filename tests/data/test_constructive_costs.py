"""The constructive heuristics on explicit (asymmetric) cost matrices and open routes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pyg_routing.data import RoutingData, make_generator
from pyg_routing.data.costs import euclidean_matrix
from pyg_routing.data.solvers.constructive import nearest_neighbor, sweep, tours_to_routes
from pyg_routing.data.solvers.insertion import cheapest_insertion


def _insertion_reference(d: list[list[float]]) -> list[int]:
    """Cheapest insertion in plain Python with the heuristic's rules: insert ``v`` on
    the arc leaving tour node ``i`` at ``d(i, v) + d(v, succ i) - d(i, succ i)``; ties
    go to the lowest ``i``, then the lowest ``v``. In float32 like the heuristic: street
    costs tie often, and float64 sums would break ties differently."""
    d = np.asarray(d, dtype=np.float32)
    n = len(d)
    succ = {0: 0}
    while len(succ) < n:
        best = None
        for i in sorted(succ):
            for v in range(n):
                if v in succ:
                    continue
                c = d[i][v] + d[v][succ[i]] - d[i][succ[i]]
                if best is None or c < best[0]:
                    best = (c, i, v)
        _, i, v = best
        succ[v], succ[i] = succ[i], v
    tour, v = [0], succ[0]
    while v != 0:
        tour.append(v)
        v = succ[v]
    return tour


def test_cheapest_insertion_follows_the_asymmetric_matrix():
    inst = make_generator("tsp", 9, seed=4, costs="streets", grid=5).sample(6)
    tours = cheapest_insertion(inst)
    for b in range(6):
        ref = _insertion_reference(inst.cost_matrix[b].numpy())
        assert tours[b, :-1].tolist() == ref


def test_pdtsp_insertion_keeps_precedence_and_is_cheaper_than_its_reversal_on_average():
    inst = make_generator("pdtsp", 10, seed=2, costs="streets", grid=5).sample(16)
    tours = cheapest_insertion(inst)
    worse = 0
    for b in range(16):
        routes = tours_to_routes(tours[b:b + 1])[0]
        data = RoutingData.from_routes(inst[b], routes)
        data.check()
        # the matrix the heuristic used is the one the cost is measured with
        m = inst.cost_matrix[b]
        tour = [0, *routes[0], 0]
        assert float(data.cost()) == pytest.approx(
            sum(float(m[a, c]) for a, c in zip(tour[:-1], tour[1:])), rel=1e-5)
        rev = [0, *routes[0][::-1], 0]
        worse += sum(float(m[a, c]) for a, c in zip(rev[:-1], rev[1:])) > float(data.cost())
    assert worse >= 1      # at least some tours use the one-way streets' direction


@pytest.mark.parametrize("problem", ["cvrp", "vrptw"])
@pytest.mark.parametrize("open_routes", [False, True])
def test_nearest_neighbor_and_sweep_are_feasible_on_street_matrices(problem, open_routes):
    inst = make_generator(problem, 15, seed=1, costs="streets", grid=6,
                          open_routes=open_routes).sample(8)
    heuristics = [nearest_neighbor] + ([sweep] if problem == "cvrp" else [])
    for heuristic in heuristics:
        routes = tours_to_routes(heuristic(inst))
        for b in range(8):
            RoutingData.from_routes(inst[b], routes[b]).check()


def test_nearest_neighbor_moves_to_the_cheapest_outgoing_arc():
    # From the depot, node 2 is nearer in Euclidean terms, node 1 by the matrix.
    pos = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [0.5, 0.0]]])
    m = euclidean_matrix(pos)
    m[0, 0, 2] = 3.0
    inst = make_generator("tsp", 3, seed=0).sample(1)
    inst.pos, inst.cost_matrix = pos, m
    assert nearest_neighbor(inst)[0].tolist()[:3] == [0, 1, 2]
    inst.cost_matrix = None
    assert nearest_neighbor(inst)[0].tolist()[:3] == [0, 2, 1]


def test_open_vrptw_nearest_neighbor_ignores_the_depot_deadline_on_the_way_back():
    pos = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]])
    base = make_generator("vrptw", 2, seed=0).sample(1)
    base.pos = pos
    base.demand = torch.tensor([[0.0, 1.0, 1.0]])
    base.capacity = torch.tensor([10.0])
    base.time_window = torch.tensor([[[0.0, 2.5], [0.0, 10.0], [0.0, 10.0]]])
    base.service_time = torch.zeros(1, 3)
    base.open_routes = torch.tensor([True])
    # closed, node 2 could never be served (back at 4 > 2.5); open: one route 0-1-2
    routes = tours_to_routes(nearest_neighbor(base))[0]
    assert routes == [[1, 2]]
    assert math.isclose(float(RoutingData.from_routes(base[0], routes).cost()), 2.0)
