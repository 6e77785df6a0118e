"""The data of NDS (Hottung et al., 2025, github.com/ahottung/NDS), seeded.

NDS's headline results use its own distributions, not those of paper App. F:

* CVRP trains on uniform data: depot and customers ``U[0, 1]^2``, demands
  ``U{1..9}``, capacity from :data:`NDS_CVRP_CAPACITY` (``src/generator_cvrp.py``).
  Its CVRP test and validation files are those of Kool et al. (2019), LEHD and
  GLOP: one ``numpy.random.RandomState(seed)`` stream drawing all depots, then all
  customers, then all demands (``randint(1, 10)``), seed 1234 (test) / 1233
  (validation); 128 test instances at N=500, 100 at N=1000/2000.
* VRPTW and PCVRP draw the layout, demands and capacity from the X generator
  (:mod:`~pyg_routing.data.x_generator`, setting ``2_2_2_3``), then add time
  windows (:func:`nds_time_windows`) or prizes (:func:`nds_prizes`) from one
  ``torch.rand(B, n)`` drawn after all layouts. The X part uses Python's
  ``random`` and the windows/prizes torch's CPU generator, both seeded with the
  dataset seed (``generate_dataset.py``): 250 test instances (seed 1234), 1000
  validation (seed 1233).

Every generator here has two modes. ``exact=True`` replays NDS's own random
streams (slow Python for the X layouts, a one-off): a fresh generator's first
``sample(num)`` with seed 1234 reproduces NDS's test file bit for bit
(:func:`nds_test_set`). ``exact=False`` (default) samples the same distribution
with tensor ops on ``device``, from its own stream.
"""

from __future__ import annotations

import pickle
import random
from typing import Any

import numpy as np
import torch
from torch import Tensor

from pyg_routing.data.generator_options import batch_count, count_option, number_option
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.data.x_generator import (
    GRID,
    NDS_X_PARAMS,
    check_x_params,
    sample_x_batch,
    x_instance,
)
from pyg_routing.errors import InvalidInstanceError

#: CVRP capacity by size (``UNIFORM_CAPACITY`` of NDS's ``generator_cvrp.py``:
#: 500 after Drakulic et al. and Luo et al., 1000/2000 after GLOP).
NDS_CVRP_CAPACITY = {20: 30, 50: 40, 100: 50, 200: 70, 300: 80, 500: 100, 800: 130,
                     1000: 200, 2000: 300}
#: VRPTW horizon, window width and service time in grid units (NDS's
#: ``configs/*/vrptw_*.yaml``; ``generate_dataset.py`` defaults to 2400/500/50,
#: which is NOT what its data files use).
NDS_TIME_WINDOWS = {"horizon": 1800, "width": 400, "service": 50}
#: PCVRP prize range and demand weight (``configs/*/pcvrp_*.yaml``;
#: ``generate_dataset.py`` defaults to 0.01/0.1).
NDS_PRIZES = {"p_min": 0.1, "p_max": 0.2, "alpha": 0.5}
#: Dataset seeds of NDS's files.
NDS_TEST_SEED, NDS_VALID_SEED = 1234, 1233
#: Instances in NDS's test files: (problem, size) -> count, ``None`` = any size.
NDS_TEST_COUNTS: dict[tuple[str, int | None], int] = {
    ("cvrp", 500): 128, ("cvrp", 1000): 100, ("cvrp", 2000): 100,
    ("vrptw", None): 250, ("pcvrp", None): 250}


