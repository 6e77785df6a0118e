"""Rows of a dense batch picked per instance."""

from __future__ import annotations

import torch
from torch import Tensor


def take_rows(x: Tensor, index: Tensor) -> Tensor:
    """``x[b, index[b, ...]]`` for ``x [B, N, *rest]`` and ``index [B, *shape]``:
    ``[B, *shape, *rest]``.

    One ``index_select`` of whole rows over the flattened batch. On CPU, advanced
    indexing with a trailing full slice (``x[rows, index]``) is about 100x slower, and a
    ``gather`` with the index expanded over the trailing dims several times slower."""
    b, n = x.shape[:2]
    offset = torch.arange(b, device=index.device).view(b, *([1] * (index.dim() - 1))) * n
    flat = x.reshape(b * n, *x.shape[2:]).index_select(0, (index + offset).reshape(-1))
    return flat.view(*index.shape, *x.shape[2:])
