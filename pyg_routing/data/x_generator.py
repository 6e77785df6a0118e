"""The CVRP instance generator of Uchoa et al. (2017), as NDS uses it.

Uchoa et al. built the CVRPLib X set with a parametric generator that Queiroga
et al. (2022) later released; NDS (Hottung et al., 2025) ports it to Python and
draws its VRPTW and PCVRP instances from it. Everything lives on the integer
grid ``{0, ..., 1000}^2`` and is divided by 1000 at the end. An instance is
described by four choices:

* depot position (``root_pos``): 1 random grid point, 2 centre ``(500, 500)``,
  3 corner ``(0, 0)``;
* customer position (``cust_pos``): 1 random, 2 clustered, 3 half random and
  half clustered. Clusters grow around ``S ~ U{2..6}`` seed customers: a grid
  point ``x`` is accepted with probability ``min(1, w(x) / w_max)``, where
  ``w(x) = sum_s 2^(-d(x, s) / 40)`` and ``w_max`` is the largest ``w`` over the
  seeds themselves. Customers never share a point with each other or the depot.
* demand (``demand_type``): 1 unit, 2 ``U{1..10}``, 3 ``U{5..10}``, 4 ``U{1..100}``,
  5 ``U{50..100}``, 6 ``U{51..100}`` in the lower-left and upper-right quadrants
  and ``U{1..50}`` elsewhere, 7 about 1.5 customers per route ``U{50..100}``,
  the others ``U{1..10}``;
* route size (``avg_route_size``): ``r ~ U[lo, hi]`` with ``(lo, hi)`` =
  (3, 5), (5, 8), (8, 12), (12, 16), (16, 25), (25, 50) for 1..6, and capacity
  ``C = max(max_i d_i, ceil(r * sum_i d_i / n))`` (``floor(r)`` for unit demands).

NDS uses ``(2, 2, 2, 3)``: centred depot, clustered customers, ``U{1..10}``
demands, ``r ~ U[8, 12]``.

:func:`x_instance` is a draw-for-draw reimplementation on a :class:`random.Random`
(so a seeded stream reproduces NDS's instances exactly, customer order
included: NDS lists the customers in the iteration order of a Python ``set`` of
``(x, y)`` tuples, which we rebuild the same way; that order is CPython's, fixed
by its tuple hash since 3.8, and was checked against NDS's files on 3.11). It is
pure Python.
:func:`sample_x_batch` samples the same distribution for a whole batch with
tensor ops (a different random stream, so different instances).
"""

from __future__ import annotations

import math
import random

import torch
from torch import Tensor

from pyg_routing.data.generator_options import batch_count
from pyg_routing.errors import InvalidInstanceError

#: Side of the integer grid (coordinates 0..GRID, divided by GRID at the end).
GRID = 1000
#: Distance at which a seed's attraction halves (grid units).
DECAY = 40.0
#: Number of cluster seeds ``U{SEEDS}``.
SEEDS = (2, 6)
#: ``(lo, hi)`` of ``r`` (customers per route) for ``avg_route_size`` 1..6.
ROUTE_SIZES = {1: (3.0, 5.0), 2: (5.0, 8.0), 3: (8.0, 12.0), 4: (12.0, 16.0),
               5: (16.0, 25.0), 6: (25.0, 50.0)}
#: ``(min, max)`` demand of ``demand_type`` 1..7 (6 and 7 are refined in
#: :func:`x_instance`: quadrant-dependent and few-large-many-small).
DEMANDS = {1: (1, 1), 2: (1, 10), 3: (5, 10), 4: (1, 100), 5: (50, 100), 6: (1, 50),
           7: (51, 100)}
#: NDS's setting (depot, customers, demand, route size); its file names end in ``_2_2_2_3``.
NDS_X_PARAMS = (2, 2, 2, 3)

Point = tuple[int, int]


