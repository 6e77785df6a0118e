"""PDTSP tour rules: random feasible tours, the reinsertion mask and move against brute
force, the candidate list, and the tour check's errors."""

from collections import Counter

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyg_routing.envs.tours import rank_from_order
from pyg_routing.errors import InfeasibleSolutionError, InvalidSolutionError
from pyg_routing.functional.pickup_delivery import (
    candidate_index,
    check_tours,
    random_feasible_orders,
    reinsert,
    reinsertion_candidates,
    reinsertion_mask,
)


def _feasible(tour, pairs):
    return all(tour.index(r) < tour.index(r + pairs) for r in range(1, pairs + 1))


def _insert(reduced, pickup, delivery, first, second):
    """The move by list surgery: pickup after ``first``, delivery after ``second``
    (right after the pickup when ``first == second``)."""
    tour = list(reduced)
    tour.insert(tour.index(first) + 1, pickup)
    tour.insert(tour.index(pickup if first == second else second) + 1, delivery)
    return tour


def test_random_tours_are_feasible_and_uniform():
    orders = random_feasible_orders(60_000, 2, torch.Generator().manual_seed(0))
    check_tours(orders, 2)
    counts = Counter(tuple(row) for row in orders.tolist())
    # 4! / 2^2 = 6 feasible tours, each drawn 10 000 times in expectation
    assert len(counts) == 6
    assert all(9_500 < c < 10_500 for c in counts.values())
    again = random_feasible_orders(60_000, 2, torch.Generator().manual_seed(0))
    assert torch.equal(orders, again)


@settings(max_examples=25, deadline=None)
@given(pairs=st.integers(1, 5), seed=st.integers(0, 10_000))
def test_reinsertion_mask_and_move_equal_brute_force(pairs, seed):
    m = 2 * pairs + 1
    order = random_feasible_orders(3, pairs, torch.Generator().manual_seed(seed))
    rank = rank_from_order(order)
    for b in range(3):
        tour = order[b].tolist()
        for r in range(1, pairs + 1):
            p, d = torch.tensor([r]), torch.tensor([r + pairs])
            mask = reinsertion_mask(rank[b:b + 1], p, d)[0]
            reduced = [v for v in tour if v not in (r, r + pairs)]
            assert int(mask.sum()) == pairs * (2 * pairs - 1)
            nulls = 0
            for i in range(m):
                for j in range(m):
                    ok = i in reduced and j in reduced and reduced.index(i) <= reduced.index(j)
                    assert bool(mask[i, j]) == ok
                    if not ok:
                        continue
                    want = _insert(reduced, r, r + pairs, i, j)
                    got = reinsert(order[b:b + 1], rank[b:b + 1], p, d, torch.tensor([i]),
                                   torch.tensor([j]))[0].tolist()
                    assert got == want and _feasible(got, pairs)
                    nulls += got == tour
            assert nulls == 1


def test_candidates_list_the_mask_and_index_inverts_them():
    pairs, b = 6, 40
    m = 2 * pairs + 1
    order = random_feasible_orders(b, pairs, torch.Generator().manual_seed(3))
    rank = rank_from_order(order)
    pair = torch.randint(pairs, (b,), generator=torch.Generator().manual_seed(4))
    p, d = pair + 1, pair + 1 + pairs
    first, second = reinsertion_candidates(order, rank, p, d)
    assert first.shape == (b, pairs * (2 * pairs - 1))
    listed = torch.zeros(b, m * m, dtype=torch.bool).scatter_(1, first * m + second, True)
    assert torch.equal(listed.view(b, m, m), reinsertion_mask(rank, p, d))
    for k in range(first.size(1)):
        assert (candidate_index(rank, p, d, first[:, k], second[:, k]) == k).all()


def test_check_tours_names_the_offence():
    good = torch.tensor([[0, 1, 3, 2, 4]])
    check_tours(good, 2)
    with pytest.raises(InfeasibleSolutionError, match="instance 1: delivery 3 comes before "
                                                      "its pickup 1"):
        check_tours(torch.tensor([[0, 1, 3, 2, 4], [0, 3, 1, 2, 4]]), 2)
    with pytest.raises(InvalidSolutionError, match="instance 0: node 2 visited more than once"):
        check_tours(torch.tensor([[0, 1, 3, 2, 2]]), 2)
    with pytest.raises(InvalidSolutionError, match="does not start at the depot"):
        check_tours(torch.tensor([[1, 0, 3, 2, 4]]), 2)
    with pytest.raises(InvalidSolutionError, match="out of range"):
        check_tours(torch.tensor([[0, 1, 3, 2, 9]]), 2)
    with pytest.raises(InvalidSolutionError, match="expected long tours"):
        check_tours(torch.tensor([[0.0, 1, 3, 2, 4]]), 2)
    # names in another id space
    with pytest.raises(InfeasibleSolutionError, match="delivery 30 comes before its pickup 10"):
        check_tours(torch.tensor([[0, 3, 1, 2, 4]]), 2, node_ids=torch.tensor([0, 10, 20, 30, 40]))
