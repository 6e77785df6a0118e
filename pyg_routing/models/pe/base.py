"""Shared plumbing of the attention-bias encodings (RPE, ALiBi, SPD)."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.data import Data

from pyg_routing.functional.index_pe import MAX_BIAS_NODES, check_num_nodes, dense_route_inputs


class AttentionBias(nn.Module):
    r"""Base class: an additive attention bias ``[B, H, N, N]`` from dense route inputs.

    Subclasses implement :meth:`pair_bias`. :meth:`forward` validates the inputs,
    enforces the node limit and handles padding: for a valid query row, padded keys
    get ``-inf`` (so the bias doubles as a key-padding mask and softmax stays
    finite); padded query rows are all zeros (their outputs are meant to be
    discarded). Add the result to the attention logits ``[B, H, N, N]`` (query,
    key), e.g. as the float ``attn_mask`` of
    :func:`torch.nn.functional.scaled_dot_product_attention`.

    Args:
        num_heads: ``H``.
        max_nodes: largest ``N`` (nodes per graph) accepted; the bias grows as
            ``B·H·N²``, so larger requests raise ``ValueError`` naming ``N``.
    """

    #: Whether :meth:`forward` needs ``route_id`` (SPD: which nodes share a route).
    needs_route_id: bool = False

    def __init__(self, num_heads: int, max_nodes: int = MAX_BIAS_NODES) -> None:
        super().__init__()
        if not isinstance(num_heads, int) or num_heads < 1:
            raise ValueError(f"{type(self).__name__} needs num_heads >= 1, "
                             f"got num_heads={num_heads}")
        self.num_heads = num_heads
        self.max_nodes = int(max_nodes)

    def reset_parameters(self) -> None:
        """Re-initialize learnable parameters (none in the base class)."""

    def pair_bias(self, route_pos: Tensor, route_id: Tensor, mask: Tensor,
                  open_routes: Tensor | None = None) -> Tensor:
        """``[B, H or 1, N, N]`` bias before padding handling (implemented by subclasses;
        ``open_routes [B]`` bool: instances whose routes are open, or ``None``)."""
        raise NotImplementedError

    def forward(self, route_pos: Tensor, route_id: Tensor | None = None,
                mask: Tensor | None = None, open_routes: Tensor | None = None) -> Tensor:
        r"""Additive attention bias.

        Args:
            route_pos: ``[B, N]`` integer within-route positions (depot 0, unvisited
                and padding -1).
            route_id: ``[B, N]`` route ids (-1 for depot, unvisited, padding); only
                SPD needs it.
            mask: ``[B, N]`` bool, False for padding (default: all valid).
            open_routes: ``[B]`` bool, instances whose routes are open (SPD's route
                graph has no closing edges there); default: all closed.

        Returns:
            ``[B, H, N, N]`` float bias (dtype of the module's parameters/buffers).
            A bias shared by all heads is returned as a broadcast view of
            ``[B, 1, N, N]`` (no copy per head); call ``.contiguous()`` before
            writing into it.
        """
        name = type(self).__name__
        if route_pos.dim() != 2:
            raise ValueError(f"{name} needs dense route_pos of shape [B, N], got "
                             f"{tuple(route_pos.shape)}; see dense_route_inputs(data)")
        if route_pos.is_floating_point():
            raise ValueError(f"{name} needs integer route_pos, got {route_pos.dtype}")
        b, n = route_pos.shape
        check_num_nodes(n, self.max_nodes, name, heads=self.num_heads, batch=b)
        if route_id is None:
            if self.needs_route_id:
                raise ValueError(f"{name} needs route_id [B, N] (which nodes share a route)")
            route_id = torch.full_like(route_pos, -1)
        if mask is None:
            mask = torch.ones_like(route_pos, dtype=torch.bool)
        for label, t in (("route_id", route_id), ("mask", mask)):
            if t.shape != route_pos.shape:
                raise ValueError(f"{name}: {label} must match route_pos {tuple(route_pos.shape)}"
                                 f", got {tuple(t.shape)}")
        mask = mask.bool()
        if open_routes is not None and open_routes.numel() not in (1, b):
            raise ValueError(f"{name}: open_routes needs one flag per instance ({b}), got "
                             f"{open_routes.numel()}")
        bias = self.pair_bias(route_pos.long(), route_id.long(), mask, open_routes)
        # One pass for padding: valid pairs keep their bias, padded keys of valid
        # queries get -inf, padded query rows 0. Shared-head biases stay [B, 1, N, N]
        # until the final (free) expand.
        pair = (mask.unsqueeze(-1) & mask.unsqueeze(-2)).unsqueeze(1)       # [B, 1, N, N]
        fill = torch.where(mask[:, None, :, None], float("-inf"), 0.0).to(bias.dtype)
        return torch.where(pair, bias, fill).expand(b, self.num_heads, n, n)

    def dense_bias(self, data: Data) -> tuple[Tensor, Tensor]:
        """``(bias [B, H, N_max, N_max], mask [B, N_max])`` for a ``RoutingData`` or
        ``Batch`` (nodes in :func:`torch_geometric.utils.to_dense_batch` order).

        Raises:
            NoSolutionError: ``data`` has no solution.
        """
        route_pos, route_id, mask = dense_route_inputs(data)
        opened = data.open_routes if "open_routes" in data else None
        return self(route_pos, route_id, mask, opened), mask

    def extra_args(self) -> str:
        return ""

    def __repr__(self) -> str:
        extra = self.extra_args()
        return (f"{type(self).__name__}(num_heads={self.num_heads}"
                f"{', ' + extra if extra else ''}, max_nodes={self.max_nodes})")
