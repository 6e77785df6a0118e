"""Seeded, batched instance generators (paper App. F, preset ``paper``). Node 0 is the depot.

Every generator samples a whole batch with tensor ops on the requested device;
the only Python loop is the (few-round) rejection sampler of clustered layouts,
which is vectorized over the batch.
"""

from __future__ import annotations

import functools
import math

import torch
from torch import Tensor

from pyg_routing.data.cost_models import check_cost_model, sample_costs
from pyg_routing.data.generator_options import batch_count, count_option, number_option
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import MULTI_DEPOT_PROBLEMS, PROBLEMS, Problem, capacity_for
from pyg_routing.errors import InvalidInstanceError
from pyg_routing.options import DEFAULT_GRID, DEFAULT_ONE_WAY

DISTRIBUTIONS = ("uniform", "clustered")


class _Generator:
    """Shared seeding, location sampling and cost model.

    ``costs`` picks the cost model (:mod:`~pyg_routing.data.cost_models`):
    ``euclidean`` (the paper's, no matrix) or ``streets`` (asymmetric: a ``grid`` x
    ``grid`` city whose inner streets are one-way with probability ``one_way``); its
    streets are drawn after the layout and demands, so those of a seed do not
    depend on the cost model.
    """

    problem: Problem

    def __init__(self, num_customers: int, seed: int | None = None,
                 distribution: str = "uniform", device: torch.device | str = "cpu", *,
                 costs: str = "euclidean", grid: int = DEFAULT_GRID,
                 one_way: float = DEFAULT_ONE_WAY) -> None:
        num_customers = count_option(num_customers, "num_customers")
        if num_customers < 1:
            raise InvalidInstanceError(f"num_customers must be >= 1, got {num_customers}")
        if distribution not in DISTRIBUTIONS:
            raise InvalidInstanceError(f"unknown distribution {distribution!r}; "
                                       f"choose from {DISTRIBUTIONS}")
        self.grid, self.one_way = check_cost_model(costs, grid, one_way)
        self.costs = costs
        self.num_customers = int(num_customers)
        self.distribution = distribution
        self.device = torch.device(device)
        self.seed = seed
        self.rng = torch.Generator(device=self.device)
        if seed is None:
            self.rng.seed()
        else:
            self.rng.manual_seed(int(seed))

    @property
    def num_nodes(self) -> int:
        return self.num_customers + 1

    def _rand(self, *shape: int) -> Tensor:
        return torch.rand(*shape, generator=self.rng, device=self.device)

    def _locations(self, batch_size: int, num_customers: int | None = None) -> Tensor:
        """``[B, 1 + n, 2]``: depot uniform in the unit square, ``n`` customers
        (default ``num_customers``) uniform or clustered."""
        n = self.num_customers if num_customers is None else num_customers
        depot = self._rand(batch_size, 1, 2)
        if self.distribution == "uniform":
            customers = self._rand(batch_size, n, 2)
        else:
            customers = self._clustered(batch_size, n)
        return torch.cat([depot, customers], dim=1)

    def _clustered(self, batch_size: int, n: int, max_seeds: int = 8,
                   scale: float = 0.04) -> Tensor:
        """Clustered customers as in Uchoa et al. (2017) / Queiroga et al. (2022):
        ``S ~ U{3..8}`` uniform seeds; every other customer is drawn from the density
        ``f(x) ∝ min(1, sum_s exp(-d(x, s) / 0.04))`` on the unit square (their
        ``exp(-d/40)`` on a 1000-wide grid, rescaled).

        Sampled exactly by rejection from the seed mixture ``g(x) ∝ sum_s
        exp(-d(x, s) / 0.04)`` (pick a seed, then a radius ~ Gamma(2, 0.04) in a
        uniform direction), accepting with probability ``min(1, 1 / sum_s ...)``
        and rejecting points outside the square: since ``f / g ∝ min(1, 1/Σ)``,
        accepted points follow ``f`` exactly, and most proposals are accepted.
        """
        b = batch_size
        num_seeds = torch.randint(3, max_seeds + 1, (b,), generator=self.rng,
                                  device=self.device).clamp(max=n)
        seeds = self._rand(b, max_seeds, 2)
        seed_valid = torch.arange(max_seeds, device=self.device) < num_seeds[:, None]
        out = torch.zeros(b, n, 2, device=self.device)
        k = min(max_seeds, n)
        out[:, :k] = seeds[:, :k]
        filled = num_seeds.clone()
        rows = torch.arange(b, device=self.device)[:, None]
        m = 2 * n                                            # proposals per round
        for _ in range(1000):
            if bool((filled >= n).all()):
                return out
            pick = (self._rand(b, m) * num_seeds[:, None]).long()
            centre = torch.gather(seeds, 1, pick[..., None].expand(b, m, 2))
            radius = -scale * torch.log(self._rand(b, m) * self._rand(b, m))   # Gamma(2)
            angle = 2 * torch.pi * self._rand(b, m)
            cand = centre + radius[..., None] * torch.stack([angle.cos(), angle.sin()], -1)
            inside = ((cand >= 0) & (cand <= 1)).all(-1)
            mass = (torch.exp(-torch.cdist(cand, seeds) / scale) * seed_valid[:, None]).sum(-1)
            accept = inside & (self._rand(b, m) * mass < 1.0)          # u < min(1, 1/mass)
            slot = filled[:, None] + torch.cumsum(accept.long(), 1) - 1
            ok = accept & (slot < n)
            out[rows.expand_as(ok)[ok], slot[ok]] = cand[ok]
            filled = filled + ok.sum(1)
        raise RuntimeError("clustered sampling did not converge")  # pragma: no cover

    def _demands(self, batch_size: int) -> Tensor:
        """``[B, N]`` demands ``U{1..9}``, depot 0."""
        d = torch.randint(1, 10, (batch_size, self.num_customers), generator=self.rng,
                          device=self.device).float()
        return torch.cat([d.new_zeros(batch_size, 1), d], dim=1)

    def _cost_matrix(self, pos: Tensor) -> Tensor | None:
        """``[B, N, N]`` travel costs of the cost model (``None``: Euclidean)."""
        return sample_costs(self.costs, self.grid, self.one_way, pos, self.rng)

    def sample(self, batch_size: int) -> RoutingInstances:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        extra = "" if self.costs == "euclidean" else \
            f", costs={self.costs!r}, grid={self.grid}, one_way={self.one_way:g}"
        if getattr(self, "open_routes", False):
            extra += ", open_routes=True"
        if getattr(self, "depots", 1) != 1:
            extra += f", depots={self.depots}"
        return (f"{type(self).__name__}(num_customers={self.num_customers}, seed={self.seed}, "
                f"distribution={self.distribution!r}{extra})")