def check_x_params(n: int, root_pos: int, cust_pos: int, demand_type: int,
                   avg_route_size: int) -> None:
    """Refuse settings the generator does not define, and sizes too small to hold
    the largest possible number of seeds among the clustered customers."""
    for name, value, allowed in (("root_pos", root_pos, (1, 2, 3)),
                                 ("cust_pos", cust_pos, (1, 2, 3)),
                                 ("demand_type", demand_type, tuple(DEMANDS)),
                                 ("avg_route_size", avg_route_size, tuple(ROUTE_SIZES))):
        if value not in allowed:
            raise InvalidInstanceError(f"{name} must be one of {allowed}, got {value!r}")
    clustered = {1: 0, 2: n, 3: n - n // 2}[cust_pos]
    if cust_pos != 1 and clustered < SEEDS[1]:
        raise InvalidInstanceError(
            f"the X generator with cust_pos={cust_pos} needs at least {SEEDS[1]} clustered "
            f"customers (one per possible seed); n={n} gives {clustered}")
    if n < 1:
        raise InvalidInstanceError(f"n must be >= 1, got {n}")


def depot_point(root_pos: int, rng: random.Random) -> Point:
    """The depot's grid point (draws two integers for a random depot only)."""
    if root_pos == 1:
        return rng.randint(0, GRID), rng.randint(0, GRID)
    return (GRID // 2, GRID // 2) if root_pos == 2 else (0, 0)


def _free_point(rng: random.Random, taken: set[Point], depot: Point) -> Point:
    """A uniform grid point that is neither the depot nor already a customer
    (redrawn until it is, as the original does)."""
    while True:
        p = (rng.randint(0, GRID), rng.randint(0, GRID))
        if p not in taken and p != depot:
            return p


def _attraction(p: Point, seeds: list[Point]) -> float:
    """``sum_s 2^(-d(p, s) / 40)``, summed in seed order (float64, so the accept
    decisions match the original bit for bit)."""
    total = 0.0
    for sx, sy in seeds:
        total += 2.0 ** (-math.sqrt((p[0] - sx) ** 2 + (p[1] - sy) ** 2) / DECAY)
    return total


def x_instance(n: int, rng: random.Random, root_pos: int = 2, cust_pos: int = 2,
               demand_type: int = 2, avg_route_size: int = 3
               ) -> tuple[list[Point], list[int], int]:
    """One instance, drawing from ``rng`` in exactly NDS's order.

    Draw order: the number of seeds (always, even without clusters), ``r``, the
    depot (if random), the random customers, the seeds, the clustered customers
    (a grid point, then one uniform for the accept test), one uniform per demand
    plus a second one for every type-7 customer and for type-6 customers in the
    lower-left and upper-right quadrants, then the demand shuffle (all types but 6).

    Returns:
        ``(points, demands, capacity)``: ``n + 1`` integer grid points (depot
        first), ``n + 1`` demands (depot ``0``) and the capacity.
    """
    check_x_params(n, root_pos, cust_pos, demand_type, avg_route_size)
    num_seeds = rng.randint(*SEEDS)
    r = rng.uniform(*ROUTE_SIZES[avg_route_size])
    depot = depot_point(root_pos, rng)
    num_random = {1: n, 2: 0, 3: n // 2}[cust_pos]
    if cust_pos == 1:
        num_seeds = 0
    # A set, like the original: its iteration order fixes the customer order.
    taken: set[Point] = set()
    for _ in range(num_random):
        taken.add(_free_point(rng, taken, depot))
    seeds = []
    for _ in range(num_seeds):
        seed = _free_point(rng, taken, depot)
        taken.add(seed)
        seeds.append(seed)
    if seeds:
        scale = 1.0 / max(_attraction(s, seeds) for s in seeds)
        while len(taken) < n:
            p = _free_point(rng, taken, depot)
            if rng.uniform(0, 1) <= _attraction(p, seeds) * scale:
                taken.add(p)
    points = [depot, *taken]

    lo, hi = DEMANDS[demand_type]
    # demand_type 7: the first ~1.5 customers per route get large demands (the
    # shuffle below spreads them); the index test is the original's, i = 2..n+1.
    num_large = (n / r) * 1.5
    demands = []
    for i in range(2, n + 2):
        d = int((hi - lo + 1) * rng.uniform(0, 1) + lo)
        if demand_type == 6:
            x, y = points[i - 1]
            if (x < GRID / 2 and y < GRID / 2) or (x >= GRID / 2 and y >= GRID / 2):
                d = int(50 * rng.uniform(0, 1) + 51)
        elif demand_type == 7:
            d = (int(51 * rng.uniform(0, 1) + 50) if i < num_large
                 else int(10 * rng.uniform(0, 1) + 1))
        demands.append(d)
    total = sum(demands)
    capacity = math.floor(r) if total == n else max(max(demands), math.ceil(r * total / n))
    if demand_type != 6:  # quadrant demands stay with their customers
        rng.shuffle(demands)
    return points, [0, *demands], capacity


#: Number of grid points; a point's key is ``x * (GRID + 1) + y``.
_KEYS = (GRID + 1) ** 2
#: Cap on ``batch * proposals`` per rejection round (bounds memory, not results).
_BUDGET = 1 << 21


def _fill(keys: Tensor, count: Tensor, target: Tensor, depot_key: Tensor,
          gen: torch.Generator, accept=None, rate: float = 1.0) -> Tensor:
    """Append distinct random grid points to ``keys [B, n]`` (``-1`` = empty)
    until row ``b`` holds ``target[b]`` of them; returns the new counts ``[B]``.

    The original draws one uniform point at a time, redraws it while it is the
    depot or taken, then keeps it with probability ``accept``. Proposing many
    points at once and keeping, in proposal order, the accepted ones that are
    free and new in the round is the same process: each kept point is drawn with
    probability proportional to ``accept`` over the free points, as before.
    """
    b, device = keys.size(0), keys.device
    rows = torch.arange(b, device=device)[:, None]
    while bool((count < target).any()):
        need = int((target - count).max())
        m = max(16, min(int(need / max(rate, 1e-3) * 1.25) + 16, _BUDGET // b))
        cand = torch.randint(0, _KEYS, (b, m), generator=gen, device=device)
        ok = (cand != depot_key[:, None]) & (count < target)[:, None]
        if accept is not None:
            ok &= accept(cand)
        flat = rows * _KEYS + cand                                   # unique across rows
        hits = flat[ok]
        fresh = ~torch.isin(hits, (rows * _KEYS + keys)[keys >= 0])
        ok[ok.clone()] = fresh
        hits = hits[fresh]
        # Within the round, only a point's first accepted proposal counts.
        _, inv = torch.unique(hits, return_inverse=True)
        order = torch.arange(hits.numel(), device=device)
        first = torch.full((int(inv.max()) + 1 if hits.numel() else 0,), hits.numel(),
                           device=device).scatter_reduce(0, inv, order, "amin")
        keep = torch.zeros_like(ok)
        keep[ok] = first[inv] == order
        slot = count[:, None] + keep.cumsum(1) - 1
        keep &= slot < target[:, None]
        keys[rows.expand_as(keep)[keep], slot[keep]] = cand[keep]
        proposed = int(((count < target)[:, None] & (cand != depot_key[:, None])).sum())
        rate = max(int(keep.sum()) / max(proposed, 1), 1e-3)
        count = count + keep.sum(1)
    return count


def _xy(keys: Tensor) -> Tensor:
    """``[..., 2]`` grid coordinates of point keys."""
    return torch.stack([keys // (GRID + 1), keys % (GRID + 1)], dim=-1)


def sample_x_batch(batch_size: int, n: int, gen: torch.Generator, root_pos: int = 2,
                   cust_pos: int = 2, demand_type: int = 2, avg_route_size: int = 3,
                   return_info: bool = False) -> tuple[Tensor, ...]:
    """``batch_size`` X instances of ``n`` customers, sampled with tensor ops on
    ``gen``'s device: the distribution of :func:`x_instance`, not its stream.

    Customers are listed in a uniformly random order (the original's order is
    that of a hash set, so no order is meaningful).

    Returns:
        ``points [B, n + 1, 2]`` int64 grid coordinates (depot first),
        ``demand [B, n + 1]`` int64 (depot ``0``) and ``capacity [B]`` int64; with
        ``return_info`` also the number of seeds ``[B]`` (0 without clusters) and
        ``r [B]`` float64.
    """
    check_x_params(n, root_pos, cust_pos, demand_type, avg_route_size)
    b, device = batch_count(batch_size), gen.device
    seeds_n = torch.randint(SEEDS[0], SEEDS[1] + 1, (b,), generator=gen, device=device)
    lo, hi = ROUTE_SIZES[avg_route_size]
    r = lo + (hi - lo) * torch.rand(b, generator=gen, device=device, dtype=torch.float64)
    if root_pos == 1:
        depot = torch.randint(0, GRID + 1, (b, 2), generator=gen, device=device)
    else:
        depot = torch.full((b, 2), GRID // 2 if root_pos == 2 else 0, device=device)
    depot_key = depot[:, 0] * (GRID + 1) + depot[:, 1]
    keys = torch.full((b, n), -1, dtype=torch.long, device=device)
    num_random = {1: n, 2: 0, 3: n // 2}[cust_pos]
    count = torch.zeros(b, dtype=torch.long, device=device)
    count = _fill(keys, count, torch.full_like(count, num_random), depot_key, gen)
    if cust_pos != 1:
        count = _fill(keys, count, num_random + seeds_n, depot_key, gen)
        seeds = _xy(keys[:, num_random:num_random + SEEDS[1]]).float()      # [B, 6, 2]
        valid = torch.arange(SEEDS[1], device=device) < seeds_n[:, None]

        def attraction(points: Tensor) -> Tensor:
            dist = (points.float()[:, :, None] - seeds[:, None]).norm(dim=-1)   # [B, P, 6]
            pull = torch.exp2(-dist / DECAY)
            return (pull * valid[:, None]).sum(-1)

        scale = 1.0 / attraction(seeds).masked_fill(~valid, 0).amax(1)

        def accept(cand: Tensor) -> Tensor:
            u = torch.rand(cand.shape, generator=gen, device=device)
            return u <= attraction(_xy(cand)) * scale[:, None]

        _fill(keys, count, torch.full_like(count, n), depot_key, gen, accept, rate=0.05)
    order = torch.rand(b, n, generator=gen, device=device).argsort(1)
    xy = _xy(keys.gather(1, order))

    dlo, dhi = DEMANDS[demand_type]
    demand = torch.randint(dlo, dhi + 1, (b, n), generator=gen, device=device)
    if demand_type == 6:
        even = (xy < GRID / 2).all(-1) | (xy >= GRID / 2).all(-1)
        demand = torch.where(even, demand + 50, demand)               # U{1..50} -> U{51..100}
    elif demand_type == 7:
        # As many large demands as the original's index test admits, on random customers.
        num_large = (torch.ceil(1.5 * n / r).long() - 1).clamp(max=n + 1) - 1
        rank = torch.rand(b, n, generator=gen, device=device).argsort(1).argsort(1)
        small = torch.randint(1, 11, (b, n), generator=gen, device=device)
        demand = torch.where(rank < num_large[:, None], demand - 1, small)   # U{50..100}
    total = demand.sum(1)
    capacity = torch.where(total == n, torch.floor(r).long(),
                           torch.maximum(demand.amax(1), torch.ceil(r * total / n).long()))
    points = torch.cat([depot[:, None], xy], dim=1)
    demand = torch.cat([demand.new_zeros(b, 1), demand], dim=1)
    if return_info:
        return points, demand, capacity, seeds_n * (cust_pos != 1), r
    return points, demand, capacity


__all__ = ["DECAY", "DEMANDS", "GRID", "NDS_X_PARAMS", "ROUTE_SIZES", "SEEDS",
           "check_x_params", "depot_point", "sample_x_batch", "x_instance"]
