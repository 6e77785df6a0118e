"""Travel costs: the one rule every layer uses.

The cost (and, with time windows, the travel time: speed 1) of the arc ``i -> j``
of an instance is

* ``M[i, j]`` when the instance carries an explicit cost matrix ``M`` (``[N, N]``,
  possibly asymmetric; its diagonal is ignored: staying put costs nothing);
* else the Euclidean distance between the coordinates (benchmarks: in original
  units with the benchmark's rounding, :func:`~pyg_routing.data.evaluation.arc_lengths`);
* and ``0`` for every arc into a depot of an instance with *open routes*: the
  vehicle ends at its last customer, so the return neither costs nor takes time.

What a batch's costs are is asked of one object, :class:`~pyg_routing.data.travel.TravelCost`.

A :class:`~pyg_routing.data.routing_data.RoutingData` keeps its matrix row-major and
flattened (``travel_cost`` ``[N * N]``) so that PyG batches instances of any sizes by
concatenation; :func:`route_arc_costs` looks arcs up in it with no loop over graphs. A dense
batch (:class:`~pyg_routing.data.instances.RoutingInstances`) keeps ``cost_matrix``
``[B, N, N]``; :func:`dense_costs` gives every batch's full matrix by the same rule.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pyg_routing.data.evaluation import arc_lengths
from pyg_routing.errors import InvalidInstanceError, where


def euclidean_matrix(pos: Tensor) -> Tensor:
    """``[..., N, N]`` Euclidean distances of ``pos [..., N, 2]``, elementwise with
    ``hypot`` so that a batch gives bit-identical values to its instances one by one
    (``torch.cdist`` does not)."""
    x, y = pos[..., 0], pos[..., 1]
    return torch.hypot(x.unsqueeze(-1) - x.unsqueeze(-2), y.unsqueeze(-1) - y.unsqueeze(-2))


def checked_cost_matrix(matrix: Tensor, num_nodes: int, instance: str | int | None = None,
                        *, batched: bool = False) -> Tensor:
    """A validated copy of a cost matrix with its diagonal set to 0.

    Args:
        matrix: ``[N, N]`` (or ``[B, N, N]`` with ``batched``) travel costs.
        num_nodes: ``N``, the instance's node count (depot included).
        instance: the instance's name or index, for the messages.

    Raises:
        InvalidInstanceError: wrong shape, a non-finite or negative entry (naming
            the instance and the arc).
    """
    lead = (matrix.size(0),) if batched and matrix.dim() == 3 else ()
    want = (*lead, num_nodes, num_nodes)
    if tuple(matrix.shape) != want:
        shape = "[B, N, N]" if batched else "[N, N]"
        raise InvalidInstanceError(
            f"{where(instance)}`cost_matrix` must have shape {shape} = {want} (one row and "
            f"column per node, depot first), got {tuple(matrix.shape)}")
    if not matrix.is_floating_point():
        matrix = matrix.to(torch.get_default_dtype())
    out = matrix.clone()
    out.diagonal(dim1=-2, dim2=-1).zero_()
    for bad, what in ((~torch.isfinite(out), "a non-finite"), (out < 0, "a negative")):
        if bool(bad.any()):
            idx = torch.nonzero(bad)[0].tolist()
            graph = idx[0] if lead else instance
            i, j = idx[-2:]
            raise InvalidInstanceError(
                f"{where(graph, node=i)}`cost_matrix` has {what} cost "
                f"{out[tuple(idx)].item()} on the arc {i} -> {j}")
    return out


def close_open_routes(costs: Tensor, open_routes: Tensor | None,
                      num_depots: int = 1) -> Tensor:
    """``costs [B, N, N]`` with the columns of the depots (nodes ``0 .. num_depots-1``)
    zeroed in the instances whose ``open_routes [B]`` is True (a new tensor when any
    is; ``costs`` itself otherwise)."""
    if open_routes is None or not bool(open_routes.any()):
        return costs
    into_depot = torch.zeros_like(costs, dtype=torch.bool)
    into_depot[..., :num_depots] = open_routes.view(-1, 1, 1)
    return costs.masked_fill(into_depot, 0.0)


def dense_costs(pos: Tensor, cost_matrix: Tensor | None = None,
                open_routes: Tensor | None = None, num_depots: int = 1) -> Tensor:
    """``[B, N, N]`` travel costs of a dense batch by the rule of this module:
    ``cost_matrix`` when given (an integer matrix in ``pos``'s dtype), else Euclidean
    distances of ``pos [B, N, 2]``; arcs into a depot (nodes ``0 .. num_depots-1``)
    cost 0 where ``open_routes [B]`` is True."""
    if cost_matrix is None:
        costs = euclidean_matrix(pos)
    else:
        if not cost_matrix.is_floating_point():
            # integer costs are exact; the searches add, compare and mask with inf
            cost_matrix = cost_matrix.to(pos.dtype)
        n = cost_matrix.size(-1)
        eye = torch.eye(n, dtype=torch.bool, device=cost_matrix.device)
        costs = cost_matrix.masked_fill(eye, 0.0)               # the diagonal is ignored
    return close_open_routes(costs, open_routes, num_depots)


def flat_matrix_index(src: Tensor, dst: Tensor, batch: Tensor | None,
                      num_nodes: int) -> Tensor:
    """Index of each arc ``src -> dst`` (global node ids of a flat batch) in the
    concatenation of the graphs' flattened row-major matrices.

    ``batch`` is ``[num_nodes]`` graph index of each node (``None``: one graph).
    """
    if batch is None:
        return src * num_nodes + dst
    counts, base = _matrix_offsets(batch, num_nodes)
    first = torch.cumsum(counts, 0) - counts                  # first node of each graph
    g = batch.index_select(0, src)
    local_src = src - first.index_select(0, g)
    local_dst = dst - first.index_select(0, g)
    return base.index_select(0, g) + local_src * counts.index_select(0, g) + local_dst


def _matrix_offsets(batch: Tensor | None, num_nodes: int,
                    num_graphs: int | None = None) -> tuple[Tensor, Tensor]:
    """``(counts, base)``, each ``[G]``: the nodes of every graph and where its
    flattened ``[n, n]`` matrix starts in the concatenation (``batch`` ``[N]``, ``None``:
    one graph of ``num_nodes``)."""
    if batch is None:
        counts = torch.tensor([num_nodes])
    else:
        counts = torch.bincount(batch, minlength=num_graphs or 0)
    square = counts * counts
    return counts, torch.cumsum(square, 0) - square


def refuse_lost_matrix(data, label: str) -> None:
    """Refuse an instance that announces an explicit matrix (``explicit_cost``) but
    carries no ``travel_cost``: it must never be costed as Euclidean.

    Raises:
        InvalidInstanceError: ``label`` (``"instance 'X': "``) and what is missing.
    """
    if "travel_cost" not in data and "explicit_cost" in data \
            and bool(data.explicit_cost.any()):
        raise InvalidInstanceError(
            f"{label}`explicit_cost` is set but the instance carries no `travel_cost` "
            f"matrix; refusing to treat it as Euclidean")


def open_arc_mask(dst: Tensor, depot_mask: Tensor, open_routes: Tensor | None,
                  batch: Tensor | None) -> Tensor | None:
    """``[E]`` True for arcs into the depot of an open-route instance (``None`` when
    no instance has open routes)."""
    if open_routes is None or not bool(open_routes.any()):
        return None
    into_depot = depot_mask.index_select(0, dst)
    if batch is None:
        return into_depot & open_routes.reshape(-1)[0]
    return into_depot & open_routes.reshape(-1).index_select(0, batch.index_select(0, dst))


def lookup_costs(flat_matrix: Tensor, src: Tensor, dst: Tensor, batch: Tensor | None,
                 num_nodes: int) -> Tensor:
    """``[E]`` entries of the flattened matrices for the arcs ``src -> dst``."""
    return flat_matrix.index_select(0, flat_matrix_index(src, dst, batch, num_nodes))


def route_arc_costs(data, raw: bool) -> Tensor:
    """``[E]`` costs of the route arcs ``data.edge_index`` of a
    :class:`~pyg_routing.data.routing_data.RoutingData` (or a PyG batch of them) by
    the rule of this module. ``raw``: in original units (benchmarks, with their
    rounding), else in ``pos``'s units. Euclidean arcs are ``norm`` in ``pos``'s
    dtype, the arithmetic of :func:`~pyg_routing.data.route_quantities.route_quantities`."""
    src, dst = data.edge_index
    batch = getattr(data, "batch", None)
    opened = open_arc_mask(dst, data.depot_mask, getattr(data, "open_routes", None), batch)
    if "travel_cost" in data:
        flat = data.raw_travel_cost if raw and "raw_travel_cost" in data else data.travel_cost
        costs = lookup_costs(flat, src, dst, batch, data.num_nodes)
    elif raw and "raw_pos" in data:
        costs = arc_lengths(data.raw_pos, src, dst, data.rounding[data._graph_of_node()[src]])
    else:
        costs = arc_lengths(data.pos, src, dst)
    return costs if opened is None else costs.masked_fill(opened, 0.0)


def asymmetric_rows(costs: Tensor) -> Tensor:
    """``[B]`` bool: whether each ``[B, N, N]`` cost matrix differs from its transpose."""
    return (costs != costs.transpose(1, 2)).flatten(1).any(1)


def asymmetric_graphs(flat_matrix: Tensor, batch: Tensor | None, num_nodes: int,
                      num_graphs: int) -> Tensor:
    """``[G]`` bool: whether each graph's flattened matrix (concatenated as in
    :class:`~pyg_routing.data.routing_data.RoutingData`) is asymmetric; no loop over
    graphs (each entry is compared with its transposed entry)."""
    dev = flat_matrix.device
    counts, base = _matrix_offsets(batch, num_nodes, num_graphs)
    counts, base = counts.to(dev), base.to(dev)
    graph = torch.repeat_interleave(torch.arange(counts.numel(), device=dev), counts * counts)
    local = torch.arange(flat_matrix.numel(), device=dev) - base[graph]
    n = counts[graph]
    transposed = base[graph] + (local % n) * n + local // n
    differs = flat_matrix != flat_matrix[transposed]
    return torch.zeros(counts.numel(), dtype=torch.bool, device=dev).index_put_(
        (graph[differs],), torch.ones((), dtype=torch.bool, device=dev))


def direction_sensitive(problem_sensitive: Tensor, asymmetric: Tensor | None,
                        open_routes: Tensor | None) -> Tensor:
    """``[G]`` bool: whether a route can be told from its reversal -- by the problem's
    constraints (:attr:`Problem.direction_sensitive`), by an asymmetric matrix (the
    reversal costs differently) or by open routes (the reversal starts elsewhere).
    What ``direction="auto"`` of IPE reads."""
    out = problem_sensitive
    for extra in (asymmetric, open_routes):
        if extra is not None:
            out = out | extra.reshape(-1).to(torch.bool)
    return out
