"""Spearman probes of positional encodings against the desiderata D1-D3 (paper Tab. 3).

The paper correlates embedding-space pairwise distances ``||PE(v_i) - PE(v_j)||_2``
with one structural target per desideratum, using ``10^6`` node pairs over 1,000
HGS solutions of CVRP-100. :data:`DEFINITION` states our fixed reading.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Batch, Data

from pyg_routing.errors import RoutingError, UnsupportedProblemError
from pyg_routing.probes.anisometry import as_batch, node_graph, node_route_id
from pyg_routing.probes.definitions import SPEARMAN

# Encoder and its tags are defined in encoder_kinds, below representations (which this
# module imports for paper_encodings); re-exported here, where users import them from.
from pyg_routing.probes.encoder_kinds import Encoder, node, pairwise, pe_kind
from pyg_routing.probes.representations import probe_representations

DEFINITION = SPEARMAN

__doc__ = f"{__doc__}\n{DEFINITION}\n"


class ProbePairs(NamedTuple):
    """Sampled node pairs (global node ids of the probed ``Batch``), ``[2, P]`` each."""

    same: Tensor
    cross: Tensor


def _sample_within(groups: Tensor, outer: Tensor | None, num: int,
                   gen: torch.Generator) -> Tensor:
    """``[2, num]`` pairs ``(i, j)`` of nodes with ``groups >= 0``: ``i`` uniform over
    the nodes that have a partner, ``j`` uniform over the other nodes of ``i``'s
    group (``outer is None``), or over the nodes of ``i``'s outer group outside
    its own group (groups must nest in outer groups). ``[2, 0]`` if no node has
    a partner."""
    nodes = torch.nonzero(groups >= 0).flatten()
    if nodes.numel() == 0:
        return torch.zeros(2, 0, dtype=torch.long)
    g = groups.clamp(min=0)
    num_groups = int(groups.max()) + 1
    key = groups[nodes] if outer is None else outer[nodes] * num_groups + groups[nodes]
    nodes = nodes[torch.argsort(key, stable=True)]          # groups are contiguous
    arange = torch.arange(nodes.numel())
    size_g = torch.bincount(groups[nodes], minlength=num_groups)
    start_g = torch.full((num_groups,), nodes.numel(), dtype=torch.long)
    start_g = start_g.scatter_reduce(0, groups[nodes], arange, "amin")
    if outer is None:
        slot = torch.zeros_like(groups)
        slot[nodes] = arange
        lo, span = start_g[g], size_g[g] - 1
        skip_from, skip_len = slot, torch.ones_like(groups)
    else:
        num_outer = int(outer.max()) + 1
        size_o = torch.bincount(outer[nodes], minlength=num_outer)
        start_o = torch.cumsum(size_o, 0) - size_o           # outer groups sorted first
        lo, span = start_o[outer], size_o[outer] - size_g[g]
        skip_from, skip_len = start_g[g], size_g[g]
    cand = torch.nonzero((groups >= 0) & (span > 0)).flatten()
    if cand.numel() == 0:
        return torch.zeros(2, 0, dtype=torch.long)
    i = cand[torch.randint(cand.numel(), (num,), generator=gen)]
    t = (torch.rand(num, generator=gen, dtype=torch.float64) * span[i]).long()
    t = lo[i] + torch.minimum(t, span[i] - 1)
    t = torch.where(t >= skip_from[i], t + skip_len[i], t)
    return torch.stack([i, nodes[t]])


def sample_pairs(data: Data, num_pairs: int, seed: int = 0) -> ProbePairs:
    """Seeded same-route and cross-route customer pairs (see :data:`DEFINITION`)."""
    gen = torch.Generator().manual_seed(int(seed))
    rid = node_route_id(data).cpu()
    graph = node_graph(data).cpu()
    return ProbePairs(_sample_within(rid, None, num_pairs, gen),
                      _sample_within(rid, graph, num_pairs, gen))


def spearman(x: Tensor | np.ndarray, y: Tensor | np.ndarray) -> float | None:
    """Spearman rank correlation (average ranks for ties); ``None`` if undefined
    (a constant input)."""
    from scipy.stats import spearmanr  # lazy: keeps `pyg-routing` start-up fast

    a = np.asarray(x.cpu() if isinstance(x, Tensor) else x, dtype=np.float64)
    b = np.asarray(y.cpu() if isinstance(y, Tensor) else y, dtype=np.float64)
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    rho = float(spearmanr(a, b).statistic)
    return None if math.isnan(rho) else rho


def _as_list(data: Data | Batch | Iterable[Data]) -> list[Data]:
    if isinstance(data, Batch):
        return data.to_data_list()
    if isinstance(data, Data):
        return [data]
    return list(data)


def pair_dissimilarity(encoders: Mapping[str, Encoder], data_list: list[Data],
                       pairs: Tensor, batch_size: int = 64) -> dict[str, Tensor | None]:
    """Dissimilarity of every pair (``[2, P]`` global node ids over ``data_list``
    batched in order) under each encoder, calling each on batches of
    ``batch_size`` instances (under ``torch.no_grad()``); ``None`` for an encoder
    that returns ``None`` or refuses the solutions (:class:`UnsupportedProblemError`:
    the graph encodings on several depots)."""
    sizes = torch.tensor([d.num_nodes for d in data_list])
    ptr = torch.cat([sizes.new_zeros(1), torch.cumsum(sizes, 0)])
    graph_of = torch.repeat_interleave(torch.arange(len(data_list)), sizes)
    chunk = graph_of[pairs[0]] // batch_size
    out: dict[str, Tensor | None] = {name: torch.empty(pairs.size(1), dtype=torch.float64)
                                     for name in encoders}
    for c in torch.unique(chunk).tolist():
        lo = c * batch_size
        hi = min(lo + batch_size, len(data_list))
        batch = Batch.from_data_list(data_list[lo:hi])
        sel = torch.nonzero(chunk == c).flatten()
        i, j = pairs[0, sel] - ptr[lo], pairs[1, sel] - ptr[lo]
        n = batch.num_nodes
        for name, fn in encoders.items():
            if out[name] is None:
                continue
            try:
                with torch.no_grad():
                    pe = fn(batch)
            except UnsupportedProblemError:     # e.g. a graph encoding on several depots
                pe = None
            if pe is None:
                out[name] = None
                continue
            pe = pe.detach().cpu()
            if pe.dim() == 1:
                pe = pe.unsqueeze(-1)
            graphs = hi - lo
            if pe.dim() == 3 and pe.size(0) == graphs and pe.size(1) == pe.size(2) \
                    and pe.size(1) >= int(sizes[lo:hi].max()):
                # Dense per-graph pairwise [B, n_max, n_max] (padded).
                g = graph_of[pairs[0, sel]] - lo
                li, lj = i - (ptr[lo + g] - ptr[lo]), j - (ptr[lo + g] - ptr[lo])
                out[name][sel] = pe[g, li, lj].double()  # type: ignore[index]
                continue
            kind = pe_kind(fn) or ("pairwise" if pe.shape == (n, n) else "node")
            if pe.dim() != 2 or pe.size(0) != n or (kind == "pairwise" and pe.size(1) != n):
                raise RoutingError(f"encoding {name!r} returned shape {tuple(pe.shape)} for a "
                                   f"batch of {n} nodes; expected [N, D], [N, N] or "
                                   f"[B, n_max, n_max]")
            if kind == "pairwise":
                dist = pe[i, j].double()
            else:
                dist = (pe[i].double() - pe[j].double()).norm(dim=-1)
            out[name][sel] = dist  # type: ignore[index]
    return out


def spearman_probe(data: Data | Batch | Iterable[Data], encoders: Mapping[str, Encoder],
                   num_pairs: int = 10**6, seed: int = 0,
                   batch_size: int = 64) -> dict[str, dict[str, float | None]]:
    """D1, D2, D3 (and D3_ratio) of every encoding (definitions in :data:`DEFINITION`).

    Args:
        data: solutions (a ``Batch``, a list, or a ``RoutingDataset``).
        encoders: ``name -> callable(batch) -> [N, D], [N, N] or [B, n, n]`` (see
            :data:`Encoder`; :func:`pairwise` tags an ambiguous square output).
        num_pairs: same-route pairs (and as many cross-route pairs).
        seed: seed of the pair sampler (the same pairs for every encoding).
        batch_size: instances per call of an encoder.

    Returns:
        ``{name: {"D1", "D2", "D3", "D3_ratio"}}`` (floats, or ``None`` when undefined).
    """
    data_list = _as_list(data)
    big = as_batch(data_list)
    pairs = sample_pairs(big, num_pairs, seed)
    if pairs.same.size(1) == 0:
        raise RoutingError("no node pairs to probe: no route has >= 2 customers")
    cum = big.cum_dist.detach().cpu().double()
    length = big.route_length.detach().cpu().double()
    gap = (cum[pairs.same[0]] - cum[pairs.same[1]]).abs()
    d1 = gap
    d2 = torch.minimum(gap, length[pairs.same[0]] - gap)
    both = torch.cat([pairs.same, pairs.cross], dim=1)
    d3 = torch.cat([torch.zeros(pairs.same.size(1)), torch.ones(pairs.cross.size(1))])
    dist = pair_dissimilarity(encoders, data_list, both, batch_size)
    p = pairs.same.size(1)
    result: dict[str, dict[str, float | None]] = {}
    for name, dis in dist.items():
        if dis is None:
            result[name] = {"D1": None, "D2": None, "D3": None, "D3_ratio": None}
            continue
        same_mean = float(dis[:p].mean())
        has_cross = dis.numel() > p
        result[name] = {
            "D1": spearman(dis[:p], d1), "D2": spearman(dis[:p], d2),
            "D3": spearman(dis, d3) if has_cross else None,
            "D3_ratio": float(dis[p:].mean()) / same_mean
            if has_cross and same_mean > 0 else None,
        }
    return result


# ---------------------------------------------------------------------- encodings
def _route_context(data: Data) -> tuple[str, Tensor | None]:
    """IPE's ``direction="auto"`` for a batch of one problem (aware when its problem,
    an asymmetric matrix or open routes tell a route from its reversal) and the
    ``[N]`` nodes of open-route instances (its half-period phase), from one
    :class:`EncodingInputs`."""
    from pyg_routing.transforms import EncodingInputs

    inputs = EncodingInputs.from_data(data)
    aware = "aware" if bool(inputs.direction_sensitive.any()) else "invariant"
    return aware, inputs.node_open_routes()


def open_route_variants(dim: int = 64) -> dict[str, Encoder]:
    """IPE with the closed phase ``2π d_i / d_L`` on open routes, beside the library's
    half-period phase (what ``probe spearman --open-routes`` adds; on closed routes
    both are IPE)."""
    from pyg_routing.functional.route_pe import ipe

    def closed(b: Data) -> Tensor:
        return ipe(b.cum_dist, b.route_length, dim, _route_context(b)[0],
                   route_pos=b.route_pos)

    def half(b: Data) -> Tensor:
        direction, opened = _route_context(b)
        return ipe(b.cum_dist, b.route_length, dim, direction, route_pos=b.route_pos,
                   open_route=opened)

    return {"IPE (open: half period)": node(half), "IPE (open: closed phase)": node(closed)}


def depot_reference_variants(dim: int = 64, num_bands: int = 4) -> dict[str, Encoder]:
    """XPE and IPE + XPE with each reference point of
    :mod:`~pyg_routing.functional.depot_reference` (what ``probe spearman`` adds on
    multi-depot instances; with one depot the three coincide)."""
    from pyg_routing.options import XPE_REFERENCES
    from pyg_routing.transforms import IPEXPE, XPE
    from pyg_routing.transforms._base import EncodingInputs

    label = {"first": "node 0", "route": "route's depot", "route_code": "route's depot + code"}
    out: dict[str, Encoder] = {}
    for ref in XPE_REFERENCES:
        xpe_t, both = XPE(num_bands, reference=ref), IPEXPE(dim, num_bands, reference=ref)
        out[f"XPE ({label[ref]})"] = node(
            lambda b, t=xpe_t: t.code(EncodingInputs.from_data(b)))
        out[f"IPE + XPE ({label[ref]})"] = node(
            lambda b, t=both: t.code(EncodingInputs.from_data(b)))
    return out


def builtin_encodings(dim: int = 64, num_bands: int = 4) -> dict[str, Encoder]:
    """Small reference set built on :mod:`pyg_routing.functional.route_pe`:
    IPE (the library default: harmonic frequencies ``k + 1`` with amplitudes
    ``1/k^2``; reversal-invariant for symmetric problems), IPE with the paper's flat
    amplitudes and with its printed geometric frequencies, XPE, IPE + XPE with
    either frequencies, and two index baselines on the within-route position (the
    SIN sinusoid, the raw index).

    With flat amplitudes, ``||IPE(x) - IPE(y)||`` is nearly constant once the phases
    differ by more than ~``2 pi / dim`` (a Dirichlet-kernel effect), so the L2 probes
    see almost no D1/D2 signal in it; the decaying default follows the phase gap."""
    from pyg_routing.functional.index_pe import sinusoidal_pe
    from pyg_routing.functional.route_pe import ipe, ipexpe, xpe

    def _ipe(b: Data, frequencies: str = "harmonic", amplitude: str = "inverse_square"
             ) -> Tensor:
        direction, opened = _route_context(b)
        return ipe(b.cum_dist, b.route_length, dim, direction, frequencies=frequencies,
                   route_pos=b.route_pos, amplitude=amplitude, open_route=opened)

    def _ipexpe(b: Data, frequencies: str) -> Tensor:
        direction, opened = _route_context(b)
        return ipexpe(b.cum_dist, b.route_length, b.depot_angle, dim, num_bands, direction,
                      frequencies=frequencies, route_pos=b.route_pos,
                      depot_mask=b.depot_mask, open_route=opened)

    return {
        "IPE": node(_ipe),
        "IPE (flat amplitudes)": node(lambda b: _ipe(b, amplitude="flat")),
        "IPE (geometric)": node(lambda b: _ipe(b, "geometric")),
        "XPE": node(lambda b: xpe(b.depot_angle, num_bands, depot_mask=b.depot_mask)),
        "IPE + XPE": node(lambda b: _ipexpe(b, "harmonic")),
        "IPE + XPE (geometric)": node(lambda b: _ipexpe(b, "geometric")),
        "SIN (route index)": node(lambda b: sinusoidal_pe(b.route_pos.clamp(min=0), dim)),
        "Index": node(lambda b: b.route_pos.clamp(min=0).double().unsqueeze(-1)),
    }


def paper_encodings(dim: int = 64) -> dict[str, Encoder]:
    """The 14 encodings of Tab. 3
    (:func:`pyg_routing.probes.representations.probe_representations`)."""
    return dict(probe_representations(dim=dim))


__all__ = ["DEFINITION", "Encoder", "ProbePairs", "builtin_encodings",
           "depot_reference_variants", "node", "pairwise",
           "pair_dissimilarity", "paper_encodings", "sample_pairs", "spearman",
           "spearman_probe"]
