"""Cost models of the generators: how an instance's travel costs follow from its layout.

``euclidean`` (the paper's data) keeps no matrix: costs are the distances between
coordinates. ``streets`` is an asymmetric family with a known structure, a city
grid with one-way streets:

* ``G x G`` intersections on the unit square (``grid`` = ``G``), joined by ``G``
  horizontal and ``G`` vertical streets;
* the four boundary streets are two-way, so every intersection reaches every
  other; each inner street is one-way with probability ``one_way``, in a direction
  drawn uniformly;
* a location walks to its nearest intersection (Manhattan distance, both ways);
  ``c(i, j) = a_i + sp(g_i, g_j) + a_j`` with ``sp`` the shortest driving distance
  between their intersections (scipy's Dijkstra), and ``|x_i - x_j|_1`` when both
  share an intersection.

Shortest paths obey the triangle inequality, and a closed route driven the other
way round generally costs a different amount (a one-way street must be bypassed),
which a model of the form ``c(i, j) = f(x_j - x_i)`` cannot give: there, whenever
``f(v) - f(-v)`` is linear in ``v`` (a wind, a slope that only charges climbing),
the asymmetric parts cancel around every closed tour.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse
import torch
from scipy.sparse.csgraph import dijkstra
from torch import Tensor

from pyg_routing.data.generator_options import count_option, number_option
from pyg_routing.errors import InvalidInstanceError
from pyg_routing.options import COST_MODELS, DEFAULT_GRID, DEFAULT_ONE_WAY


def street_costs(pos: Tensor, directions: Tensor, grid: int) -> Tensor:
    """``[B, N, N]`` costs of the ``streets`` model (see the module docstring).

    Args:
        pos: ``[B, N, 2]`` coordinates in the unit square.
        directions: ``[B, 2, G]`` street directions, rows (``[:, 0]``, horizontal
            streets, by ``y``) then columns (``[:, 1]``, vertical, by ``x``): ``0``
            two-way, ``+1`` towards increasing ``x`` (rows) / ``y`` (columns), ``-1``
            the other way. Boundary streets are used as given.
        grid: ``G``, intersections per side.
    """
    b, n, _ = pos.shape
    step = 1.0 / (grid - 1)
    p = pos.detach().cpu().double().numpy()
    snapped = np.clip(np.rint(p / step), 0, grid - 1).astype(np.int64)        # [B, N, 2]
    node = snapped[..., 1] * grid + snapped[..., 0]                           # row-major
    access = np.abs(p - snapped * step).sum(-1)                               # [B, N]
    dirs = directions.detach().cpu().numpy()
    out = np.empty((b, n, n))
    for k in range(b):      # one sparse graph per instance; not in any search loop
        dist = dijkstra(_street_graph(dirs[k], grid, step), indices=node[k])  # [N, G * G]
        out[k] = access[k][:, None] + dist[:, node[k]] + access[k][None, :]
        same = node[k][:, None] == node[k][None, :]
        walk = np.abs(p[k][:, None, :] - p[k][None, :, :]).sum(-1)
        out[k] = np.where(same, walk, out[k])
        np.fill_diagonal(out[k], 0.0)
    return torch.from_numpy(out).to(device=pos.device, dtype=pos.dtype)


def _street_graph(dirs: np.ndarray, grid: int, step: float) -> scipy.sparse.csr_matrix:
    """The directed street graph of one instance (``dirs`` ``[2, G]``)."""
    ids = np.arange(grid * grid).reshape(grid, grid)                  # [row (y), col (x)]
    src, dst = [], []
    # horizontal street r joins (r, c) -> (r, c + 1); vertical street c joins
    # (r, c) -> (r + 1, c)
    for a, bb, way in ((ids[:, :-1], ids[:, 1:], dirs[0][:, None]),
                       (ids[:-1, :], ids[1:, :], dirs[1][None, :])):
        way = np.broadcast_to(way, a.shape)
        fwd, bwd = way >= 0, way <= 0
        src += [a[fwd], bb[bwd]]
        dst += [bb[fwd], a[bwd]]
    s, d = np.concatenate(src), np.concatenate(dst)
    return scipy.sparse.csr_matrix((np.full(s.size, step), (s, d)),
                                   shape=(grid * grid, grid * grid))


def check_cost_model(costs: str, grid: object, one_way: object) -> tuple[int, float]:
    """The ``costs``, ``grid`` and ``one_way`` options of a generator, else
    :class:`InvalidInstanceError`; returns ``(grid, one_way)``."""
    if costs not in COST_MODELS:
        raise InvalidInstanceError(f"unknown cost model {costs!r}; choose from "
                                   f"{', '.join(COST_MODELS)}")
    g, p = count_option(grid, "grid"), number_option(one_way, "one_way")
    if costs == "euclidean" and (g != DEFAULT_GRID or p != DEFAULT_ONE_WAY):
        raise InvalidInstanceError("grid and one_way apply to costs='streets' only")
    if g < 3:
        raise InvalidInstanceError(f"grid must be >= 3 intersections per side (two "
                                   f"boundary streets and an inner one), got {grid!r}")
    if not 0.0 <= p <= 1.0:
        raise InvalidInstanceError(f"one_way is a probability in [0, 1], got {one_way!r}")
    return g, p


def sample_costs(costs: str, grid: int, one_way: float, pos: Tensor,
                 rng: torch.Generator) -> Tensor | None:
    """The cost matrix of a sampled batch (``None`` for ``euclidean``, which keeps no
    matrix and draws nothing, so its random stream is the paper's)."""
    if costs == "euclidean":
        return None
    b, dev = pos.size(0), pos.device
    one = torch.rand(b, 2, grid, generator=rng, device=dev) < one_way
    sign = torch.where(torch.rand(b, 2, grid, generator=rng, device=dev) < 0.5, -1, 1)
    directions = torch.where(one, sign, 0)
    directions[:, :, [0, -1]] = 0                                       # two-way boundary
    return street_costs(pos, directions, grid)
