"""What NDS's removal policy sees of a :class:`~.state.ToursState`, every search iteration.

NDS rebuilds its network input from every slot's CURRENT solution at each iteration
(``env.get_model_input``, a Python loop over tours). Here the same input, plus the
encoding inputs the project's encodings need, comes from tensor operations over all
slots at once (no Python loop over slots, tours or customers), on the policy's device:

* node features ``x [S, M, F]`` (``M = N + K`` nodes in the kernel order of
  :mod:`.depots`: depot 0, customers ``1..N``, depots ``1..K-1``) in NDS's scale: the
  slot's (augmented) coordinates, ``demand / capacity``, then the time window
  ``(e, l)`` (VRPTW) or the prize (PCVRP); every depot row holds its coordinates and
  zeros;
* ``pred, succ [S, N]`` (the depot of the customer's tour where NDS has its 0
  sentinel, also for singleton tours; 0 for unvisited customers) and the tour labels
  ``tour [S, N]`` (-1 unvisited), as in NDS; with one depot that depot is node 0;
* the route quantities of the slot's solution (:func:`route_quantities` on the
  solution's arcs, without re-validating the coordinates) and the encoding inputs
  built from them when the policy's encoding asks (:class:`EncodingInputs`; IPE's
  ``direction="auto"`` is direction-aware for the problems that are, VRPTW and PCVRP).

Several depots (:mod:`.observation_depots`): every route's arcs leave from and return
to its tour's depot node, so IPE's ``d_i``, ``d_L`` are measured from it, and XPE reads
each node's depot and the depots' centroid (``--encoding.xpe_reference route``,
``route_code``), as on the same solution in the data layer (permuted into the kernel
order). The graph encodings, built around one depot, are refused by name.

Augmentations. Slot ``a`` of an instance (its ``a``-th slot in slot order) sees
symmetry ``a % 8`` of the instance's coordinates. ``symmetry="depot"`` (default) uses
the library's 8 symmetries of the square about the depot
(:func:`~pyg_routing.envs.augment.augment_positions`); ``"unit_square"`` uses NDS's
own 8 flips and transposes of the unit square (for NDS checkpoints, which never saw
coordinates outside ``[0, 1]``). Both preserve distances, so the search's distance
matrix is shared by all slots of an instance.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import Tensor

from pyg_routing.data.costs import asymmetric_rows, direction_sensitive
from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.data.route_quantities import route_quantities
from pyg_routing.envs.augment import augment_positions
from pyg_routing.envs.base import UnsupportedProblemError
from pyg_routing.envs.deconstruction.depots import kernel_order
from pyg_routing.envs.deconstruction.observation_depots import (
    depot_inputs,
    refused_graph_arcs,
    tour_depot_nodes,
    with_tour_depots,
)
from pyg_routing.envs.deconstruction.problem import KIND_OF_PROBLEM
from pyg_routing.envs.deconstruction.state import ToursState
from pyg_routing.envs.observation import encoding_inputs
from pyg_routing.transforms import EncodingInputs

SYMMETRY_CHOICES = ("depot", "unit_square")
NUM_SYMMETRIES = 8


def unit_square_symmetries(pos: Tensor) -> Tensor:
    """NDS's 8 augmentations of ``pos [B, M, 2]`` in ``[0, 1]^2``: ``(x, y)``, ``(1-x, y)``,
    ``(x, 1-y)``, ``(1-x, 1-y)``, then the same of ``(y, x)``; copy-major ``[8 B, M, 2]``
    (row ``c * B + b`` = copy ``c`` of ``b``), as :func:`augment_positions`."""
    x, y = pos[..., :1], pos[..., 1:2]
    copies = [(x, y), (1 - x, y), (x, 1 - y), (1 - x, 1 - y),
              (y, x), (1 - y, x), (y, 1 - x), (1 - y, 1 - x)]
    return torch.cat([torch.cat(c, dim=-1) for c in copies], dim=0)


def augmentation_index(inst: np.ndarray) -> np.ndarray:
    """``int64 [S]``: the rank of each slot among the slots of its instance, in slot
    order (``s % augment`` for the search's instance-major layout)."""
    inst = np.asarray(inst, dtype=np.int64)
    order = np.argsort(inst, kind="stable")
    sorted_inst = inst[order]
    first = np.searchsorted(sorted_inst, sorted_inst, side="left")
    rank = np.empty_like(inst)
    rank[order] = np.arange(len(inst)) - first
    return rank


@dataclass
class NDSFeatures:
    """The per-instance part of the observation, built once per search.

    Every node axis has the ``M = N + K`` nodes in the kernel order of :mod:`.depots`
    (depot 0, customers ``1..N``, depots ``1..K-1``; the instances' order for one depot).

    Attributes:
        problem: cvrp, vrptw or pcvrp.
        pos: ``[8, I, M, 2]`` the 8 augmented coordinates of every instance (about
            depot 0).
        extra: ``[I, M, F-2]`` ``demand / capacity`` [+ ``(e, l)`` | prize], 0 at every
            depot.
        symmetry: ``"depot"`` or ``"unit_square"``.
        costs: ``[I, M, M]`` travel costs of instances with an explicit matrix or
            open routes (the route quantities, hence IPE, follow them); ``None``:
            Euclidean.
        open_routes: ``[I]`` bool (IPE's half-period phase) or ``None``.
        asymmetric: ``[I]`` bool, whether each matrix differs from its transpose
            (found once here, read by every observation); ``None`` without costs.
        num_depots: ``K``.
    """

    problem: Problem
    pos: Tensor
    extra: Tensor
    symmetry: str = "depot"
    costs: Tensor | None = None
    open_routes: Tensor | None = None
    asymmetric: Tensor | None = None
    num_depots: int = 1

    @classmethod
    def from_instances(cls, instances: RoutingInstances, device: torch.device | str | None = None,
                       dtype: torch.dtype = torch.float32, symmetry: str = "depot"
                       ) -> NDSFeatures:
        """The features of CVRP, VRPTW or PCVRP ``instances`` (in NDS's scale), their
        nodes in the kernel order.

        Raises:
            UnsupportedProblemError: another problem. ValueError: unknown ``symmetry``.
        """
        prob = Problem.parse(instances.problem)
        if prob not in KIND_OF_PROBLEM:
            raise UnsupportedProblemError(
                f"NDS observations exist for {', '.join(p.value for p in KIND_OF_PROBLEM)}; "
                f"got problem {prob.value!r}")
        if symmetry not in SYMMETRY_CHOICES:
            raise ValueError(f"symmetry must be one of {SYMMETRY_CHOICES}, got {symmetry!r}")
        device = instances.pos.device if device is None else torch.device(device)
        k = instances.num_depots
        # One depot: the instances' order is the kernel order (no copy, the same tensors).
        order = None if k == 1 else torch.from_numpy(
            kernel_order(k, instances.num_nodes)).to(device)

        def kernel(t: Tensor, dims: tuple[int, ...] = (1,)) -> Tensor:
            """``t``'s node axes ``dims`` in the kernel order."""
            if order is None:
                return t
            for d in dims:
                t = t.index_select(d, order)
            return t

        pos = kernel(instances.pos.to(device=device, dtype=dtype))
        b, m, _ = pos.shape
        aug = (augment_positions(pos, NUM_SYMMETRIES) if symmetry == "depot"
               else unit_square_symmetries(pos))
        ratio = (instances.demand.to(device=device, dtype=dtype)
                 / instances.capacity.to(device=device, dtype=dtype).view(b, 1))
        cols = [ratio.unsqueeze(-1)]
        if prob is Problem.VRPTW:
            cols.append(instances.time_window.to(device=device, dtype=dtype))
        elif prob is Problem.PCVRP:
            cols.append(instances.prize.to(device=device, dtype=dtype).unsqueeze(-1))
        extra = kernel(torch.cat(cols, dim=-1))
        # NDS feeds the depot its coordinates only: every depot (rows 0 and N+1..M-1)
        extra[:, 0] = 0
        extra[:, m - k + 1:] = 0
        travel = instances.travel
        costs = travel.matrix_or_none()
        if costs is not None:
            costs = kernel(costs.to(device=device, dtype=dtype), (1, 2))
        opened = None if travel.open_routes is None else travel.open_routes.to(device)
        return cls(prob, aug.view(NUM_SYMMETRIES, b, m, 2), extra, symmetry, costs, opened,
                   None if costs is None else asymmetric_rows(costs), k)

    @property
    def num_instances(self) -> int:
        return self.extra.shape[0]

    @property
    def num_customers(self) -> int:
        return self.extra.shape[1] - self.num_depots

    @property
    def device(self) -> torch.device:
        return self.extra.device

    def to(self, device: torch.device | str) -> NDSFeatures:
        """A copy on ``device``."""
        def moved(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.to(device)

        return NDSFeatures(self.problem, self.pos.to(device), self.extra.to(device),
                           self.symmetry, moved(self.costs), moved(self.open_routes),
                           moved(self.asymmetric), self.num_depots)

    def slot_positions(self, inst: np.ndarray) -> tuple[Tensor, Tensor]:
        """``(pos [S, M, 2], inst [S] long)``: each slot's augmented coordinates."""
        aug = torch.from_numpy(augmentation_index(inst) % NUM_SYMMETRIES).to(self.device)
        rows = torch.from_numpy(np.asarray(inst, dtype=np.int64)).to(self.device)
        return self.pos[aug, rows], rows


@dataclass
class NDSObservation:
    """The policy's input for ``S`` solutions of ``N`` customers and ``K`` depots
    (``M = N + K`` nodes in the kernel order: depot 0, customers ``1..N``, depots
    ``1..K-1`` at ``N+1..M-1``).

    Attributes:
        x: ``[S, M, F]`` node features (depot rows: coordinates, zeros).
        pos: ``[S, M, 2]`` the slots' augmented coordinates.
        pred, succ: ``[S, N]`` long neighbours of customers 1..N (a depot: the node of
            the customer's tour's depot; unvisited customers: 0).
        tour: ``[S, N]`` long tour labels (-1 unvisited).
        route_pos, route_id: ``[S, M]`` long (depots 0 / -1, unvisited -1 / -1;
            route ids unique over all slots, ordered by slot then first customer).
        cum_dist, route_length, depot_angle: ``[S, M]`` float route quantities.
        edge_index: ``[2, E]`` the solutions' route arcs on the flat ``S * M`` nodes.
        encoding_inputs: ``dtype -> EncodingInputs`` of the solutions (what a node
            code reads; built when an encoding asks).
        pe: ``[S, M, w]`` the policy's node code when already computed, else ``None``.
        open_routes: ``[S]`` bool, solutions of open-route instances (SPD), or ``None``.
        num_depots: ``K`` (the encoder embeds, the decoder masks, every depot row).
    """

    x: Tensor
    pos: Tensor
    pred: Tensor
    succ: Tensor
    tour: Tensor
    route_pos: Tensor
    route_id: Tensor
    cum_dist: Tensor
    route_length: Tensor
    depot_angle: Tensor
    edge_index: Tensor
    encoding_inputs: Callable[[torch.dtype | None], EncodingInputs] | None = None
    pe: Tensor | None = None
    open_routes: Tensor | None = None
    num_depots: int = 1

    def __len__(self) -> int:
        return self.x.shape[0]


def route_arcs(pred: Tensor, succ: Tensor, tour: Tensor, num_nodes: int | None = None
               ) -> Tensor:
    """``[2, E]`` route arcs of ``S`` solutions on the flat ``S * M`` nodes.

    Args:
        pred, succ, tour: ``[S, N+1]`` (index 0 unused), as in :class:`ToursState`; a
            predecessor (successor) that is not a customer ``1..N`` is the depot node
            the route leaves from (returns to): 0, or a kernel depot node ``N+1..M-1``
            (:func:`.observation_depots.with_tour_depots`).
        num_nodes: ``M`` nodes per slot (default ``N + 1``, one depot).

    The opening arcs ``depot -> first`` come first, slot by slot and by increasing
    first customer (so route ids follow that order), then every customer's outgoing
    arc; :func:`route_quantities` recovers the visit order by list ranking.
    """
    s, n1 = succ.shape
    m = n1 if num_nodes is None else num_nodes
    cust = torch.arange(1, n1, device=succ.device)
    base = (torch.arange(s, device=succ.device) * m).unsqueeze(1)       # the slot's node 0
    visited = tour[:, 1:] >= 0
    before = pred[:, 1:]
    opens = visited & ((before == 0) | (before >= n1))                 # after a depot
    src = torch.cat([(base + before)[opens], (base + cust)[visited]])
    dst = torch.cat([(base + cust)[opens], (base + succ[:, 1:])[visited]])
    return torch.stack([src, dst])


def observe(state: ToursState, features: NDSFeatures,
            dtype: torch.dtype = torch.float32) -> NDSObservation:
    """The observation of every slot of ``state`` (see the module docstring).

    Args:
        state: ``S`` solutions of the instances of ``features``.
        features: :meth:`NDSFeatures.from_instances` of the search's instances (on the
            policy's device).
        dtype: floating dtype of the features and codes.

    Raises:
        ValueError: the state does not fit the features (customer count, instance rows,
            depot numbers).
    """
    n, k = state.num_customers, features.num_depots
    if n != features.num_customers:
        raise ValueError(f"the state has {n} customers, the features "
                         f"{features.num_customers}")
    if len(state) and (state.inst.min() < 0 or state.inst.max() >= features.num_instances):
        raise ValueError(f"state.inst must index the {features.num_instances} instances of "
                         f"the features")
    if k > 1 and len(state) and state.depot.max() >= k:
        raise ValueError(f"state.depot must hold depot numbers below the features' {k}")
    dev = features.device
    pos, rows = features.slot_positions(state.inst)
    pos = pos.to(dtype)
    pred = torch.from_numpy(state.pred).to(dev, torch.long)
    succ = torch.from_numpy(state.succ).to(dev, torch.long)
    tour = torch.from_numpy(state.tour).to(dev, torch.long)
    home = None
    if k > 1:                   # NDS's 0 sentinel: the tour's own depot node
        home = tour_depot_nodes(torch.from_numpy(state.depot).to(dev, torch.long), tour)
        pred, succ = with_tour_depots(pred, home), with_tour_depots(succ, home)
    s, m = pos.shape[:2]
    edge_index = route_arcs(pred, succ, tour, m)
    depot_mask = torch.zeros(s, m, dtype=torch.bool, device=dev)
    depot_mask[:, 0] = True
    depot_mask[:, n + 1:] = True                        # depots 1..K-1 (none for K = 1)
    depot_mask = depot_mask.view(-1)
    batch = torch.arange(s, device=dev).repeat_interleave(m)
    arc_cost = aware = opened = None
    if features.costs is not None:          # explicit matrices, open routes: their costs
        local = edge_index % m
        arc_cost = features.costs.reshape(-1)[(rows[edge_index[0] // m] * m + local[0]) * m
                                              + local[1]].to(dtype)
        opened = None if features.open_routes is None else features.open_routes[rows]
        aware = direction_sensitive(
            torch.full((s,), features.problem.direction_sensitive, device=dev),
            features.asymmetric[rows], opened)
    # The instances were checked when the search started: no re-validation (one sync).
    rq = route_quantities(pos.reshape(-1, 2), edge_index, depot_mask, batch, s,
                          validate=False, arc_cost=arc_cost)
    x = torch.cat([pos, features.extra[rows].to(dtype)], dim=-1)

    def inputs(code_dtype: torch.dtype | None) -> EncodingInputs:
        made = encoding_inputs(
            rq, depot_mask, s, features.problem.direction_sensitive if aware is None else aware,
            edge_index if home is None else refused_graph_arcs(k), m, batch=batch,
            graph_batch=batch, graph_depot_mask=depot_mask,
            demand=x[..., 2].reshape(-1), dtype=code_dtype,   # demand / capacity
            open_routes=opened)
        return made if home is None else replace(made, **depot_inputs(pos, home))

    return NDSObservation(
        x=x, pos=pos, pred=pred[:, 1:], succ=succ[:, 1:], tour=tour[:, 1:],
        route_pos=rq.route_pos.view(s, m), route_id=rq.route_id.view(s, m),
        cum_dist=rq.cum_dist.view(s, m), route_length=rq.route_length.view(s, m),
        depot_angle=rq.depot_angle.view(s, m), edge_index=edge_index,
        encoding_inputs=inputs, open_routes=opened, num_depots=k)
