"""What an improvement policy sees of a :class:`~pyg_routing.envs.state.TwoOptState`.

:func:`observe` recomputes, on the env's dense state and every step, the node
encoding that the policy's :class:`~pyg_routing.models.GPSEncoder` needs (its
``pe``), with the batched functions of :mod:`pyg_routing.functional`: no PyG
``Data`` objects and no Python loop over instances.

Depot copies ("dummy depots", nodes ``0 .. K-1``) are depots for every encoding:
within-route position 0, route id -1 (IPE phase 0, XPE zeros). The graph
encodings (Laplacian PE, RWSE) are defined on the route graph in ORIGINAL node
ids, where all copies are one depot: they are computed on that merged graph
(one depot per instance) and every copy receives the depot's code.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from pyg_routing.data.route_quantities import RouteQuantities, edge_index_from_successors
from pyg_routing.envs.state import TwoOptState
from pyg_routing.envs.two_opt import action_mask, node_features, route_quantities
from pyg_routing.functional import (
    cycleformer_pe,
    dact_cpe,
    ipe,
    laplacian_pe,
    random_walk_pe,
    route_sizes,
    sinusoidal_pe,
    xpe,
)

#: encodings that need no node code from :func:`observe` (``route_pos`` /
#: ``route_id`` suffice): learnable APE, attention biases, rotary, none.
NO_NODE_CODE = ("ape", "rpe", "alibi", "spd", "rope", "none")


@dataclass
class Observation:
    """One dense observation of ``B`` states with ``M`` nodes each.

    Attributes:
        x: ``[B, M, F]`` node features (:func:`~pyg_routing.envs.node_features`;
            ``F = 6``, VRPTW 9), in the encoder's dtype.
        edge_index: ``[2, B * M]`` route arcs of the current solutions over the
            flattened ``B * M`` nodes (one successor per node).
        succ: ``[B, M]`` long successor of every node within its instance (the
            same arcs; the directed encoder gathers along them).
        pe: ``[B, M, W]`` node encoding of node kinds, ``None`` for the others.
        route_pos: ``[B, M]`` long within-route positions (depot copies 0).
        route_id: ``[B, M]`` long route ids (unique over the batch; -1 at depots).
        mask: ``[B, M, M]`` bool action mask (True = allowed 2-opt move).
        extra: ``[B, 2]`` ``(cost, best_cost)`` graph features for the critic.
    """

    x: Tensor
    edge_index: Tensor
    succ: Tensor
    pe: Tensor | None
    route_pos: Tensor
    route_id: Tensor
    mask: Tensor
    extra: Tensor

    def to(self, device: torch.device | str) -> Observation:
        return Observation(*(None if t is None else t.to(device) for t in
                             (self.x, self.edge_index, self.succ, self.pe, self.route_pos,
                              self.route_id, self.mask, self.extra)))


def _encoder_of(model: nn.Module) -> nn.Module:
    """The ``GPSEncoder`` itself, or the ``.encoder`` of a policy wrapping one."""
    enc = getattr(model, "encoder", model)
    if not hasattr(enc, "pe") or not hasattr(enc, "node_pe"):
        raise TypeError(f"expected a GPSEncoder (or a policy with .encoder), got "
                        f"{type(model).__name__}")
    return enc


def node_code(state: TwoOptState, encoder: nn.Module,
              rq: RouteQuantities | None = None) -> Tensor | None:
    """The ``[B, M, W]`` node encoding ``encoder.pe`` needs on ``state`` (``None``
    for APE, bias, rotary and ``none``), configured like ``encoder.node_pe``.

    Args:
        state: the env state (``B`` instances, ``M`` nodes).
        encoder: a ``GPSEncoder`` (or a module with ``.encoder``).
        rq: the state's flat route quantities, if already computed.

    Raises:
        NotImplementedError: an encoding this env cannot provide.
    """
    enc = _encoder_of(encoder)
    name = enc.pe
    if name in NO_NODE_CODE or enc.node_pe is None:
        return None
    b, m = state.order.shape
    rq = route_quantities(state) if rq is None else rq
    dtype = next(enc.parameters()).dtype
    depot = state.depot_mask.reshape(-1)
    t = enc.node_pe
    if name in ("ipe", "ipexpe"):
        ipe_t = t.ipe if name == "ipexpe" else t
        direction = ipe_t.direction
        if direction == "auto":
            direction = "aware" if state.problem.direction_sensitive else "invariant"
        code = ipe(rq.cum_dist, rq.route_length, ipe_t.dim, direction, ipe_t.frequencies,
                   ipe_t.base, route_pos=rq.route_pos)
        if name == "ipexpe":
            code = torch.cat([code, xpe(rq.depot_angle, t.xpe.num_bands, t.xpe.dim, depot)], -1)
    elif name == "xpe":
        code = xpe(rq.depot_angle, t.num_bands, t.dim, depot)
    elif name == "sin":
        code = sinusoidal_pe(rq.route_pos, t.dim, t.base, dtype=dtype)
    elif name in ("cycleformer", "dact_cpe"):
        size = route_sizes(rq.route_pos.view(b, m), rq.route_id.view(b, m)).reshape(-1)
        if name == "cycleformer":
            code = cycleformer_pe(rq.route_pos, size, t.dim, t.variant, t.base, dtype=dtype)
        else:
            code = dact_cpe(rq.route_pos, size, t.dim, t.variant, dtype=dtype)
    elif name in ("lap", "rwse"):
        code = _graph_code(state, enc, name, dtype)
    else:  # pragma: no cover - a new encoding kind
        raise NotImplementedError(f"observe() cannot compute the {name!r} encoding on the "
                                  f"2-opt environment's dense state")
    return code.reshape(b, m, -1).to(dtype)


def _graph_code(state: TwoOptState, enc: nn.Module, name: str, dtype: torch.dtype) -> Tensor:
    """Laplacian PE / RWSE on the merged route graph (all depot copies = one depot,
    ``N = M - K + 1`` nodes per instance), then scattered back to the ``M`` nodes."""
    b, m = state.order.shape
    k = state.num_depots
    n = m - k + 1
    dev = state.device
    off = (torch.arange(b, device=dev) * n).unsqueeze(1)
    orig = (state.order - (k - 1)).clamp(min=0)          # copy -> 0, customer v -> v-K+1
    # Arcs in cycle order = route order (the cycle starts at copy 0); the
    # depot -> depot arcs of empty routes are ignored by the route graph.
    edge_index = torch.stack([(orig + off).reshape(-1),
                              (orig.roll(-1, dims=1) + off).reshape(-1)])
    ptr = torch.arange(b + 1, device=dev) * n
    t = enc.node_pe
    if name == "lap":
        code = laplacian_pe(edge_index, b * n, k=t.k, ptr=ptr,
                            random_sign=bool(t.random_sign and enc.training),
                            generator=t.generator, dtype=dtype)
    else:
        code = random_walk_pe(edge_index, b * n, walk_length=t.walk_length, ptr=ptr,
                              dtype=dtype)
    node = (torch.arange(m, device=dev) - (k - 1)).clamp(min=0)         # [M] merged id
    return code.view(b, n, -1)[:, node]


def observe(state: TwoOptState, encoder: nn.Module, mask: Tensor | None = None) -> Observation:
    """The :class:`Observation` of ``state`` for a policy built on ``encoder``.

    Args:
        state: ``B`` solutions on ``M`` nodes.
        encoder: the policy's ``GPSEncoder`` (or the policy itself, via ``.encoder``).
        mask: a precomputed ``[B, M, M]`` action mask (default: :func:`action_mask`).

    Returns:
        Dense tensors, see :class:`Observation`.
    """
    enc = _encoder_of(encoder)
    b, m = state.order.shape
    dtype = next(enc.parameters()).dtype
    rq = route_quantities(state)
    return Observation(
        x=node_features(state).to(dtype),
        edge_index=edge_index_from_successors(state.succ),
        succ=state.succ,
        pe=node_code(state, enc, rq),
        route_pos=rq.route_pos.view(b, m),
        route_id=rq.route_id.view(b, m),
        mask=action_mask(state) if mask is None else mask,
        extra=torch.stack([state.cost, state.best_cost], -1).to(dtype),
    )