def nds_time_windows(points: Tensor, u: Tensor, horizon: int = NDS_TIME_WINDOWS["horizon"],
                     width: int = NDS_TIME_WINDOWS["width"],
                     service: int = NDS_TIME_WINDOWS["service"]) -> tuple[Tensor, Tensor]:
    """NDS's windows (``generator_vrptw.py``), in float32 exactly as NDS computes them.

    In grid units, with ``t_i = 1000 * |x_i - x_0|``: the window must open after a
    direct trip (``e_min = ceil(t_i) + 1``) and close early enough to serve and
    drive back before the horizon (``l_max = horizon - ceil(t_i + service) - 1``);
    its centre is ``e_min + round((l_max - e_min) u_i)`` and it spans
    ``centre -/+ width // 2``, clipped to ``[e_min, l_max]``. Everything is then
    divided by 1000; the depot is open on ``[0, horizon]``.

    Args:
        points: ``[B, N, 2]`` float32 coordinates in ``[0, 1]`` (depot first).
        u: ``[B, N - 1]`` uniforms, one per customer.

    Returns:
        ``time_window [B, N, 2]`` and ``service_time [B, N]`` (depot 0), float32.
    """
    travel = torch.linalg.vector_norm(points[:, :1] - points[:, 1:], dim=-1) * GRID
    earliest = torch.ceil(travel) + 1
    latest = horizon - torch.ceil(travel + service) - 1
    if bool((latest < earliest).any()):
        raise InvalidInstanceError(f"horizon {horizon} is too short: some customer cannot "
                                   f"be served by a direct trip from the depot")
    centre = earliest + torch.round((latest - earliest) * u)
    tw = torch.stack([torch.clamp(centre - width // 2, min=earliest),
                      torch.clamp(centre + width // 2, max=latest)], dim=-1) / GRID
    depot = torch.tensor([0.0, horizon], device=points.device) / GRID
    b, n = u.shape
    time_window = torch.cat([depot.expand(b, 1, 2), tw], dim=1)
    service_time = torch.full((b, n + 1), service / GRID, device=points.device)
    service_time[:, 0] = 0
    return time_window, service_time


def nds_prizes(demand: Tensor, u: Tensor, p_min: float = NDS_PRIZES["p_min"],
               p_max: float = NDS_PRIZES["p_max"], alpha: float = NDS_PRIZES["alpha"]
               ) -> Tensor:
    """NDS's prizes (``generator_pcvrp.py``): with ``f_i = (d_i - min d) / (max d -
    min d)`` per instance, ``p_i = alpha (p_min + f_i Δ) + (1 - alpha)(p_min + u_i Δ)``,
    ``Δ = p_max - p_min``, so ``p_i ∈ [p_min, p_max]``. Float32, NDS's operation order.

    Args:
        demand: ``[B, n]`` customer demands (integers).
        u: ``[B, n]`` uniforms.

    Returns:
        ``[B, n]`` prizes. (All-equal demands, which NDS would turn into NaN, give
        ``f = 0``.)
    """
    d = demand.to(torch.int32)
    low, high = d.amin(1, keepdim=True), d.amax(1, keepdim=True)
    f = (d - low) / (high - low).clamp(min=1)
    spread = p_max - p_min
    return alpha * (p_min + f * spread) + (1 - alpha) * (p_min + u * spread)


class _NDSGenerator:
    """Seeding, sizes and the shared ``sample`` plumbing of the NDS generators."""

    problem: Problem

    def __init__(self, num_customers: int, seed: int | None = None, exact: bool = False,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32
                 ) -> None:
        self.num_customers = count_option(num_customers, "num_customers")
        if self.num_customers < 1:
            raise InvalidInstanceError(f"num_customers must be >= 1, got {num_customers}")
        self.seed, self.exact, self.dtype = seed, bool(exact), dtype
        self.device = torch.device(device)
        if self.exact and self.device.type != "cpu":
            raise InvalidInstanceError("exact=True replays NDS's CPU random streams; "
                                       f"use device='cpu', not {self.device}")
        # exact: NDS seeds torch's CPU generator and Python's (or numpy's) with the
        # same dataset seed; otherwise one generator on the device drives everything.
        self.rng = torch.Generator(device=self.device)
        if seed is None:
            self.rng.seed()
        else:
            self.rng.manual_seed(int(seed))
        self.py_rng = random.Random(seed)

    @property
    def num_nodes(self) -> int:
        return self.num_customers + 1

    def _rand(self, *shape: int) -> Tensor:
        return torch.rand(*shape, generator=self.rng, device=self.device)

    def sample(self, batch_size: int) -> RoutingInstances:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(num_customers={self.num_customers}, seed={self.seed}, "
                f"exact={self.exact})")


class NDSCVRPGenerator(_NDSGenerator):
    """NDS's CVRP data: depot and customers ``U[0, 1]^2``, demands ``U{1..9}``,
    capacity :data:`NDS_CVRP_CAPACITY` ``[n]`` (or ``capacity``; other sizes need it).

    With ``route_size=(lo, hi)`` the capacity is instead set per instance by
    Uchoa et al.'s rule, ``C = max(max_i d_i, ceil(r * sum_i d_i / n))`` with
    ``r ~ U[lo, hi]`` customers per route (preset ``nds_low_capacity``).

    ``exact=True`` follows Kool et al.'s numpy stream, which NDS's test and
    validation files use (see the module docstring).

    ``depots=K`` (beyond NDS, whose data has one depot): ``K`` depots, nodes
    ``0 .. K-1``, each uniform in the unit square; the extra ones are drawn after
    everything else, so ``K = 1`` keeps the random stream (as the paper generators).
    """

    problem = Problem.CVRP

    def __init__(self, num_customers: int, seed: int | None = None,
                 capacity: float | None = None, exact: bool = False,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32,
                 route_size: tuple[float, float] | None = None, depots: int = 1) -> None:
        super().__init__(num_customers, seed, exact, device, dtype)
        n = self.num_customers
        self.depots = count_option(depots, "depots")
        if self.depots < 1:
            raise InvalidInstanceError(f"depots must be >= 1, got {depots!r}")
        if self.depots > 1 and self.exact:
            raise InvalidInstanceError(f"depots={self.depots}: exact=True replays NDS's "
                                       f"one-depot files; sample several depots with "
                                       f"exact=False")
        #: Fixed capacity, or ``None`` when ``route_size`` sets it per instance.
        self.capacity: float | None = None
        self.route_size: tuple[float, float] | None = None
        if route_size is not None:
            if capacity is not None:
                raise InvalidInstanceError("give capacity or route_size, not both")
            lo, hi = (number_option(v, "route_size") for v in route_size)
            if not 1 <= lo <= hi:
                raise InvalidInstanceError(f"route_size must be (lo, hi) with 1 <= lo <= hi, "
                                           f"got {route_size!r}")
            self.route_size = (lo, hi)
        elif capacity is None and n not in NDS_CVRP_CAPACITY:
            raise InvalidInstanceError(
                f"NDS defines the CVRP capacity for n in {sorted(NDS_CVRP_CAPACITY)} only, "
                f"got n={n}; pass capacity=... for other sizes")
        else:
            self.capacity = (float(NDS_CVRP_CAPACITY[n]) if capacity is None
                             else number_option(capacity, "capacity"))
            if self.capacity < 9:
                raise InvalidInstanceError(f"capacity {self.capacity:g} is below the largest "
                                           f"possible demand 9")
        self.np_rng = np.random.RandomState(seed) if exact else None

    def sample(self, batch_size: int) -> RoutingInstances:
        b, n = batch_count(batch_size), self.num_customers
        if self.np_rng is not None:
            depot = torch.from_numpy(self.np_rng.uniform(size=(b, 1, 2)))
            nodes = torch.from_numpy(self.np_rng.uniform(size=(b, n, 2)))
            demand = torch.from_numpy(self.np_rng.randint(1, 10, size=(b, n)))
            pos = torch.cat([depot, nodes], dim=1).to(self.dtype)
        else:
            pos = self._rand(b, n + 1, 2).to(self.dtype)        # depot = node 0
            demand = torch.randint(1, 10, (b, n), generator=self.rng, device=self.device)
        demand = torch.cat([demand.new_zeros(b, 1), demand], dim=1).float()
        if self.route_size is None:
            cap = torch.full((b,), self.capacity, device=pos.device)
        else:
            lo, hi = self.route_size
            if self.np_rng is not None:
                r = torch.from_numpy(self.np_rng.uniform(lo, hi, size=b))
            else:
                r = lo + (hi - lo) * torch.rand(b, generator=self.rng, device=self.device,
                                                dtype=torch.float64)
            total = demand.sum(1).double()
            cap = torch.maximum(demand.amax(1).double(), torch.ceil(r * total / n)).float()
        if self.depots > 1:                  # drawn last: K = 1 keeps its random stream
            more = self._rand(b, self.depots - 1, 2).to(self.dtype)
            pos = torch.cat([pos[:, :1], more, pos[:, 1:]], dim=1)
            demand = torch.cat([demand[:, :1].expand(-1, self.depots), demand[:, 1:]], dim=1)
        return RoutingInstances(self.problem, pos, demand=demand, capacity=cap,
                                num_depots=self.depots)

    @property
    def num_nodes(self) -> int:
        return self.num_customers + self.depots


class XCVRPGenerator(_NDSGenerator):
    """CVRP from the X generator (:mod:`~pyg_routing.data.x_generator`), as NDS's
    ``generate_dataset.py --problem cvrp`` makes it; default setting ``2_2_2_3``."""

    problem = Problem.CVRP

    def __init__(self, num_customers: int, seed: int | None = None,
                 x_params: tuple[int, int, int, int] = NDS_X_PARAMS, exact: bool = False,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32
                 ) -> None:
        super().__init__(num_customers, seed, exact, device, dtype)
        self.x_params = tuple(int(v) for v in x_params)
        if len(self.x_params) != 4:
            raise InvalidInstanceError("x_params must be (root_pos, cust_pos, demand_type, "
                                       f"avg_route_size), got {x_params!r}")
        check_x_params(self.num_customers, *self.x_params)

    def _layout(self, b: int) -> tuple[Tensor, Tensor, Tensor]:
        """``pos [B, N, 2]`` float32 (grid / 1000, as NDS), ``demand [B, N]`` int32,
        ``capacity [B]`` int32."""
        if self.exact:
            insts = [x_instance(self.num_customers, self.py_rng, *self.x_params)
                     for _ in range(b)]
            points = torch.tensor([p for p, _, _ in insts], dtype=torch.float32)
            demand = torch.tensor([d for _, d, _ in insts], dtype=torch.int32)
            cap = torch.tensor([c for _, _, c in insts], dtype=torch.int32)
        else:
            points, demand, cap = sample_x_batch(b, self.num_customers, self.rng,
                                                 *self.x_params)
            points, demand, cap = points.float(), demand.int(), cap.int()
        return points / GRID, demand, cap

    def _extra(self, pos: Tensor, demand: Tensor) -> dict[str, Tensor]:
        return {}

    def sample(self, batch_size: int) -> RoutingInstances:
        pos, demand, cap = self._layout(batch_count(batch_size))
        extra = self._extra(pos, demand)      # from the float32 layout, as NDS
        return RoutingInstances(self.problem, pos.to(self.dtype), demand=demand.float(),
                                capacity=cap.float(), **extra)


class NDSVRPTWGenerator(XCVRPGenerator):
    """NDS's VRPTW: X layout (``2_2_2_3``) plus :func:`nds_time_windows` with the
    configs' horizon 1800, width 400 and service 50 (grid units)."""

    problem = Problem.VRPTW

    def __init__(self, num_customers: int, seed: int | None = None,
                 horizon: int = NDS_TIME_WINDOWS["horizon"],
                 width: int = NDS_TIME_WINDOWS["width"],
                 service: int = NDS_TIME_WINDOWS["service"],
                 exact: bool = False, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__(num_customers, seed, NDS_X_PARAMS, exact, device, dtype)
        self.horizon = count_option(horizon, "horizon")
        self.width = count_option(width, "width")
        self.service = count_option(service, "service")

    def _extra(self, pos: Tensor, demand: Tensor) -> dict[str, Tensor]:
        u = self._rand(*demand[:, 1:].shape)
        tw, st = nds_time_windows(pos, u, self.horizon, self.width, self.service)
        return {"time_window": tw, "service_time": st}


class NDSPCVRPGenerator(XCVRPGenerator):
    """NDS's PCVRP: X layout (``2_2_2_3``) plus :func:`nds_prizes` with the configs'
    ``p_min = 0.1``, ``p_max = 0.2``, ``alpha = 0.5``."""

    problem = Problem.PCVRP

    def __init__(self, num_customers: int, seed: int | None = None,
                 p_min: float = NDS_PRIZES["p_min"], p_max: float = NDS_PRIZES["p_max"],
                 alpha: float = NDS_PRIZES["alpha"], exact: bool = False,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32
                 ) -> None:
        super().__init__(num_customers, seed, NDS_X_PARAMS, exact, device, dtype)
        self.p_min, self.p_max = number_option(p_min, "p_min"), number_option(p_max, "p_max")
        self.alpha = number_option(alpha, "alpha")
        if not 0 <= self.p_min <= self.p_max or not 0 <= self.alpha <= 1:
            raise InvalidInstanceError(f"need 0 <= p_min <= p_max and 0 <= alpha <= 1, got "
                                       f"{self.p_min}, {self.p_max}, {self.alpha}")

    def _extra(self, pos: Tensor, demand: Tensor) -> dict[str, Tensor]:
        cust = demand[:, 1:]
        prize = nds_prizes(cust, self._rand(*cust.shape), self.p_min, self.p_max, self.alpha)
        return {"prize": torch.cat([prize.new_zeros(prize.size(0), 1), prize], dim=1)}


_NDS_GENERATORS: dict[Problem, type[_NDSGenerator]] = {
    Problem.CVRP: NDSCVRPGenerator, Problem.VRPTW: NDSVRPTWGenerator,
    Problem.PCVRP: NDSPCVRPGenerator}


def nds_dataset(problem: str | Problem, num_customers: int, seed: int,
                num: int | None = None, dtype: torch.dtype = torch.float32
                ) -> RoutingInstances:
    """NDS's data file for ``(problem, n, seed)``, regenerated from NDS's random
    streams (bit-identical to the files, verified on those in NDS's repository).

    Args:
        problem: ``cvrp``, ``vrptw`` or ``pcvrp``.
        num_customers: customers per instance.
        seed: the dataset seed (1234 test, 1233 validation).
        num: instance count; ``None``: that of NDS's test files
            (:data:`NDS_TEST_COUNTS`). For VRPTW/PCVRP the first ``k`` instances do
            not depend on ``num``; for CVRP they do (one numpy stream per file).
        dtype: of ``pos`` (CVRP files hold float64; ``float64`` keeps them exact).
    """
    prob = Problem.parse(problem)
    if prob not in _NDS_GENERATORS:
        raise InvalidInstanceError(f"NDS has no {prob.value!r} data; it has "
                                   f"{', '.join(p.value for p in _NDS_GENERATORS)}")
    n = count_option(num_customers, "num_customers")
    if num is None:
        key = (prob.value, None if prob is not Problem.CVRP else n)
        if key not in NDS_TEST_COUNTS:
            raise InvalidInstanceError(f"NDS has no CVRP test file of size {n}; its sizes "
                                       f"are 500, 1000, 2000 - pass num=...")
        num = NDS_TEST_COUNTS[key]
    gen = _NDS_GENERATORS[prob](n, seed=int(seed), exact=True, dtype=dtype)
    return gen.sample(count_option(num, "num"))


def nds_test_set(problem: str | Problem, num_customers: int, seed: int = NDS_TEST_SEED,
                 num: int | None = None, dtype: torch.dtype = torch.float32
                 ) -> RoutingInstances:
    """NDS's test set (seed 1234); see :func:`nds_dataset`. Validation sets are
    ``nds_dataset(problem, n, NDS_VALID_SEED, num=1000)``.

    To build one once and keep it on disk (with reference solutions if wanted):
    ``RoutingDataset(root, problem, n, num, seed=1234, preset="nds",
    generator_kwargs={"exact": True})``.
    """
    return nds_dataset(problem, num_customers, seed, num, dtype)


class _NoCode(pickle.Unpickler):
    """Unpickler for plain data: refuses every global (class, function)."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing {module}.{name}: NDS's CVRP files hold "
                                     f"only lists and numbers")


def load_nds_file(path: str) -> RoutingInstances:
    """Read one of NDS's data files: ``.pt`` (VRPTW, PCVRP, X-CVRP dicts, read with
    ``weights_only=True``) or ``.pkl`` (CVRP lists ``[depot, nodes, demand,
    capacity]``, read without executing any code). ``pos`` keeps the file's dtype."""
    from pyg_routing.data.files import _check_readable

    _check_readable(path, "NDS data file")
    if str(path).endswith(".pkl"):
        with open(path, "rb") as fh:
            rows = _NoCode(fh).load()
        depot = torch.tensor([r[0] for r in rows], dtype=torch.float64)[:, None]
        pos = torch.cat([depot, torch.tensor([r[1] for r in rows], dtype=torch.float64)], 1)
        demand = torch.tensor([r[2] for r in rows], dtype=torch.float32)
        cap = torch.tensor([float(r[3]) for r in rows])
        return RoutingInstances(Problem.CVRP, pos, demand=torch.cat(
            [demand.new_zeros(len(rows), 1), demand], 1), capacity=cap)
    data = torch.load(path, map_location="cpu", weights_only=True)
    pos = torch.cat([data["depot_xy"], data["node_xy"]], dim=1)
    b = pos.size(0)
    demand = torch.cat([torch.zeros(b, 1), data["node_demand"].float()], dim=1)
    kw: dict[str, Tensor] = {"demand": demand, "capacity": data["capacity"].reshape(b).float()}
    problem = Problem.CVRP
    if "node_tw" in data:
        problem = Problem.VRPTW
        kw["time_window"] = torch.cat([data["depot_tw"], data["node_tw"]], dim=1)
        kw["service_time"] = torch.cat([torch.zeros(b, 1), data["node_sd"]], dim=1)
    elif "node_prizes" in data:
        problem = Problem.PCVRP
        kw["prize"] = torch.cat([torch.zeros(b, 1), data["node_prizes"]], dim=1)
    return RoutingInstances(problem, pos, **kw)


__all__ = ["NDS_CVRP_CAPACITY", "NDS_PRIZES", "NDS_TEST_COUNTS", "NDS_TEST_SEED",
           "NDS_TIME_WINDOWS", "NDS_VALID_SEED", "NDSCVRPGenerator", "NDSPCVRPGenerator",
           "NDSVRPTWGenerator", "XCVRPGenerator", "load_nds_file", "nds_dataset",
           "nds_prizes", "nds_test_set", "nds_time_windows"]
