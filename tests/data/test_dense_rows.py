"""``take_rows``: each instance's rows at its own indices, as advanced indexing picks
them, for indices of any shape and rows of any trailing shape."""

import pytest
import torch

from pyg_routing.data.dense_rows import take_rows


@pytest.mark.parametrize("index_tail", [(), (4,), (5, 3)])
@pytest.mark.parametrize("rest", [(), (6,), (2, 3)])
def test_take_rows_is_advanced_indexing(index_tail, rest):
    """``x [B = 3, N = 7, *rest]``, ``index [3, *index_tail]``."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 7, *rest, generator=gen)
    index = torch.randint(7, (3, *index_tail), generator=gen)
    rows = torch.arange(3).view(3, *([1] * len(index_tail)))
    got = take_rows(x, index)
    assert got.shape == (3, *index_tail, *rest)
    assert torch.equal(got, x[rows, index])


def test_take_rows_passes_the_gradient_back_to_repeated_rows():
    x = torch.randn(2, 5, 4, dtype=torch.float64, requires_grad=True)
    index = torch.tensor([[0, 0, 3], [4, 1, 4]])
    assert torch.autograd.gradcheck(lambda t: take_rows(t, index), (x,))