class TSPGenerator(_Generator):
    """TSP with ``num_customers`` cities; node 0 is the city tours start from, so
    TSP-20 is ``TSPGenerator(20)`` with 20 nodes (``num_nodes == num_customers``)."""

    problem = Problem.TSP

    @property
    def num_nodes(self) -> int:
        return self.num_customers

    def sample(self, batch_size: int) -> RoutingInstances:
        batch_size = batch_count(batch_size)
        if self.num_customers < 2:
            raise InvalidInstanceError("a TSP needs at least 2 cities")
        # Node 0 plays the depot, so N cities are one depot and N - 1 customers.
        pos = self._locations(batch_size, self.num_customers - 1)
        return RoutingInstances(self.problem, pos, cost_matrix=self._cost_matrix(pos))


class CVRPGenerator(_Generator):
    """CVRP: demands ``U{1..9}``, capacity ``C(n)`` of App. F unless given.

    ``depots=K`` (CVRP only): ``K`` depots, nodes ``0 .. K-1``, each uniform in the unit
    square like App. F's one depot (the first is drawn where the one depot is, the
    others after the customers, so ``K = 1`` draws exactly the single-depot
    instances); every depot sends out as many routes as it needs."""

    problem = Problem.CVRP

    def __init__(self, num_customers: int, seed: int | None = None,
                 distribution: str = "uniform", capacity: float | None = None,
                 device: torch.device | str = "cpu", *, costs: str = "euclidean",
                 grid: int = DEFAULT_GRID, one_way: float = DEFAULT_ONE_WAY,
                 open_routes: bool = False, depots: int = 1) -> None:
        super().__init__(num_customers, seed, distribution, device, costs=costs, grid=grid,
                         one_way=one_way)
        if not isinstance(open_routes, bool):
            raise InvalidInstanceError(f"open_routes must be True or False, got "
                                       f"{open_routes!r}")
        self.open_routes = open_routes
        self.depots = count_option(depots, "depots")
        if self.depots < 1:
            raise InvalidInstanceError(f"depots must be >= 1, got {depots!r}")
        if self.depots > 1 and self.problem not in MULTI_DEPOT_PROBLEMS:
            raise InvalidInstanceError(
                f"depots={self.depots}: several depots are a variant of "
                f"{', '.join(p.value for p in MULTI_DEPOT_PROBLEMS)}, not "
                f"{self.problem.value!r}")
        self.capacity = (number_option(capacity, "capacity") if capacity is not None
                         else float(capacity_for(self.num_customers)))
        if self.capacity < 9:
            raise InvalidInstanceError(f"capacity {self.capacity} is below the largest "
                                       f"possible demand 9")

    @property
    def num_nodes(self) -> int:
        return self.num_customers + self.depots

    def sample(self, batch_size: int) -> RoutingInstances:
        batch_size = batch_count(batch_size)
        pos = self._locations(batch_size)
        demand = self._demands(batch_size)
        if self.depots > 1:                  # drawn last: K = 1 keeps its random stream
            more = self._rand(batch_size, self.depots - 1, 2)
            pos = torch.cat([pos[:, :1], more, pos[:, 1:]], dim=1)
            demand = torch.cat([demand[:, :1].expand(-1, self.depots), demand[:, 1:]], dim=1)
        cap = torch.full((batch_size,), self.capacity, device=self.device)
        return RoutingInstances(self.problem, pos, demand=demand, capacity=cap,
                                cost_matrix=self._cost_matrix(pos),
                                open_routes=self._open(batch_size), num_depots=self.depots)

    def _open(self, batch_size: int) -> Tensor | None:
        """``[B]`` open-route flags (``None`` for closed routes, the paper's)."""
        if not self.open_routes:
            return None
        return torch.ones(batch_size, dtype=torch.bool, device=self.device)


