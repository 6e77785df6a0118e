"""What the Spearman probes (paper Tab. 3) compare for each of the 14 encodings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Data

from pyg_routing import encodings
from pyg_routing.functional import index_pe, pair_pe
from pyg_routing.probes.encoder_kinds import node, pairwise


def probe_representations(dim: int = 64, num_heads: int = 8,
                          seed: int = 0) -> dict[str, Callable[[Data], Tensor]]:
    """What the Spearman probes (paper Tab. 3) compare for each encoding, by title.

    * Fixed node encodings: their codes ``[N, D]`` (L2 distances between codes).
    * Learnable tables with no structure before training (APE, RPE): their values at
      a seeded random initialization, so they carry no signal, as in the paper.
    * RoPE: the rotation each node applies, as ``[cos(i ω_k), sin(i ω_k)]``; the
      distance between two rotations is what changes a query–key logit.
    * ALiBi: its fixed penalty ``|i - j|`` (head-averaged slopes) as a dissimilarity.
    * SPD: the hop distance its learnable bias is indexed by (unreachable: the
      largest distance + 1), as a dissimilarity ``[B, N, N]``.
    """
    gen = torch.Generator().manual_seed(seed)

    def fixed(name: str, **kw: Any) -> Callable[[Data], Tensor]:
        transform = encodings.node_transform(name, dim=dim, attr_name="_probe_pe", **kw)
        return node(lambda b: transform(b)._probe_pe)

    ape_table = torch.randn(4096, dim, generator=gen)
    rpe_table = torch.randn(2 * 16 + 2, generator=gen)

    def ape(b: Data) -> Tensor:
        return ape_table[b.route_pos.clamp(min=0)]

    def rope(b: Data) -> Tensor:
        angle = b.route_pos.clamp(min=0).double().unsqueeze(-1) * index_pe.sin_frequencies(dim)
        return torch.cat([angle.cos(), angle.sin()], dim=-1)

    def offsets(b: Data) -> tuple[Tensor, Tensor]:
        route_pos, _, mask = index_pe.dense_route_inputs(b)
        return pair_pe.position_offsets(route_pos), mask

    def rpe(b: Data) -> Tensor:
        delta, _ = offsets(b)
        return -rpe_table[delta.clamp(-16, 16) + 16]

    slopes = pair_pe.alibi_slopes(num_heads).mean()

    def alibi(b: Data) -> Tensor:
        delta, _ = offsets(b)
        return slopes * delta.abs().double()

    def spd(b: Data) -> Tensor:
        route_pos, route_id, mask = index_pe.dense_route_inputs(b)
        opened = b.open_routes if "open_routes" in b else None      # paths, not cycles
        hops = pair_pe.hop_distance(route_pos, route_id, mask, open_routes=opened).double()
        return torch.where(hops < 0, hops.max() + 1, hops)

    return {
        "APE": node(ape), "SIN": fixed("sin"), "RoPE": node(rope), "RPE": pairwise(rpe),
        "ALiBi": pairwise(alibi), "Laplacian PE": fixed("lap", random_sign=False),
        "RWSE": fixed("rwse"), "SPD": pairwise(spd), "DACT CPE": fixed("dact_cpe"),
        "CycleFormer PE": fixed("cycleformer"), "IPE": fixed("ipe"), "XPE": fixed("xpe"),
        "IPE + XPE": fixed("ipexpe"),
    }
