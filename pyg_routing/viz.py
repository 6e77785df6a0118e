"""Plots of routing solutions and positional encodings (matplotlib).

Headless-safe: figures are made with :class:`matplotlib.figure.Figure` (no
``pyplot``, no global state, no ``show()``), so they work under the Agg backend,
in tests and on servers. Every function draws on ``ax`` when given, otherwise
on a new figure, and returns the ``Axes`` (its figure is ``ax.figure``; save it
with ``ax.figure.savefig(path)``).
"""

from __future__ import annotations

from typing import Any

import matplotlib
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from torch import Tensor
from torch_geometric.data import Batch, Data


def _new_axes(ax: Axes | None, figsize: tuple[float, float] = (5.0, 5.0)) -> Axes:
    if ax is not None:
        return ax
    return Figure(figsize=figsize, layout="constrained").add_subplot()


def _single(data: Data) -> Data:
    if isinstance(data, Batch):
        if data.num_graphs != 1:
            raise ValueError(f"plot one instance at a time (got a batch of {data.num_graphs}); "
                             f"use batch.get_example(i)")
        return data.get_example(0)
    return data


def _routes(data: Data) -> list[list[int]]:
    return data.routes() if hasattr(data, "routes") and "edge_index" in data else []


def _route_colors(num: int, cmap: str = "tab20") -> list[Any]:
    from matplotlib import colormaps

    cm = colormaps[cmap]
    n = getattr(cm, "N", 256)
    return [cm(i % n if n < 256 else i / max(num, 1)) for i in range(num)]


def plot_solution(data: Data, ax: Axes | None = None, arrows: bool = False,
                  labels: bool = False, cmap: str = "tab20", title: str | None = None) -> Axes:
    """Routes in distinct colours, the depot as a black square.

    Args:
        data: one instance (``RoutingData``) with a solution; without one, only
            the nodes are drawn.
        ax: axes to draw on (default: a new figure).
        arrows: draw arcs as arrows (direction of travel).
        labels: write node ids next to the nodes.
        cmap: colormap of the routes.
        title: axes title (default: the number of routes and the cost).
    """
    data = _single(data)
    ax = _new_axes(ax)
    pos = data.pos.detach().cpu().numpy()
    routes = _routes(data)
    on_route = {v for r in routes for v in r}
    for color, route in zip(_route_colors(len(routes), cmap), routes):
        tour = pos[[0, *route, 0]]
        if arrows:
            for a, b in zip(tour[:-1], tour[1:]):
                ax.annotate("", xy=b, xytext=a,
                            arrowprops=dict(arrowstyle="-|>", color=color, lw=1.2,
                                            shrinkA=3, shrinkB=3))
        else:
            ax.plot(tour[:, 0], tour[:, 1], "-", color=color, lw=1.2)
        ax.scatter(tour[1:-1, 0], tour[1:-1, 1], s=18, color=color, zorder=3)
    others = [v for v in range(1, len(pos)) if v not in on_route]
    if others:
        ax.scatter(pos[others, 0], pos[others, 1], s=18, marker="x", color="0.5", zorder=3,
                   label="unvisited" if routes else "customers")
    ax.scatter(pos[:1, 0], pos[:1, 1], s=90, marker="s", color="black", zorder=4,
               label="depot")
    if labels:
        for v, (x, y) in enumerate(pos):
            ax.annotate(str(v), (x, y), textcoords="offset points", xytext=(3, 3), fontsize=6)
    if title is None and routes:
        title = f"{len(routes)} routes, cost {float(data.cost()):.3f}"
    if title:
        ax.set_title(title)
    ax.set_aspect("equal")
    ax.legend(loc="best", fontsize=7)
    return ax


def plot_encoding(data: Data, pe: Tensor, channel: int, ax: Axes | None = None,
                  cmap: str = "coolwarm", show_routes: bool = True,
                  title: str | None = None) -> Axes:
    """Nodes coloured by channel ``channel`` of a per-node encoding ``pe [N, D]``,
    with a colorbar; the routes are drawn faintly underneath."""
    data = _single(data)
    ax = _new_axes(ax, (5.6, 5.0))
    pos = data.pos.detach().cpu().numpy()
    values = _as_numpy(pe)
    if values.ndim == 1:
        values = values[:, None]
    if values.shape[0] != len(pos):
        raise ValueError(f"pe has {values.shape[0]} rows for {len(pos)} nodes")
    if show_routes:
        for route in _routes(data):
            tour = pos[[0, *route, 0]]
            ax.plot(tour[:, 0], tour[:, 1], "-", color="0.75", lw=0.8, zorder=1)
    sc = ax.scatter(pos[1:, 0], pos[1:, 1], c=values[1:, channel], cmap=cmap, s=30,
                    edgecolors="0.3", linewidths=0.3, zorder=3)
    ax.scatter(pos[:1, 0], pos[:1, 1], s=90, marker="s", color="black", zorder=4)
    ax.figure.colorbar(sc, ax=ax, shrink=0.8)
    ax.set_title(title if title is not None else f"channel {channel}")
    ax.set_aspect("equal")
    return ax