class VRPTWGenerator(CVRPGenerator):
    """VRPTW: CVRP layout and demands plus Solomon-style windows (speed 1).

    Service times ``s_i ~ U[0.15, 0.18]``, window lengths ``w_i ~ U[0.18, 0.20]``.
    The depot is open on ``[0, T]`` with ``T = max_i (2 d_0i + s_i + w_i)`` per
    instance, and each window start ``e_i ~ U[d_0i, T - d_0i - s_i - w_i]``, so the
    out-and-back route ``0 -> i -> 0`` is feasible for every customer and a
    feasible schedule always exists.
    """

    problem = Problem.VRPTW

    def sample(self, batch_size: int) -> RoutingInstances:
        batch_size = batch_count(batch_size)
        base = super().sample(batch_size)
        b, n = batch_size, self.num_customers
        if base.cost_matrix is None:
            d0 = (base.pos[:, 1:] - base.pos[:, :1]).norm(dim=-1)            # [B, n]
            back = d0
        else:                        # travel times are the costs, out and back differ
            d0, back = base.cost_matrix[:, 0, 1:], base.cost_matrix[:, 1:, 0]
        service = 0.15 + 0.03 * self._rand(b, n)
        width = 0.18 + 0.02 * self._rand(b, n)
        horizon = (d0 + back + service + width).amax(dim=1, keepdim=True)   # [B, 1]
        latest = horizon - back - service - width
        start = d0 + (latest - d0).clamp(min=0) * self._rand(b, n)
        tw = torch.stack([start, start + width], dim=-1)
        depot_tw = torch.cat([torch.zeros_like(horizon), horizon], dim=-1)[:, None]
        time_window = torch.cat([depot_tw, tw], dim=1)
        service_time = torch.cat([service.new_zeros(b, 1), service], dim=1)
        return RoutingInstances(self.problem, base.pos, demand=base.demand,
                                capacity=base.capacity, time_window=time_window,
                                service_time=service_time, cost_matrix=base.cost_matrix,
                                open_routes=base.open_routes)


