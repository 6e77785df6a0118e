"""``NDSDecoder``: NDS's autoregressive removal decoder (Hottung et al. 2025), a
PolyNet-conditioned pointer network that picks ``k`` customers to remove.

For ``B`` instances (one encoder pass each) it runs ``K`` rollouts at once, each
conditioned on its own binary latent ``z`` (PolyNet, Hottung et al. 2025): ``K``
DISTINCT vectors per instance, drawn uniformly without replacement from the ``2^10``
binary vectors (:func:`sample_z`). Step ``t`` of a rollout:

1. ``h = GRU(e_last, h)``, with ``e_last`` the encoder embedding of the previous pick
   (step 0: the learned start token) and ``h`` starting at 0;
2. glimpse: one multi-head attention of ``Wq_last(h)`` over ``Wk, Wv`` of all ``M = N + D``
   nodes, masked like the output, then ``multi_head_combine`` -> ``g``;
3. PolyNet residual: ``c = g + poly_layer_2(ReLU(poly_layer_1([g, z])))``;
4. logits ``10 tanh(c . e_j / sqrt(dim))`` against the RAW encoder outputs ``e_j``,
   ``-inf`` on every depot (row 0 and, with ``D`` depots, rows ``N+1..M-1``: the
   kernel order of :mod:`pyg_routing.envs.deconstruction.depots`) and on the
   customers this rollout already picked;
5. softmax at temperature ``T`` (NDS: 1) and sampling (inverse CDF, the same law as
   NDS's ``multinomial`` at a twentieth of its CPU time).

The pick ORDER is part of the output: NDS's first repair inserts the customers in
that order. Only the ``k`` steps are a Python loop; instances and rollouts are batched.

Precision: the logits are clipped to ``[-10, 10]`` and the softmax runs in float32
(also under autocast), so every allowed customer has a probability of at least
``e^-20 / N`` and exactly-zero probabilities are only the masked ones; NDS's
resampling loop around ``multinomial`` (a guard against sampling a zero-probability
entry in half precision) is therefore not needed.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pyg_routing.data.dense_rows import take_rows
from pyg_routing.functional.chunks import needs_grad
from pyg_routing.models.inplace import inplace_add, inplace_relu
from pyg_routing.models.nds.encoder import merge_heads, split_heads
from pyg_routing.models.nds.tail import pick_rows
from pyg_routing.models.sampling import sample_categorical, uniforms
from pyg_routing.options import NDS_Z_DIM as Z_DIM


def binary_codes(z_dim: int = Z_DIM, device: torch.device | str | None = None,
                 dtype: torch.dtype = torch.float32) -> Tensor:
    """All ``2^z_dim`` binary vectors ``[2^z_dim, z_dim]``, row ``i`` = the bits of
    ``i``, most significant first (NDS's pool order, ``itertools.product``)."""
    idx = torch.arange(2 ** z_dim, device=device)
    return _bits(idx, z_dim).to(dtype)


def _bits(idx: Tensor, z_dim: int) -> Tensor:
    shifts = torch.arange(z_dim - 1, -1, -1, device=idx.device)
    return (idx.unsqueeze(-1) >> shifts) & 1


def sample_z(batch: int, num: int, z_dim: int = Z_DIM,
             generator: torch.Generator | None = None,
             device: torch.device | str | None = None) -> Tensor:
    """``[batch, num, z_dim]`` float binary latents: per instance, ``num`` DISTINCT
    vectors drawn uniformly without replacement from all ``2^z_dim`` (in random order).

    Raises:
        ValueError: ``num`` above ``2^z_dim`` (1024 for NDS's ``z_dim = 10``) or below 1.
    """
    pool = 2 ** z_dim
    if isinstance(num, bool) or not isinstance(num, int) or not 1 <= num <= pool:
        raise ValueError(f"the number of rollouts must be in 1..{pool} (distinct binary "
                         f"latents of z_dim={z_dim}), got {num!r}")
    if generator is not None:
        device = generator.device
    # A uniformly random permutation of the pool per instance, cut at `num`: the same
    # law as NDS's multinomial without replacement over uniform weights.
    keys = torch.rand(batch, pool, generator=generator, device=device)
    idx = keys.argsort(dim=1)[:, :num]
    return _bits(idx, z_dim).float()


def gru_step(cell: nn.GRUCell, gates: Tensor, hidden: Tensor) -> Tensor:
    """``cell(x, hidden)`` from the input gates ``gates = W_ih x + b_ih`` ``[R, 3 dim]``
    (fresh: overwritten), in the order of operations of ATen's CPU ``gru_cell``, so
    the new hidden state equals ``cell``'s bit for bit in float32 (a test keeps it so);
    ``cell`` has biases (NDS's)."""
    hh = torch.addmm(cell.bias_hh, hidden, cell.weight_hh.t())
    i_r, i_z, i_n = gates.chunk(3, 1)
    h_r, h_z, h_n = hh.chunk(3, 1)
    reset = h_r.add_(i_r).sigmoid_()
    update = h_z.add_(i_z).sigmoid_()
    new = i_n.add_(h_n.mul_(reset)).tanh_()
    return (hidden - new).mul_(update).add_(new)


class NDSDecoder(nn.Module):
    r"""NDS's decoder (see the module docstring); parameter names as in NDS.

    Args:
        dim: model width (NDS: 128). heads: glimpse heads (NDS: 8).
        poly_embedding_dim: hidden width of the PolyNet residual (NDS: 256).
        z_dim: latent width (NDS: 10).
        logit_clipping: ``C`` of ``C tanh(.)`` (NDS: 10).
    """

    def __init__(self, dim: int = 128, heads: int = 8, poly_embedding_dim: int = 256,
                 z_dim: int = Z_DIM, logit_clipping: float = 10.0) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} must be a multiple of heads {heads}")
        self.dim, self.heads, self.z_dim = dim, heads, z_dim
        self.logit_clipping = float(logit_clipping)
        self.Wq_last = nn.Linear(dim, dim, bias=False)
        self.Wk = nn.Linear(dim, dim, bias=False)
        self.Wv = nn.Linear(dim, dim, bias=False)
        self.multi_head_combine = nn.Linear(dim, dim)
        self.GRU = nn.GRUCell(dim, dim)
        self.poly_layer_1 = nn.Linear(dim + z_dim, poly_embedding_dim)
        self.poly_layer_2 = nn.Linear(poly_embedding_dim, dim)

    def reset_parameters(self) -> None:
        for mod in self.children():
            mod.reset_parameters()

    def forward(self, enc: Tensor, z: Tensor, start: Tensor, k: int = 15,
                generator: torch.Generator | None = None, selected: Tensor | None = None,
                temperature: float = 1.0, num_depots: int = 1) -> tuple[Tensor, Tensor]:
        """Sample ``k`` removals per rollout, or score the given ones.

        Args:
            enc: ``[B, M, dim]`` encoder outputs (``M = N + D``: depot 0, customers
                ``1..N``, depots ``1..D-1``).
            z: ``[B, K, z_dim]`` latents, one per rollout.
            start: ``[dim]`` the first GRU input (NDS's ``start_last_node``).
            k: picks per rollout (NDS: 15), ``1 <= k <= N``.
            generator: RNG of the sampling (on ``enc``'s device; default: global).
            selected: ``[B, K, k]`` customer ids to SCORE instead of sampling (teacher
                forcing; a repeated id scores ``-inf``).
            temperature: softmax temperature (NDS: 1).
            num_depots: the number of depots ``D`` (NDS: 1); their rows are never
                picked.

        Returns:
            ``selected [B, K, k]`` long customer ids (1..N) in pick order and
            ``log_prob [B, K]`` float32, the sum of the ``k`` steps' log-probabilities.
        """
        b, m, d = enc.shape
        if isinstance(num_depots, bool) or not isinstance(num_depots, int) \
                or not 1 <= num_depots < m:
            raise ValueError(f"num_depots must be an integer in 1..{m - 1} (M = {m} nodes), "
                             f"got {num_depots!r}")
        n = m - num_depots
        if z.dim() != 3 or z.shape[0] != b or z.shape[2] != self.z_dim:
            raise ValueError(f"z must be [B, K, {self.z_dim}] with B = {b}, got "
                             f"{tuple(z.shape)}")
        rollouts = z.shape[1]
        if selected is not None:
            k = selected.shape[-1]
            if selected.shape != (b, rollouts, k):
                raise ValueError(f"selected must be [B, K, k] = {(b, rollouts, k)}, got "
                                 f"{tuple(selected.shape)}")
            if selected.numel() and bool(((selected < 1) | (selected > n)).any()):
                raise ValueError(f"selected holds ids outside the customers 1..{n}")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
            raise ValueError(f"k must be an integer in 1..N = 1..{n}, got {k!r}")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature!r}")

        keys = split_heads(self.Wk(enc), self.heads)                 # [B, H, M, D]
        values = split_heads(self.Wv(enc), self.heads)
        enc_t = enc.transpose(1, 2)                                  # [B, dim, M]
        z = z.to(enc.dtype)
        scale = 1.0 / math.sqrt(d)
        # Additive mask [B, K, M]: the depots always, then every pick of the rollout.
        mask = torch.zeros(b, rollouts, m, device=enc.device)
        mask[:, :, 0] = float("-inf")
        mask[:, :, n + 1:] = float("-inf")              # depots 1..D-1 (none for D = 1)
        last = start.to(enc.dtype).expand(b * rollouts, d)
        hidden = None
        picks, log_prob = [], torch.zeros(b, rollouts, device=enc.device)
        # The search's picks (no gradient): the step's tail in cache-sized slices, in
        # place (:mod:`.tail`), and the mask updated in place; training keeps the
        # log-softmax of every entry, which its gradient needs.
        fused = selected is None and not needs_grad(self, enc, z)
        # On the CPU the search projects every node through the GRU's input layer once
        # ([B, M, 3 dim]) and gathers the picks' rows each step, instead of projecting
        # the 1 600 gathered rows every step: the same values bit for bit (gru_step).
        # (Not under autocast: the cell's own dtype handling is what it then follows.)
        node_gates = (F.linear(enc, self.GRU.weight_ih, self.GRU.bias_ih)
                      if fused and enc.device.type == "cpu"
                      and not torch.is_autocast_enabled("cpu") else None)
        gates = None
        for t in range(k):
            hidden = (self.GRU(last, hidden) if gates is None
                      else gru_step(self.GRU, gates, hidden))
            q = split_heads(self.Wq_last(hidden).view(b, rollouts, d), self.heads)
            glimpse = F.scaled_dot_product_attention(
                q, keys, values, attn_mask=mask.unsqueeze(1).to(q.dtype))
            g = self.multi_head_combine(merge_heads(glimpse))        # [B, K, dim]
            # in place on the layers' fresh outputs (their backward does not read them),
            # out of place on the views autograd records (models/inplace.py)
            poly = inplace_relu(self.poly_layer_1(torch.cat([g, z], -1)))
            ctx = inplace_add(self.poly_layer_2(poly), g)
            if fused:
                scores = torch.matmul(ctx, enc_t).float().view(-1, m)  # fresh: overwritten
                pick, logp = pick_rows(scores, mask.view(-1, m),
                                       uniforms(b * rollouts, generator, enc.device), scale,
                                       self.logit_clipping, temperature)
                pick = pick.view(b, rollouts)
                log_prob += logp.view(b, rollouts)
                mask.scatter_(2, pick.unsqueeze(-1), float("-inf"))
            else:
                scores = torch.matmul(ctx, enc_t).float() * scale        # [B, K, M]
                logits = self.logit_clipping * torch.tanh(scores) + mask
                logp = F.log_softmax(logits / temperature, dim=-1)
                if selected is None:
                    with torch.no_grad():
                        pick = sample_categorical(logp.exp().view(-1, m), generator)
                    pick = pick.view(b, rollouts)
                else:
                    pick = selected[:, :, t].long()
                log_prob = log_prob + logp.gather(2, pick.unsqueeze(-1)).squeeze(-1)
                # Out of place: the previous steps' graphs hold the old mask.
                mask = mask.scatter(2, pick.unsqueeze(-1), float("-inf"))
            picks.append(pick)
            if node_gates is None:
                last = take_rows(enc, pick).view(-1, d)
            else:
                gates = take_rows(node_gates, pick).view(-1, 3 * d)
        return torch.stack(picks, dim=-1), log_prob

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, heads={self.heads}, "
                f"z_dim={self.z_dim}, logit_clipping={self.logit_clipping:g})")
