"""One GraphGPS-style layer: local message passing + global biased attention + FF."""

from __future__ import annotations

from torch import Tensor, nn
from torch_geometric.nn import GINConv
from torch_geometric.utils import to_dense_batch

from pyg_routing.models.attention import RouteAttention
from pyg_routing.models.pe.rope import RotaryPE


def _gin(dim: int) -> GINConv:
    return GINConv(nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim)),
                   train_eps=True)


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

    Shapes: ``x [N, dim]``, ``edge_index [2, E]``, ``batch [N]`` -> ``[N, dim]``.
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
        self.ff = nn.Sequential(nn.Linear(dim, ff_mult * dim), nn.ReLU(), nn.Dropout(dropout),
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

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor, bias: Tensor | None = None,
                position: Tensor | None = None, graph_size: int | None = None) -> Tensor:
        """``graph_size``: every graph has this many nodes, stored graph by graph (dense
        search batches): attention then works on a view, with no padding."""
        h_local = None
        if self.local is not None and self.norm_local is not None:
            msg = self.local(x, edge_index)
            if self.local_rev is not None:
                msg = msg + self.local_rev(x, edge_index.flip(0))
            h_local = self.norm_local(x + self.dropout(msg))
        if graph_size is not None:
            h_attn = self.attn(x.view(-1, graph_size, x.size(-1)), None, bias,
                               position).reshape(x.shape)
        else:
            dense, mask = to_dense_batch(x, batch)
            h_attn = self.attn(dense, mask, bias, position)[mask]
        h = self.norm_attn(x + self.dropout(h_attn))
        if h_local is not None:
            h = h_local + h
        return self.norm_out(h + self.dropout(self.ff(h)))
