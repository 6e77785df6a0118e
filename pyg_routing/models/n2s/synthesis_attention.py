"""N2S's Synthesis Attention layer and its instance normalisation.

Synthesis Attention (Ma et al., IJCAI 2022, Sec. 4.1) mixes, per node pair and per
head, the node-embedding attention score with a positional score by a small MLP
before the softmax: ``softmax_j(MLP([q_i k_j ; pos_ij]))``. The positional scores
``[B, H, M, M]`` come from the encoder (one per encoding, shared by all layers).

The pair tensors stay channels-first (``[B, C, M * M]``) so the MLP over the channels
is a matrix product with no permute copies; its first layer is split into the node
and the positional halves, so a model without positional scores (No PE, RoPE) skips
the zero half instead of multiplying it.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pyg_routing.functional.chunks import needs_grad
from pyg_routing.models.attention import instance_norm
from pyg_routing.models.inplace import InplaceReLU
from pyg_routing.models.n2s.synthesis_scores import SynthesisScores
from pyg_routing.models.pe.rope import RotaryPE

__all__ = ["SynthesisAttentionLayer", "instance_norm"]


class SynthesisAttentionLayer(nn.Module):
    r"""One N2S encoder layer: Synthesis Attention, then a feed-forward block, each
    with a residual connection and :func:`instance_norm`.

    ``A_node[h] = (h W_Q^h)(h W_K^h)^T`` (unscaled, as in N2S), ``scores[h] =
    MLP([A_node ; A_pos])`` with ``MLP: 2H -> 2H -> H`` (ReLU), ``softmax_j``, heads
    ``@ V``, output projection.

    Args:
        dim: model width. heads: ``H``. ff_hidden: feed-forward width.
        rotary: RoPE applied to the node queries and keys (``None``: none).

    Shapes: ``h [B, M, dim]``, ``pos_scores [B, H, M, M]`` or ``None`` (zeros),
    ``position [B, M]`` (RoPE) -> ``[B, M, dim]``.
    """

    def __init__(self, dim: int, heads: int = 4, ff_hidden: int = 128,
                 rotary: RotaryPE | None = None) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim={dim} must be divisible by heads={heads}")
        self.dim, self.heads = dim, heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.mix_node = nn.Linear(heads, 2 * heads)           # first MLP layer, node half
        self.mix_pos = nn.Linear(heads, 2 * heads, bias=False)  # ... positional half
        self.mix_out = nn.Linear(2 * heads, heads)
        self.ff = nn.Sequential(nn.Linear(dim, ff_hidden, bias=False), InplaceReLU(),
                                nn.Linear(ff_hidden, dim, bias=False))
        self.rotary = rotary
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for mod in (self.qkv, self.out, self.mix_out, self.ff[0], self.ff[2]):
            mod.reset_parameters()
        # The two halves of one Linear(2H, 2H): PyTorch's bound for a fan-in of 2H.
        bound = 1.0 / (2 * self.heads) ** 0.5
        for w in (self.mix_node.weight, self.mix_node.bias, self.mix_pos.weight):
            nn.init.uniform_(w, -bound, bound)

    def scores(self, h: Tensor, pos_scores: Tensor | None, position: Tensor | None
               ) -> tuple[Tensor, Tensor]:
        """``(attention [B, H, M, M], values [B, H, M, dim / H])``."""
        b, m, _ = h.shape
        q, k, v = self.qkv(h).view(b, m, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        if self.rotary is not None:
            if position is None:
                raise ValueError("RoPE in Synthesis Attention needs the tour positions")
            q, k = self.rotary(q, k, position)
        if pos_scores is not None and pos_scores.shape != (b, self.heads, m, m):
            raise ValueError(f"positional scores of shape {tuple(pos_scores.shape)}; "
                             f"expected {(b, self.heads, m, m)}")
        if needs_grad(self, h, pos_scores):
            # training: both passes in cache-sized slices (synthesis_scores.py)
            s = SynthesisScores.apply(q, k, pos_scores, self.mix_node.weight,
                                      self.mix_node.bias, self.mix_pos.weight,
                                      self.mix_out.weight, self.mix_out.bias)
            return torch.softmax(s, -1), v
        a_node = (q @ k.transpose(-1, -2)).view(b, self.heads, m * m)
        if pos_scores is not None:
            pos_scores = pos_scores.reshape(b, self.heads, m * m).to(a_node.dtype)
        if torch.compiler.is_compiling():
            s = self._pair_mlp_elementwise(a_node, pos_scores)
            return torch.softmax(s.view(b, self.heads, m, m), -1), v
        # Channels-first MLP over the 2H score channels of every pair, as batched
        # products with the weights broadcast over the batch (``matmul`` of a 2-D
        # weight with a 3-D tensor would copy the pair tensor into rows first).
        if pos_scores is None:
            z = self._mix(self.mix_node.weight, a_node, self.mix_node.bias)
        else:
            # The positional half with the bias, then the node half accumulated in
            # place (baddbmm_): no extra pass over the [B, 2H, M^2] pair tensor.
            z = self._mix(self.mix_pos.weight, pos_scores, self.mix_node.bias)
            z.baddbmm_(self._batched(self.mix_node.weight, a_node), a_node)
        s = self._mix(self.mix_out.weight, z.relu_(), self.mix_out.bias)
        return torch.softmax(s.view(b, self.heads, m, m), -1), v

    def _pair_mlp_elementwise(self, a_node: Tensor, pos: Tensor | None) -> Tensor:
        """The pair MLP (``[B, H, P]`` node and positional channels -> ``[B, H, P]``)
        as broadcasts and sums over the channels, for ``torch.compile``: Inductor
        computes it in one loop over the pairs that never stores the ``[B, 2H, P]``
        hidden channels. Its products have 4 or 8 inner channels, where a ``bmm`` is
        memory-bound, and a ``baddbmm``'s broadcast bias would be copied to full size
        first. Eagerly this form would materialise ``[B, 2H, H, P]``."""
        def affine(weight: Tensor, x: Tensor) -> Tensor:      # [C', C] over [B, C, P]
            return (weight.to(x.dtype)[None, :, :, None] * x[:, None]).sum(2)

        bias = self.mix_node.bias.to(a_node.dtype).view(1, -1, 1)
        z = affine(self.mix_node.weight, a_node) + bias
        if pos is not None:
            z = z + affine(self.mix_pos.weight, pos)
        return (affine(self.mix_out.weight, z.relu())
                + self.mix_out.bias.to(a_node.dtype).view(1, -1, 1))

    @staticmethod
    def _batched(weight: Tensor, x: Tensor) -> Tensor:
        """``weight [C', C]`` in ``x``'s dtype, broadcast over ``x``'s batch (no copy)."""
        return weight.to(x.dtype).expand(x.size(0), -1, -1)

    @classmethod
    def _mix(cls, weight: Tensor, x: Tensor, bias: Tensor) -> Tensor:
        """An affine map over the channels of ``x [B, C, P]``: ``[B, C', P]``."""
        return torch.baddbmm(bias.to(x.dtype).view(1, -1, 1), cls._batched(weight, x), x)

    def forward(self, h: Tensor, pos_scores: Tensor | None = None,
                position: Tensor | None = None) -> Tensor:
        b, m, _ = h.shape
        attn, v = self.scores(h, pos_scores, position)
        heads = (attn @ v).transpose(1, 2).reshape(b, m, self.dim)
        h = instance_norm(h + self.out(heads))
        return instance_norm(h + self.ff(h))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, heads={self.heads}, "
                f"rotary={self.rotary is not None})")