class PCVRPGenerator(CVRPGenerator):
    """PCVRP: CVRP plus prizes ``p_i = κ ξ_i d_i`` with ``ξ_i ~ U[0.8, 1.2]``.

    κ is calibrated so that about half of the customers are attractive under a
    simple greedy oracle: the prize-aware nearest-neighbour heuristic
    (:func:`~pyg_routing.data.solvers.constructive.nearest_neighbor`), which
    extends a route to the nearest customer that fits and whose prize exceeds the
    detour ``c(cur, i) + c(i, 0) - c(cur, 0)``. κ is found by bisection (on a log
    scale) so that this oracle visits half of the customers of a fixed
    calibration sample (128 instances, seed 0, same size, layout and capacity);
    it depends only on the generator's parameters, never on the caller's seed.
    Pass ``kappa`` to override. Stronger solvers (PyVRP) visit a different
    share, since they pay less per visited customer.
    """

    problem = Problem.PCVRP

    def __init__(self, num_customers: int, seed: int | None = None,
                 distribution: str = "uniform", capacity: float | None = None,
                 kappa: float | None = None, device: torch.device | str = "cpu") -> None:
        super().__init__(num_customers, seed, distribution, capacity, device)
        if kappa is not None and number_option(kappa, "kappa") < 0:
            raise InvalidInstanceError(f"kappa must be >= 0 (prizes are kappa * xi * "
                                       f"demand), got {kappa}")
        self.kappa = float(kappa) if kappa is not None else calibrate_kappa(
            self.num_customers, distribution, self.capacity)

    def sample(self, batch_size: int) -> RoutingInstances:
        batch_size = batch_count(batch_size)
        base = super().sample(batch_size)
        xi = 0.8 + 0.4 * self._rand(batch_size, self.num_nodes)
        prize = self.kappa * xi * base.demand                               # depot: demand 0
        return RoutingInstances(self.problem, base.pos, demand=base.demand,
                                capacity=base.capacity, prize=prize)


@functools.lru_cache(maxsize=64)
def calibrate_kappa(num_customers: int, distribution: str = "uniform",
                    capacity: float | None = None, num_instances: int = 128,
                    target: float = 0.5) -> float:
    """The prize scale κ of :class:`PCVRPGenerator` (see its docstring)."""
    # Lazy: importing pyg_routing.data.solvers loads OR-Tools and PyVRP, which only
    # a PCVRP generator without an explicit kappa needs.
    from pyg_routing.data.solvers.constructive import nearest_neighbor

    gen = CVRPGenerator(num_customers, seed=0, distribution=distribution, capacity=capacity)
    base = gen.sample(num_instances)
    xi = 0.8 + 0.4 * gen._rand(num_instances, num_customers + 1)
    lo, hi = 1e-5, 1e2
    for _ in range(14):  # brackets κ to within ~0.1 %
        mid = math.sqrt(lo * hi)
        inst = RoutingInstances(Problem.PCVRP, base.pos, demand=base.demand,
                                capacity=base.capacity, prize=mid * xi * base.demand)
        visited = (nearest_neighbor(inst) > 0).sum().item() / (num_instances * num_customers)
        lo, hi = (mid, hi) if visited < target else (lo, mid)
    return math.sqrt(lo * hi)


class PDTSPGenerator(_Generator):
    """PDTSP: ``num_customers / 2`` pickup–delivery pairs; pickup ``r`` (1..P) pairs
    with delivery ``r + P``; one vehicle, no capacity. PDTSP-51 is
    ``PDTSPGenerator(50)``."""

    problem = Problem.PDTSP

    def __init__(self, num_customers: int, seed: int | None = None,
                 distribution: str = "uniform", device: torch.device | str = "cpu", *,
                 costs: str = "euclidean", grid: int = DEFAULT_GRID,
                 one_way: float = DEFAULT_ONE_WAY) -> None:
        num_customers = count_option(num_customers, "num_customers")
        if num_customers % 2 or num_customers < 2:
            raise InvalidInstanceError(f"PDTSP needs an even number of customers (pairs), "
                                       f"got {num_customers}")
        super().__init__(num_customers, seed, distribution, device, costs=costs, grid=grid,
                         one_way=one_way)

    def sample(self, batch_size: int) -> RoutingInstances:
        batch_size = batch_count(batch_size)
        pos = self._locations(batch_size)
        p = self.num_customers // 2
        pickups = torch.arange(1, p + 1, device=self.device)
        pairs = torch.stack([pickups, pickups + p])
        return RoutingInstances(self.problem, pos, pickup_delivery_index=pairs,
                                cost_matrix=self._cost_matrix(pos))


GENERATORS: dict[Problem, type[_Generator]] = {
    Problem.TSP: TSPGenerator, Problem.CVRP: CVRPGenerator, Problem.VRPTW: VRPTWGenerator,
    Problem.PCVRP: PCVRPGenerator, Problem.PDTSP: PDTSPGenerator,
}
if tuple(p.value for p in GENERATORS) != PROBLEMS:   # the commands' --problem choices
    raise ImportError(f"GENERATORS {tuple(GENERATORS)} differ from problems.PROBLEMS")


__all__ = ["DISTRIBUTIONS", "GENERATORS", "PROBLEMS", "CVRPGenerator", "PCVRPGenerator",
           "PDTSPGenerator", "TSPGenerator", "VRPTWGenerator", "calibrate_kappa"]
