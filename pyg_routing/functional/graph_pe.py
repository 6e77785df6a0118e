r"""Laplacian PE of route graphs (paper App. E), batched.

It lives on the *route graph* (:mod:`pyg_routing.functional._route_graph`): cycles
through the depot, pendant edges (single-customer routes) and isolated unvisited
customers. Instead of per-graph linear algebra, it uses that structure in closed
form, vectorized over all graphs, routes and nodes at once (no Python loops).
RWSE, the other graph encoding, is in :mod:`pyg_routing.functional.random_walk_pe`.

**Laplacian PE** (``L = D - A``). Cutting the depot out of a cycle route of ``m``
customers leaves a path with Dirichlet modes ``sin(π p j / M)`` (``M = m + 1``),
``μ = 2 - 2 cos(π p / M)``; a pendant leaves one node with ``μ = 1``. Every
eigenvector of ``L`` is one of:

* an *even* mode (``p`` even): it vanishes at both depot neighbours, so it is an
  eigenvector of ``L`` as it stands (eigenvalue ``μ``);
* a combination of *odd* modes with the same ``μ`` on several routes whose
  depot-neighbour sums cancel (``c`` equal odd poles give ``c - 1`` of them);
* a *secular* vector, non-zero at the depot: ``λ`` solves
  ``F(λ) = d_0 - λ - Σ_odd w / (μ - λ) = 0`` (one root between consecutive
  distinct odd poles, ``λ = 0`` below the first, one above the last), and on each
  cycle it is the closed-form solution of the path recurrence.

Roots come from a rational-model iteration on ``F`` (4-5 ``[A, P]`` passes), the
vectors from one table gather and a ``sin`` per node: no eigensolver at all.

**Open routes** (``open_routes``, :attr:`RouteGraph.open_graph`): an open route of
``m`` customers is the path ``0 - v_1 - ... - v_m``, a cycle of ``2m`` customers
folded at its middle. Cutting the depot out leaves a path with Dirichlet at the depot
and a free end, whose modes ``sin(θ j)``, ``θ = π p / M`` with ``M = 2m + 1`` and odd
``p = 2q - 1``, are the symmetric modes of that cycle: the customer at position ``j``
carries ``p = 2j - 1``. Only ``v_1`` touches the depot, so every mode is odd
(``σ = 2 sin θ / sqrt(M)``, half the cycle's weight, never 0) and there are no even
modes; a secular vector is the cycle's with ``c = M / 2 = m + 1/2``. A single-customer
open route is the same pendant as a closed one. Graphs not marked open take exactly
the closed path (bit for bit).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from pyg_routing.data.route_quantities import _take
from pyg_routing.functional._laplacian_modes import _Modes
from pyg_routing.functional._route_graph import RouteGraph, as_route_graph

__all__ = ["laplacian_pe"]


def _work_dtype(device: torch.device) -> torch.dtype:
    # MPS has no float64; everywhere else the secular equation wants it.
    return torch.float32 if device.type == "mps" else torch.float64


def _dense_rows(mask: Tensor, rg: RouteGraph) -> tuple[Tensor, int]:
    """Slot of each masked node in a ``[B, W]`` per-graph layout (``B * W`` = trash),
    and ``W``. Needs nodes grouped by graph (PyG batches are)."""
    b = rg.num_graphs
    counts = torch.zeros(b, dtype=torch.long, device=mask.device).index_add_(
        0, rg.batch, mask.long())
    first = torch.cumsum(counts, 0) - counts
    rank = torch.cumsum(mask.long(), 0) - 1 - _take(first, rg.batch)
    width = int(counts.max()) if b else 0
    slot = torch.where(mask, rg.batch * width + rank, b * width)
    return slot, width


def _scatter_rows(slot: Tensor, values: Tensor, b: int, width: int, fill: float) -> Tensor:
    out = values.new_full((b * width + 1,), fill).index_copy_(0, slot, values)
    return out[:-1].view(b, width)


def _smallest(values: Tensor, nodes: Tensor, count: int) -> tuple[Tensor, Tensor]:
    """The ``count`` smallest entries per row (stable), padded with ``inf`` / ``-1``."""
    vals, order = torch.sort(values, dim=1, stable=True)
    vals, idx = vals[:, :count], torch.gather(nodes, 1, order[:, :count])
    short = count - vals.size(1)
    if short > 0:
        vals = torch.nn.functional.pad(vals, (0, short), value=math.inf)
        idx = torch.nn.functional.pad(idx, (0, short), value=-1)
    return vals, idx


def _solve_secular(lo: Tensor, hi: Tensor, mu: Tensor, w: Tensor, d0: Tensor,
                   max_iter: int = 60) -> Tensor:
    """The root of ``F(λ) = d0 - λ - Σ_P w / (μ - λ)`` in each bracket ``(lo, hi)``.

    ``lo, hi, d0 [A]``, poles ``mu, w [A, P]`` (padding ``mu = inf``, ``w = 0``);
    ``lo`` is a pole and no pole lies inside the bracket. Plain Newton crawls near
    the poles, so each step solves the two-pole rational model (Li's "middle way"
    for secular equations): ``F ≈ c + b_1 / (λ - lo) - b_2 / (hi - λ)``, fitted to
    ``F`` and ``F'`` at the iterate (poles left of it in ``b_1``, poles right of
    it and the ``-λ`` term in ``b_2``). It stays inside the bracket and converges
    in a handful of steps; a bisection guards against rounding trouble.
    """
    tol = 8 * torch.finfo(lo.dtype).eps
    x = 0.5 * (lo + hi)
    # Poles sit at or below lo, or at or above hi (up to the last bit).
    left = (mu < x.unsqueeze(1)).to(mu.dtype)
    width = hi - lo
    for it in range(max_iter):
        inv = torch.sub(mu, x.unsqueeze(1)).reciprocal_()
        r = w * inv
        q = inv.mul_(r)                                 # w / (μ - x)^2
        q_all = q.sum(1)
        q_left = q.mul_(left).sum(1)
        f = d0 - x - r.sum(1)
        b1 = (x - lo) ** 2 * q_left                     # -Ψ'(x) (x - lo)^2
        b2 = (hi - x) ** 2 * (q_all - q_left + 1)       # (Φ'(x) + 1) (hi - x)^2
        c = f - b1 / (x - lo) + b2 / (hi - x)
        bq = b1 + b2 - c * width
        delta = 2 * b1 * width / (bq + torch.sqrt((bq * bq + 4 * c * b1 * width).clamp(min=0)))
        nxt = lo + delta
        nxt = torch.where((nxt > lo) & (nxt < hi), nxt, torch.where(f > 0, 0.5 * (x + hi),
                                                                      0.5 * (lo + x)))
        done = ((nxt - x).abs() <= tol * x) | (f == 0)
        x = nxt
        if it >= 3 and bool(done.all()):       # typically 4-5 steps in float64
            break
    return x


def _robust_secular(rg: RouteGraph, md: _Modes, lam: Tensor, sign: Tensor) -> Tensor:
    """Normalized secular eigenvectors ``[N, k]`` for any ``λ [B, k]``, exact at and
    beyond ``λ = 4`` (where ``cos(c θ)`` of an odd cycle vanishes).

    With ``λ = 4 - 4 sin²(ε/2)`` (``λ <= 4``; ``cosh``/``sinh`` and ``4 + 4 sinh²``
    above), ``y_j = (-1)^j C((j - c) ε) / C(c ε)`` for even ``M`` and
    ``(-1)^{j+1} S((j - c) ε) / S(c ε)`` for odd ``M``, written without overflow
    and without 0/0 at ``ε = 0``. Open legs are the odd case ``M = 2m + 1``, ``c = M / 2``
    (the same recurrence from the depot, ``y_m = y_{m+1}`` at the free end).
    """
    lam_n = _take(lam, rg.batch)                                                # [N, k]
    big_m = md.big_m.unsqueeze(1)
    j = rg.route_pos.clamp(min=0).unsqueeze(1)
    c = 0.5 * big_m.to(lam.dtype)
    a = j.to(lam.dtype) - c
    sgn = 1 - 2 * (j & 1).to(lam.dtype)                                         # (-1)^j
    odd_m = (big_m & 1) == 1
    s = 4 - lam_n
    eps = (2 * torch.asin(torch.sqrt(s.clamp(0, 4)) / 2)).clamp(min=1e-30)
    y = torch.where(odd_m, -sgn * torch.sin(a * eps) / torch.sin(c * eps),
                    sgn * torch.cos(a * eps) / torch.cos(c * eps))
    t = 2 * torch.asinh(torch.sqrt((-s).clamp(min=0)) / 2).clamp(min=1e-30)
    ab, ct = a.abs() * t, c * t
    damp = torch.exp(ab - ct)
    hyp = torch.where(odd_m, -sgn * torch.sign(a) * damp * torch.expm1(-2 * ab)
                      / torch.expm1(-2 * ct),
                      sgn * damp * (1 + torch.exp(-2 * ab)) / (1 + torch.exp(-2 * ct)))
    y = torch.where(s < 0, hyp, y)
    y = torch.where(md.cycle.unsqueeze(1), y, 0.0)
    y = torch.where(md.pend.unsqueeze(1), 1 / (md.mu.unsqueeze(1) - lam_n), y)
    y = torch.where((rg.route_pos == 0).unsqueeze(1), 1.0, y)
    norm2 = torch.zeros_like(lam).index_add_(0, rg.batch, y * y)
    return y * _take(torch.rsqrt(norm2) * sign, rg.batch)


def laplacian_pe(graph: Tensor | RouteGraph, num_nodes: int | None = None,
                 batch: Tensor | None = None, *, k: int = 8, ptr: Tensor | None = None,
                 depot_mask: Tensor | None = None, random_sign: bool = False,
                 generator: torch.Generator | None = None,
                 dtype: torch.dtype | None = None,
                 open_routes: Tensor | bool | None = None) -> Tensor:
    r"""Laplacian eigenvector PE of route graphs: the ``k`` smallest non-trivial
    eigenvectors of ``L = D - A`` of each graph, ``[N, k]``.

    Args:
        graph: ``[2, E]`` route arcs (``edge_index`` of a ``RoutingData`` /
            ``Batch``), or a :class:`RouteGraph` (then the next four are ignored).
        num_nodes, batch, ptr, depot_mask: see :func:`route_graph`; node 0 of
            each graph is its depot.
        k: eigenvectors per graph. Graphs with fewer than ``k + 1`` nodes are
            zero-padded.
        random_sign: multiply each eigenvector of each graph by a random ``±1``
            (sign-ambiguity augmentation; off by default).
        generator: random generator for the signs.
        dtype: output dtype (default: ``torch.get_default_dtype()``).
        open_routes: ``[B]`` bool or one bool, graphs whose routes are open (each route
            the path ``0 - v_1 - ... - v_m``, its closing edge absent); default: what
            a given :class:`RouteGraph` says (``open_graph``), else all closed. Open and
            closed graphs may be mixed in a batch; closed ones are unaffected.

    Eigenvalues are sorted ascending; the one skipped is the constant vector of
    the depot's component (``λ = 0``). Unvisited (isolated) customers add more
    zero eigenvalues, returned first as their indicator vectors, ordered by node.
    Degenerate eigenspaces come in some orthonormal basis (e.g. routes of equal
    length), so compare eigenvalues and subspaces, not vectors, across methods.
    """
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"laplacian_pe needs k >= 1 eigenvectors, got k={k!r}")
    rg = as_route_graph(graph, num_nodes, batch, ptr, depot_mask)
    if open_routes is not None:   # else keep the RouteGraph's own open_graph
        rg = rg.with_open(open_routes)
    wd = _work_dtype(rg.batch.device)
    modes = _Modes.of(rg, wd)
    kind, lam, step, coef = _spectrum(rg, modes, k)
    sign = torch.ones(rg.num_graphs, k, dtype=wd, device=rg.batch.device)
    if random_sign:   # drawn on the generator's device (a CPU generator for CUDA data)
        flips = torch.randint(0, 2, (rg.num_graphs, k), generator=generator,
                              device=generator.device if generator is not None else None)
        sign = 1 - 2 * flips.to(rg.batch.device, wd)
    out = _eigenvectors(rg, modes, kind, lam, step, coef, sign)
    return out.to(torch.get_default_dtype() if dtype is None else dtype)


def _spectrum(rg: RouteGraph, md: _Modes, k: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The ``k`` smallest non-trivial eigenpairs of each graph, in closed form.

    Returns ``kind [B, k]`` (0 none, 1 isolated indicator, 2 secular vector,
    3 combination of Dirichlet modes), ``lam [B, k]`` (eigenvalues), ``step [B, k]``
    (``π a / b`` of kind-3 slots: the mode is ``sin(step * j)`` on every route
    involved) and ``coef [B, k, Rmax]`` (kind 3: weight of each route's
    normalized mode).
    """
    device, b = rg.batch.device, rg.num_graphs
    wd = md.mu.dtype
    visited = rg.route_id >= 0
    odd = visited & ((md.num & 1) == 1)             # every open-leg mode is odd
    even = visited & ~odd
    d0 = rg.depot_degree().to(wd)
    node_ids = torch.arange(rg.num_nodes, device=device)
    # All odd poles per graph [B, P] (for F), and the k + 1 smallest odd and k
    # smallest even modes: by interlacing, enough for the k smallest eigenvalues.
    slot_o, w_o = _dense_rows(odd, rg)
    mu_o = _scatter_rows(slot_o, md.mu, b, w_o, math.inf)
    wt_o = _scatter_rows(slot_o, md.sigma * md.sigma, b, w_o, 0.0)
    om, onode = _smallest(mu_o, _scatter_rows(slot_o, node_ids, b, w_o, -1), k + 1)
    slot_e, w_e = _dense_rows(even, rg)
    em, enode = _smallest(_scatter_rows(slot_e, md.mu, b, w_e, math.inf),
                          _scatter_rows(slot_e, node_ids, b, w_e, -1), k)

    def at(values: Tensor, nodes: Tensor) -> Tensor:
        return _take(values, nodes.clamp(min=0).reshape(-1)).view(nodes.shape)

    valid = torch.isfinite(om)                                                  # [B, k + 1]
    # Equal poles are equal fractions p / M (exact integer test; their floats may
    # differ in the last bit, and distinct fractions are far apart).
    oa, ob = at(md.num, onode), at(md.big_m, onode)
    same = valid[:, 1:] & (oa[:, 1:] * ob[:, :-1] == oa[:, :-1] * ob[:, 1:])    # [B, k]
    # In a group of c equal odd poles the first c - 1 entries are combinations that
    # vanish at the depot (λ = the pole); the last one owns the root up to the next.
    root = valid[:, :-1] & ~same
    hi = torch.where(valid[:, 1:], om[:, 1:], (d0 + 3).unsqueeze(1))          # λ_max <= d0 + 2
    lam_o = om[:, :-1].clone()
    todo = torch.nonzero(root.flatten()).flatten()
    of = torch.div(todo, k, rounding_mode="floor")
    lam_o.view(-1).index_copy_(0, todo, _solve_secular(
        _take(om[:, :-1].flatten(), todo), _take(hi.flatten(), todo), _take(mu_o, of),
        _take(wt_o, of), _take(d0, of)))

    # Helmert basis of {α : Σ α_l σ_l = 0} in a group: slot i mixes members gs..i+1.
    sig = at(md.sigma, onode) * valid                                           # σ > 0
    idx = torch.arange(k + 1, device=device)
    start = torch.ones_like(valid)
    start[:, 1:] = ~same
    gs = torch.cummax(torch.where(start, idx, 0), 1).values[:, :-1]             # [B, k]
    cs = torch.cumsum(sig * sig, 1)
    s_in = torch.where(same, cs[:, :-1] - torch.gather(cs - sig * sig, 1, gs), 1.0)
    s_next = torch.where(same, sig[:, 1:], 1.0)
    norm = torch.sqrt(s_in * (s_in + s_next ** 2)) / s_next
    col = idx.view(1, 1, -1)
    helmert = torch.where((col >= gs.unsqueeze(2)) & (col <= idx[:-1].view(1, -1, 1)),
                          sig.unsqueeze(1) / norm.unsqueeze(2), 0.0)
    helmert = torch.where(col == idx[1:].view(1, -1, 1),
                          (-s_in / s_next / norm).unsqueeze(2), helmert)
    helmert = torch.where(same.unsqueeze(2), helmert, 0.0)                      # [B, k, k + 1]

    # Candidates: k odd-derived, then k even modes, each with per-route weights.
    r_max = max(int(rg.route_ptr.diff().max()) if b else 0, 1)
    local = rg.route_id - _take(rg.route_ptr, rg.batch)
    cand_coef = torch.zeros(b, 2 * k, r_max, dtype=wd, device=device)
    cand_coef[:, :k].scatter_add_(2, at(local, onode).clamp(min=0).unsqueeze(1)
                                  .expand(b, k, k + 1), helmert)
    cand_coef[:, k:].scatter_add_(2, at(local, enode).clamp(min=0).unsqueeze(2),
                                  torch.isfinite(em).to(wd).unsqueeze(2))
    cand = torch.cat([torch.where(valid[:, :-1], lam_o, math.inf), em], 1)
    cand_kind = torch.cat([torch.where(same, 3, 2) * valid[:, :-1], 3 * torch.isfinite(em)], 1)
    frac = (torch.cat([oa[:, :-1], at(md.num, enode)], 1).to(wd)
            / torch.cat([ob[:, :-1], at(md.big_m, enode)], 1).to(wd))
    # Sorted, with (near-)ties in candidate order so that rounding noise never
    # permutes a degenerate pair (batches then match single graphs); the isolated
    # customers' zero eigenvalues come first.
    vals, order = torch.sort(cand, dim=1, stable=True)
    gap = (vals[:, 1:] - vals[:, :-1]) > 1e-9 * vals[:, 1:].clamp(1, 1e300)   # inf: new cluster
    cluster = torch.cat([torch.zeros_like(gap[:, :1]), gap], 1).cumsum(1)
    order = torch.gather(order, 1, torch.argsort(cluster * (2 * k) + order, dim=1))[:, :k]
    n_iso = torch.zeros(b, dtype=torch.long, device=device).index_add_(
        0, rg.batch, (rg.route_pos < 0).long())
    slot = torch.arange(k, device=device)
    pick = torch.gather(order, 1, (slot - n_iso.unsqueeze(1)).clamp(min=0, max=k - 1))
    kind = torch.where(slot < n_iso.unsqueeze(1), 1, torch.gather(cand_kind, 1, pick))
    coef = torch.gather(cand_coef, 1, pick.unsqueeze(2).expand(-1, -1, r_max))
    coef = torch.where((kind == 3).unsqueeze(2), coef, 0.0)
    return (kind, torch.gather(cand, 1, pick), math.pi * torch.gather(frac, 1, pick), coef)


