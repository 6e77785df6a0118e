"""One GraphGPS-style layer: local message passing + global biased attention + FF."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.nn import GINConv
from torch_geometric.utils import to_dense_batch

from pyg_routing.models.attention import RouteAttention
from pyg_routing.models.inplace import InplaceReLU, inplace_add
from pyg_routing.models.pe.rope import RotaryPE


def _gin(dim: int) -> GINConv:
    # ReLUs in place: a Linear's backward does not read its output.
    return GINConv(nn.Sequential(nn.Linear(dim, dim), InplaceReLU(),
                                 nn.Linear(dim, dim)),
                   train_eps=True)


def _gin_one_neighbour(conv: GINConv, x: Tensor, source: Tensor) -> Tensor:
    """``conv(x, arcs)`` for arcs ``source[v] -> v``, one per node: GINConv's
    ``nn(sum of messages + (1 + eps) x)`` with the one-message sum as a gather (the
    gathered rows take the sum in place)."""
    return conv.nn(torch.index_select(x, 0, source).add_((1 + conv.eps) * x))


class GPSLayer(nn.Module):
    r"""GraphGPS layer (Rampášek et al. 2022) for route graphs.

    ``h = LN(x + GIN(x, route graph)) + LN(x + Attn(x, bias, rotary))``, then
    ``out = LN(h + FF(h))``. The global attention takes the bias and rotary
    encodings. With ``local=False`` the layer is a plain Transformer layer,
    ``h = LN(x + Attn(x))`` (the paper's Sec. 3.3 encoder): the route graph is then
    not used at all.

    With ``directed=True`` the local part is two GINs, ``GIN(x, arcs) +
    GIN_rev(x, reversed arcs)``: on route arcs ``i -> succ(i)`` a node hears its
    predecessor through one and its successor through the other, so its embedding
    tells the two apart. A single GIN over the arcs in both directions sums the two
    neighbours and cannot, which leaves a 2-opt policy unable to tell which arcs a
    move ``(i, j)`` removes (``i -> succ(i)``, ``j -> succ(j)``).

    Args:
        dim: width. heads: attention heads. dropout: dropout rate.
        ff_mult: hidden width of the feed-forward block in multiples of ``dim``.
        rotary: optional RoPE module for the attention.
        local: include the local message passing over the route graph.
        directed: separate GINs for the arcs and for their reversal (see above).

    Shapes: ``x [N, dim]``, ``edge_index [2, E]``, ``batch [N]`` -> ``[N, dim]``;
    optional ``neighbours = (pred [N], succ [N])`` (see :meth:`forward`).
    """

    def __init__(self, dim: int, heads: int, dropout: float = 0.0, ff_mult: int = 2,
                 rotary: RotaryPE | None = None, local: bool = True,
                 directed: bool = False) -> None:
        super().__init__()
        self.local: GINConv | None = None
        self.local_rev: GINConv | None = None
        self.norm_local: nn.LayerNorm | None = None
        if local:
            self.local = _gin(dim)
            if directed:
                self.local_rev = _gin(dim)
        self.attn = RouteAttention(dim, heads, dropout, rotary)
        self.ff = nn.Sequential(nn.Linear(dim, ff_mult * dim), InplaceReLU(),
                                nn.Dropout(dropout),
                                nn.Linear(ff_mult * dim, dim))
        if local:     # registered here, as before the option, to keep the state order
            self.norm_local = nn.LayerNorm(dim)
        self.norm_attn = nn.LayerNorm(dim)
        self.norm_out = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for conv in (self.local, self.local_rev):
            if conv is not None:
                conv.reset_parameters()
        self.attn.reset_parameters()
        for m in self.ff:
            if isinstance(m, nn.Linear):
                m.reset_parameters()
        for norm in (self.norm_local, self.norm_attn, self.norm_out):
            if norm is not None:
                norm.reset_parameters()

    def forward(self, x: Tensor, edge_index: Tensor | None, batch: Tensor,
                bias: Tensor | None = None, position: Tensor | None = None,
                graph_size: int | None = None,
                neighbours: tuple[Tensor, Tensor] | None = None) -> Tensor:
        """``graph_size``: every graph has this many nodes, stored graph by graph (dense
        search batches): attention then works on a view, with no padding.

        ``neighbours``: ``(pred, succ)``, ``[N]`` each, when the arcs are one
        permutation (every node has exactly one predecessor and one successor, as a
        giant tour in a search loop). A directed layer then gathers the two rows
        instead of scattering over ``edge_index`` (which may be ``None``): the same
        GINs and the same values (a sum over one arc is that arc's message),
        without the scatter."""
        h_local = None
        if self.local is not None and self.norm_local is not None:
            if neighbours is not None and self.local_rev is not None:
                pred, succ = neighbours
                msg = _gin_one_neighbour(self.local, x, pred).add_(
                    _gin_one_neighbour(self.local_rev, x, succ))
            else:
                if edge_index is None:
                    raise ValueError("GPSLayer needs edge_index unless it is directed and "
                                     "given neighbours=(pred, succ)")
                msg = self.local(x, edge_index)
                if self.local_rev is not None:
                    msg = msg.add_(self.local_rev(x, edge_index.flip(0)))
            # Sums in place on fresh outputs (a Linear's, dropout's): x + m == m + x.
            h_local = self.norm_local(self.dropout(msg).add_(x))
        if graph_size is not None:
            h_attn = self.attn(x.view(-1, graph_size, x.size(-1)), None, bias,
                               position).reshape(x.shape)
        else:
            dense, mask = to_dense_batch(x, batch)
            h_attn = self.attn(dense, mask, bias, position)[mask]
        # under autograd a view of the attention's product: summed out of place there
        h_attn = self.dropout(h_attn)
        h = self.norm_attn(inplace_add(h_attn, x))
        if h_local is not None:
            h = h_local.add_(h)                 # a layer norm's backward reads no output
        return self.norm_out(self.dropout(self.ff(h)).add_(h))