def node_order(data: Data) -> np.ndarray:
    """Customers ordered by (route, position in route); unvisited ones last."""
    data = _single(data)
    routes = _routes(data)
    seen = [v for r in routes for v in r]
    rest = sorted(set(range(1, data.num_nodes)) - set(seen))
    return np.asarray(seen + rest, dtype=np.int64)


def plot_pe_distance(data: Data, pe: Tensor, ax: Axes | None = None,
                     pairwise: bool | None = None, cmap: str = "magma_r",
                     title: str | None = None) -> Axes:
    """Node-by-node heatmap of ``||PE(v_i) - PE(v_j)||_2`` (or of a given ``[N, N]``
    dissimilarity), customers ordered by (route, position), route borders drawn.

    Args:
        data: one solved instance.
        pe: ``[N, D]`` per-node encoding, or ``[N, N]`` pairwise dissimilarity.
        pairwise: whether ``pe`` is pairwise (default: when it is square ``[N, N]``).
    """
    data = _single(data)
    ax = _new_axes(ax, (5.6, 5.0))
    values = _as_numpy(pe).astype(np.float64)
    n = data.num_nodes
    if values.ndim == 1:
        values = values[:, None]
    if pairwise is None:
        pairwise = values.shape == (n, n)
    if not pairwise:
        diff = values[:, None, :] - values[None, :, :]
        values = np.sqrt((diff * diff).sum(-1))
    order = node_order(data)
    mat = values[np.ix_(order, order)]
    im = ax.imshow(mat, cmap=cmap, interpolation="nearest")
    bounds = np.cumsum([len(r) for r in _routes(data)])[:-1] - 0.5
    for b in bounds:
        ax.axhline(b, color="white", lw=0.6)
        ax.axvline(b, color="white", lw=0.6)
    ax.figure.colorbar(im, ax=ax, shrink=0.8)
    ax.set_xlabel("customer (by route, position)")
    ax.set_ylabel("customer (by route, position)")
    ax.set_title(title if title is not None else "PE distance")
    return ax


def plot_training_curves(curves: dict[str, list[dict[str, float]]], ax: Axes | None = None,
                         reference: float | None = None, title: str | None = None) -> Axes:
    """Validation objective (or gap) against training wall time, one colour per run
    label and one line per seed.

    Args:
        curves: run label -> points with keys ``seconds`` and ``cost``, optionally
            ``gap`` (percent) and ``seed`` (e.g. from
            :class:`~pyg_routing.training.callbacks.ValidationCurve`).
        reference: mean reference objective of the validation set, used to turn
            ``cost`` into a gap ``100 (cost / reference - 1)`` where no ``gap`` is given.
    """
    ax = _new_axes(ax, (6.4, 4.4))
    all_points = [p for points in curves.values() for p in points]
    use_gap = bool(all_points) and all("gap" in p for p in all_points)
    as_gap = use_gap or reference is not None
    # tab10 repeats after 10 runs (a full comparison has 14): switch to tab20 then
    cmap = matplotlib.colormaps["tab10" if len(curves) <= 10 else "tab20"]
    for color, (label, points) in enumerate(curves.items()):
        seeds = list(dict.fromkeys(p.get("seed") for p in points))
        for k, seed in enumerate(seeds):
            run = [p for p in points if p.get("seed") == seed]
            t = np.array([p["seconds"] for p in run]) / 60.0
            if use_gap:
                y = np.array([p["gap"] for p in run])
            else:
                y = np.array([p["cost"] for p in run])
                if reference is not None:
                    y = 100.0 * (y / reference - 1.0)
            ax.plot(t, y, "-o", ms=2.5, lw=1.2, color=cmap(color % cmap.N),
                    label=label if k == 0 else None)
    ax.set_xlabel("training time (min)")
    ax.set_ylabel("validation gap (%)" if as_gap else "validation objective")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=7, ncol=2)
    if title is not None:
        ax.set_title(title)
    return ax


def _as_numpy(x: Tensor | np.ndarray) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.detach().cpu().to(torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


__all__ = ["node_order", "plot_encoding", "plot_pe_distance", "plot_solution",
           "plot_training_curves"]