def _eigenvectors(rg: RouteGraph, md: _Modes, kind: Tensor, lam: Tensor, step: Tensor,
                  coef: Tensor, sign: Tensor) -> Tensor:
    """Node values ``[N, k]`` of the eigenvectors described by :func:`_spectrum`.

    On every route every eigenvector is a sinusoid in the position ``j``:
    ``amp * sin(ω j + φ)``. Dirichlet combinations: ``ω = π a / b``, ``φ = 0``. A
    secular vector with ``λ = 2 - 2 cos θ``: ``y_j = cos((j - c) θ) / cos(c θ)``,
    ``c = M / 2``, so ``ω = θ``, ``φ = π/2 - c θ``, and its norm is closed-form
    (``Σ_j cos²((j - c) θ) = m / 2 + sin(m θ) / (2 sin θ)``). An open leg is half a
    cycle of ``2m``: ``c = m + 1/2`` and half that cycle's sum. So the ``[N, k]`` work
    is one table gather per node plus ``sin``; the tables are ``[B, Rmax + 1, k]``
    (last row: the depot, ``j = 0``).
    """
    device, b, k = rg.batch.device, rg.num_graphs, kind.size(1)
    wd, r_max = lam.dtype, coef.size(2)
    # Route-level layout [B, Rmax]: size m (0 = no such route).
    rid = torch.arange(rg.route_size.numel(), device=device)
    at_route = rg.route_batch * r_max + rid - _take(rg.route_ptr, rg.route_batch)
    size = torch.zeros(b * r_max, dtype=wd, device=device).index_copy_(
        0, at_route, rg.route_size.to(wd)).view(b, r_max, 1)
    cyc, pend = size >= 2, size == 1
    half_pi = math.pi / 2
    # Secular vectors (kind 2); other slots get a harmless θ.
    sec = kind == 2
    theta = 2 * torch.asin(torch.sqrt(torch.where(sec, lam, 1.0).clamp(0, 4)) / 2)   # [B, k]
    th = theta.unsqueeze(1)
    # An open leg of m reads as the cycle of 2m (the whole graph is open or closed).
    leg = None if rg.open_graph is None else cyc & rg.open_graph.view(b, 1, 1)
    span = size if leg is None else torch.where(leg, 2 * size, size)
    c_th = 0.5 * (span + 1) * th                                                # [B, Rmax, k]
    cos_c = torch.where(cyc, torch.cos(c_th), 1.0)
    sq = 0.5 * span + torch.sin(span * th) / (2 * torch.sin(th))
    if leg is not None:
        sq = torch.where(leg, 0.5 * sq, sq)              # the leg is half of the cycle
    mu_pend = 2 - 2 * math.cos(math.pi / 3)
    npend = pend.sum(1, dtype=wd)
    # (λ is never the pendant pole when there is a pendant, but may be 1 otherwise.)
    pend_val = torch.where(sec & (npend > 0), 1 / (mu_pend - torch.where(sec, lam, 0.0)), 0.0)
    norm2 = 1 + torch.where(cyc, sq / cos_c ** 2, 0.0).sum(1) + npend * pend_val ** 2
    inv = torch.rsqrt(norm2) * sign * sec                                       # [B, k]
    amp_s = torch.where(cyc, 1 / cos_c, torch.where(pend, pend_val.unsqueeze(1), 0.0))
    amp_s = torch.cat([amp_s, torch.ones_like(amp_s[:, :1])], 1) * inv.unsqueeze(1)
    phi_s = torch.cat([torch.where(pend, half_pi - th, half_pi - c_th),
                       torch.full_like(c_th[:, :1], half_pi)], 1)
    # Dirichlet combinations (kind 3): normalized mode sqrt(2/M) sin(ω j); pendant: 1;
    # open leg: (2 / sqrt(2m + 1)) sin(ω j).
    nf = torch.where(pend, 1.0, torch.sqrt(2 / (size + 1)))
    if leg is not None:
        nf = torch.where(leg, 2 * torch.rsqrt(2 * size + 1), nf)
    amp_d = torch.cat([coef.transpose(1, 2) * nf, coef.new_zeros(b, 1, k)], 1) \
        * sign.unsqueeze(1)
    stp = step.unsqueeze(1)
    phi_d = torch.cat([torch.where(pend, half_pi - stp, 0.0).expand(b, r_max, k),
                       coef.new_zeros(b, 1, k)], 1)
    omega = torch.where(sec, theta, step).unsqueeze(1).expand(b, r_max + 1, k)
    table = torch.stack([omega, torch.where(sec.unsqueeze(1), phi_s, phi_d),
                         torch.where(sec.unsqueeze(1), amp_s, amp_d)], 2)    # [B, R+1, 3, k]
    table = torch.cat([table.reshape(-1, 3, k), table.new_zeros(1, 3, k)])
    visited = rg.route_id >= 0
    base = rg.batch * (r_max + 1)
    row = torch.where(visited, base + rg.route_id - _take(rg.route_ptr, rg.batch),
                      torch.where(rg.route_pos == 0, base + r_max, b * (r_max + 1)))
    val = _take(table, row)                                                     # [N, 3, k]
    j = rg.route_pos.clamp(min=0).to(wd).unsqueeze(1)
    # In place: fresh [N, k] float64 buffers cost more than the arithmetic on CPU.
    out = torch.mul(val[:, 0], j).add_(val[:, 1]).sin_().mul_(val[:, 2])
    # Isolated customers: indicator vectors in the first slots.
    iso = torch.nonzero(rg.route_pos < 0).flatten()
    if iso.numel():
        g = _take(rg.batch, iso)
        first = torch.zeros(b, dtype=torch.long, device=device).index_add_(
            0, g, torch.ones_like(g))
        rank = torch.arange(iso.numel(), device=device) - (torch.cumsum(first, 0) - first)[g]
        keep = rank < k
        iso, g, rank = iso[keep], g[keep], rank[keep]
        out[iso, rank] = sign[g, rank]
    # Near λ = 4 (tiny graphs only) 1/cos(cθ) loses accuracy on odd cycles: exact path.
    slow = sec & (lam > 4 - 1e-6)
    if bool(slow.any()):
        out = torch.where(_take(slow, rg.batch), _robust_secular(rg, md, lam, sign), out)
    return out
