import math
import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyg_routing.data import (
    RoutingData,
    dense_route_quantities,
    edge_index_from_successors,
    edge_index_from_tours,
    route_quantities,
)
from pyg_routing.data.naive import naive_route_quantities
from pyg_routing.errors import InvalidSolutionError
from tests.helpers import random_routes


def test_exact_values_on_a_hand_built_solution(small_cvrp):
    data = RoutingData.from_routes(small_cvrp, [[1, 2], [3, 4]])
    assert data.route_id.tolist() == [-1, 0, 0, 1, 1]
    assert data.route_pos.tolist() == [0, 1, 2, 1, 2]
    assert data.cum_dist.tolist() == [0.0, 1.0, 2.0, 1.0, 3.0]
    assert data.route_length.tolist() == [0.0, 4.0, 4.0, 6.0, 6.0]
    assert data.depot_angle[1:].tolist() == pytest.approx([0, 0, math.pi / 2, math.pi / 2])
    assert data.num_routes.tolist() == [2]
    # The route graph holds exactly the arcs depot->first, consecutive, last->depot.
    assert data.edge_index.t().tolist() == [[0, 1], [1, 2], [2, 0], [0, 3], [3, 4], [4, 0]]


def _tours(routes: list[list[int]], length: int) -> list[int]:
    tour = [0]
    for r in routes:
        tour += r + [0]
    return tour + [0] * (length - len(tour))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 30), keep=st.sampled_from([1.0, 0.6]))
def test_vectorized_matches_the_naive_reference(seed, n, keep):
    rng = random.Random(seed)
    pos = torch.rand(n + 1, 2, generator=torch.Generator().manual_seed(seed))
    routes = random_routes(n, rng, keep=keep)
    ref = naive_route_quantities(pos, routes)
    got = dense_route_quantities(pos[None], torch.tensor([_tours(routes, 2 * n + 3)]))
    assert torch.equal(got.route_id, ref.route_id)
    assert torch.equal(got.route_pos, ref.route_pos)
    torch.testing.assert_close(got.cum_dist, ref.cum_dist)
    torch.testing.assert_close(got.route_length, ref.route_length)
    torch.testing.assert_close(got.depot_angle, ref.depot_angle)
    assert got.num_routes.tolist() == [len(routes)]


def test_batch_equals_one_by_one(rng):
    b, n = 7, 15
    pos = torch.rand(b, n + 1, 2, generator=torch.Generator().manual_seed(1))
    all_routes = [random_routes(n, rng) for _ in range(b)]
    tours = torch.tensor([_tours(r, 2 * n + 2) for r in all_routes])
    batched = dense_route_quantities(pos, tours)
    offset = 0
    for i, routes in enumerate(all_routes):
        single = dense_route_quantities(pos[i:i + 1], tours[i:i + 1])
        sl = slice(i * (n + 1), (i + 1) * (n + 1))
        shifted = torch.where(single.route_id >= 0, single.route_id + offset, -1)
        assert torch.equal(batched.route_id[sl], shifted)
        torch.testing.assert_close(batched.cum_dist[sl], single.cum_dist)
        torch.testing.assert_close(batched.route_length[sl], single.route_length)
        offset += len(routes)
    assert batched.num_routes.tolist() == [len(r) for r in all_routes]


def test_successor_arrays_with_dummy_depots_match_tours():
    # Nodes 0..2 are depot copies, 3..7 customers: routes (3 4) (5) (6 7).
    pos = torch.rand(8, 2, generator=torch.Generator().manual_seed(3))
    pos[1] = pos[2] = pos[0]
    succ = torch.tensor([[3, 5, 6, 4, 1, 2, 7, 0]])
    depot = torch.tensor([True, True, True, False, False, False, False, False])
    rq = route_quantities(pos, edge_index_from_successors(succ), depot)
    assert rq.route_id.tolist() == [-1, -1, -1, 0, 0, 1, 2, 2]
    assert rq.route_pos.tolist() == [0, 0, 0, 1, 2, 1, 1, 2]
    d = lambda a, b: float((pos[a] - pos[b]).norm())  # noqa: E731
    assert rq.route_length[3].item() == pytest.approx(d(0, 3) + d(3, 4) + d(4, 0))
    assert rq.cum_dist[7].item() == pytest.approx(d(0, 6) + d(6, 7))


def test_padding_and_empty_routes_in_tours_are_ignored():
    pos = torch.rand(1, 4, 2, generator=torch.Generator().manual_seed(0))
    a = dense_route_quantities(pos, torch.tensor([[0, 1, 0, 2, 3, 0]]))
    b = dense_route_quantities(pos, torch.tensor([[0, 0, 1, 0, 0, 2, 3, 0, 0, 0]]))
    assert torch.equal(a.route_id, b.route_id)
    torch.testing.assert_close(a.cum_dist, b.cum_dist)


def test_a_cycle_without_depot_is_a_clear_error():
    pos = torch.rand(4, 2)
    edge_index = torch.tensor([[0, 1, 2, 3], [1, 0, 3, 2]])  # 2 <-> 3 never reach the depot
    with pytest.raises(InvalidSolutionError, match="cycle"):
        route_quantities(pos, edge_index, torch.tensor([True, False, False, False]))


def test_edge_index_from_tours_offsets_instances():
    ei = edge_index_from_tours(torch.tensor([[1, 2], [2, 1]]), num_nodes=3)
    assert ei.t().tolist() == [[0, 1], [1, 2], [2, 0], [3, 5], [5, 4], [4, 3]]
