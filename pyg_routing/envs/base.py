"""The seam every environment follows.

:class:`RoutingEnv` is what every environment is: it names the problems and the
initial-solution rules it supports (and refuses others in one place), starts
solutions for a batch of instances (``reset``), shows them to a policy (``observe``:
features and route quantities, never a model's output) and gives them back as routes
(``to_routes``). Two kinds extend it, each honestly its own shape:

* a step environment, :class:`ImprovementEnv` (2-opt, pair reinsertion): one move
  per instance per step, chosen by a policy head (below);
* a destroy-and-repair environment,
  :class:`~pyg_routing.envs.deconstruction.DeconstructionEnv` (NDS): one round
  repairs many removal sets per solution with a numba kernel.

A step environment holds ``B`` solutions as one dense, batched state and changes them
by actions a policy picks. The search (:class:`pyg_routing.search.StepSearch`) and the
trainers (:mod:`pyg_routing.training`) only talk to this interface:

* :meth:`ImprovementEnv.reset`: initial solutions of a batch of instances;
* :meth:`ImprovementEnv.step`: apply ``[B, ...]`` actions, get the reward (the
  improvement of the best-so-far cost);
* :meth:`ImprovementEnv.action_mask`, :meth:`ImprovementEnv.random_action`;
* :meth:`ImprovementEnv.observe`: the dense :class:`Observation` an encoder reads;
* :meth:`ImprovementEnv.to_routes`: the (best) solutions as routes in original ids.

Augmentation, acceptance (keep a move or undo it) and picking the best of several
symmetric copies are written once here, over the dataclass fields of a
:class:`BatchedState`; an environment only says how a solution is costed at given
coordinates (:meth:`ImprovementEnv.solution_cost`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, TypeVar

import torch
from torch import Tensor

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.data.travel import VARIANTS
from pyg_routing.data.type_checks import not_a_batch
from pyg_routing.envs.augment import augment_positions
from pyg_routing.errors import UnsupportedProblemError
from pyg_routing.transforms import EncodingInputs

S = TypeVar("S", bound="BatchedState")
ObsT = TypeVar("ObsT", bound="Observation")


def any_per_row(mask: Tensor) -> Tensor:
    """``mask.flatten(1).any(1)`` of a bool ``[B, ...]`` mask, as the maximum of its
    bytes: the same answer, 30x faster on the CPU (``any`` over bools is not
    vectorized there; 11 ms against 0.3 ms for a ``[512, 114, 114]`` mask)."""
    if mask.dtype != torch.bool:
        raise TypeError(f"any_per_row takes a bool mask, got {mask.dtype}")
    return mask.reshape(mask.size(0), -1).view(torch.uint8).amax(1).bool()


@dataclass
class BatchedState:
    """Base of the environments' states: a dataclass whose tensor fields all have the
    batch as dim 0, with ``pos [B, M, 2]``, ``cost [B]`` and ``best_cost [B]``.

    ``BEST_FIELDS`` names the fields that describe the best-so-far solution
    (``best_cost`` and the best solution itself), each ``best_X`` the best-so-far
    twin of the field ``X``: a rejected move keeps the new values of these (a search
    remembers every solution it saw) and reverts the rest.
    """

    BEST_FIELDS: ClassVar[tuple[str, ...]] = ("best_cost",)

    def __len__(self) -> int:
        return self.pos.size(0)

    @property
    def device(self) -> torch.device:
        return self.pos.device

    def tensors(self) -> dict[str, Tensor]:
        """Every tensor field by name (all batch-first)."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if isinstance(getattr(self, f.name), Tensor)}

    def to(self: S, device: torch.device | str) -> S:
        return replace(self, **{k: v.to(device) for k, v in self.tensors().items()})

    def __getitem__(self: S, index: int | slice | Tensor) -> S:
        """Sub-batch (an ``int`` keeps a batch dimension of 1)."""
        if isinstance(index, int):
            index = slice(index, index + 1 if index != -1 else None)
        return replace(self, **{k: v[index] for k, v in self.tensors().items()})

    def clone(self: S) -> S:
        return replace(self, **{k: v.clone() for k, v in self.tensors().items()})


@dataclass
class Observation:
    """One dense observation of ``B`` states with ``M`` nodes each: what an encoder
    (:meth:`pyg_routing.models.GPSEncoder.forward_observation`) and a policy read.

    Attributes:
        x: ``[B, M, F]`` node features, in the encoder's dtype.
        edge_index: ``[2, B * M]`` route arcs of the current solutions over the
            flattened ``B * M`` nodes (one successor per node).
        succ: ``[B, M]`` long successor of every node within its instance (the
            same arcs; the directed encoder gathers along them).
        pe: ``[B, M, W]`` the policy's node code when already computed
            (:meth:`pyg_routing.models.ImprovementPolicy.prepare`), else ``None``.
        route_pos: ``[B, M]`` long within-route positions (depots 0).
        route_id: ``[B, M]`` long route ids (unique over the batch; -1 at depots).
        mask: the action mask (True = allowed); its shape is the environment's.
        extra: ``[B, E]`` graph features for the critic (e.g. cost, best cost).
        encoding_inputs: ``dtype -> EncodingInputs``: what node encodings read of the
            current solutions (:mod:`pyg_routing.envs.observation`), built when an
            encoding asks (``None``: the environment offers none).
        open_routes: ``[B]`` bool, states whose routes are open (their route graph has
            no closing edges: SPD's hop distances), or ``None``.
    """

    x: Tensor
    edge_index: Tensor
    succ: Tensor
    pe: Tensor | None
    route_pos: Tensor
    route_id: Tensor
    mask: Tensor
    extra: Tensor
    encoding_inputs: Callable[[torch.dtype | None], EncodingInputs] | None
    # keyword-only, so that subclasses (PairObservation) may add required fields
    open_routes: Tensor | None = field(default=None, kw_only=True)

    def to(self: ObsT, device: torch.device | str) -> ObsT:
        return replace(self, **{f.name: getattr(self, f.name).to(device) for f in fields(self)
                                if isinstance(getattr(self, f.name), Tensor)})


class RoutingEnv(ABC):
    """What every environment is (see the module docstring).

    Attributes:
        name: short name (``"two_opt"``).
        feature_widths: per supported problem, the width of the node features its
            observations carry (the one statement of a backbone's problems: the
            policies take their input width from it, :meth:`feature_width`).
        problems: the problems it supports (``tuple(feature_widths)`` where declared).
        inits: the initial-solution rules :meth:`reset` accepts.
        variants: the variants of instances it searches
            (:data:`~pyg_routing.data.travel.VARIANTS`): ``euclidean`` (coordinates),
            ``explicit`` (a cost matrix, possibly asymmetric), ``open`` (open routes),
            ``multi_depot`` (several depots); :meth:`reset` refuses the others.

    An environment defines :meth:`start`, never :meth:`reset`: ``reset`` checks the
    instances' variants against :attr:`variants` and then starts, so that no
    environment can forget the check (a subclass that defines ``reset`` is refused
    when it is declared).
    """

    name: ClassVar[str]
    feature_widths: ClassVar[dict[Problem, int]] = {}
    problems: ClassVar[tuple[Problem, ...]]
    inits: ClassVar[tuple[str, ...]]
    variants: ClassVar[tuple[str, ...]] = ("euclidean",)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "reset" in vars(cls):
            raise TypeError(f"{cls.__name__} defines reset(); an environment defines "
                            f"start(instances, ...) instead, which reset() calls after "
                            f"checking the instances' variants")
        unknown = [v for v in cls.variants if v not in VARIANTS]
        if unknown:
            raise TypeError(f"{cls.__name__}.variants names {unknown}; the variants are "
                            f"{', '.join(VARIANTS)}")

    def reset(self, instances: RoutingInstances, *args: Any, **kwargs: Any) -> Any:
        """Initial solutions of ``B`` instances (the state this environment keeps):
        :meth:`check_variant`, then :meth:`start` with the same arguments.

        Raises:
            TypeError: ``instances`` not a ``RoutingInstances`` batch (one instance is
                told how to make one).
            UnsupportedProblemError: a variant the environment does not declare.
        """
        if not isinstance(instances, RoutingInstances):
            raise not_a_batch(instances, f"{type(self).__name__}.reset")
        self.check_variant(instances)
        return self.start(instances, *args, **kwargs)

    @abstractmethod
    def start(self, instances: RoutingInstances, *args: Any, **kwargs: Any) -> Any:
        """Initial solutions of ``B`` instances whose variants :meth:`reset` checked."""

    @abstractmethod
    def observe(self, state: Any, *args: Any, **kwargs: Any) -> Any:
        """What a policy sees of ``state``: features and route quantities."""

    @abstractmethod
    def to_routes(self, state: Any) -> list[list[list[int]]]:
        """The solutions of ``state`` as routes per instance, in original node ids
        (depot omitted, empty routes dropped)."""

    @classmethod
    def check_problem(cls, problem: Problem | str) -> Problem:
        """The problem if supported; else :class:`UnsupportedProblemError` naming the
        supported problems."""
        prob = Problem.parse(problem)
        if prob not in cls.problems:
            raise UnsupportedProblemError(
                f"the {cls.name} environment supports "
                f"{', '.join(p.value for p in cls.problems)}, not {prob.value!r}")
        return prob

    @classmethod
    def check_variant(cls, instances: RoutingInstances) -> None:
        """Refuse instances of a variant this environment does not declare (an
        explicit matrix, open routes, several depots), with
        :class:`UnsupportedProblemError` naming what the instances have and what the
        environment takes: a search must never fall back to Euclidean distances or to
        one depot silently."""
        instances.travel.refuse_variants(cls.variants, f"the {cls.name} environment")

    @classmethod
    def feature_width(cls, problem: Problem | str) -> int:
        """Width of the node features of ``problem``'s observations (what a policy's
        first layer reads). Raises :class:`UnsupportedProblemError` for another."""
        prob = cls.check_problem(problem)
        if prob not in cls.feature_widths:
            raise NotImplementedError(f"{cls.__name__} declares no feature width")
        return cls.feature_widths[prob]

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ImprovementEnv(RoutingEnv):
    """The protocol of a step environment (see the module docstring)."""

    # ------------------------------------------------------------------ protocol
    @abstractmethod
    def start(self, instances: RoutingInstances, init: str,
              generator: torch.Generator | None = None) -> BatchedState:
        """Initial solutions of ``B`` instances by the rule ``init`` (called by
        :meth:`reset`, ``reset(instances, init, generator)``)."""

    @abstractmethod
    def step(self, state: BatchedState, action: Tensor) -> tuple[BatchedState, Tensor]:
        """Apply ``action``; returns a new state (``state`` is not modified) and the
        reward ``[B]``: the improvement of the best-so-far cost."""

    @abstractmethod
    def action_mask(self, state: BatchedState) -> Tensor:
        """Bool mask of the allowed actions, batch-first (True = allowed)."""

    @abstractmethod
    def random_action(self, state: BatchedState, mask: Tensor | None = None,
                      generator: torch.Generator | None = None) -> Tensor:
        """Uniformly random allowed actions (the random-policy baseline)."""

    @abstractmethod
    def observe(self, state: BatchedState, mask: Tensor | None = None,
                dtype: torch.dtype | None = None) -> Observation:
        """The :class:`Observation` of ``state``, features in ``dtype`` (default: the
        state's); its route quantities, not a model's code (the policy computes that)."""

    @abstractmethod
    def to_routes(self, state: BatchedState, best: bool = True) -> list[list[list[int]]]:
        """Routes per instance in original node ids (depot omitted, empty routes
        dropped), of the best-so-far (``best``) or the current solutions."""

    def route_depots(self, state: BatchedState, best: bool = True) -> list[list[int]] | None:
        """Each route's depot per instance, in the order of :meth:`to_routes`, for a
        state of multi-depot instances; ``None`` where every route's depot is node 0
        (the default: an environment that declares ``multi_depot`` overrides it)."""
        return None

    @abstractmethod
    def solution_cost(self, state: BatchedState, pos: Tensor, best: bool) -> Tensor:
        """``[B]`` cost of the current (or best) solutions at the coordinates ``pos``
        (the state's node layout): lets augmented copies be costed anywhere."""

    # ------------------------------------------------------------------ shared
    def policy_observation(self, state: BatchedState, dtype: torch.dtype | None = None
                           ) -> Observation:
        """:meth:`observe` with a no-op allowed where no action is (a policy must
        always be able to act): the first entry of an all-False mask row. Built in full
        precision under ``torch.autocast`` too (mixed-precision training): route
        quantities are the network's inputs; only the network is autocast."""
        with torch.autocast(state.pos.device.type, enabled=False):
            mask = self.action_mask(state)
            stuck = ~any_per_row(mask)
            if bool(stuck.any()):
                mask.flatten(1)[stuck, 0] = True
            return self.observe(state, mask, dtype)

    def augment(self, state: S, num: int, copies: bool = False,
                which: list[int] | None = None) -> S:
        """``num`` copies of ``state`` (copy-major, ``[num * B, ...]``) under the
        symmetries of :func:`~pyg_routing.envs.augment.augment_positions` (the first
        ``num``, or the indices ``which``), with the same solutions, costed in the new
        coordinates. ``copies``: ``state`` already holds ``num`` copy-major copies of
        ``B`` instances (each with its own solutions); only their coordinates are
        transformed."""
        if copies:
            rep = dict(state.tensors())
            rep["pos"] = augment_positions(state.pos[:len(state) // num], num, which)
        else:
            rep = {k: v.repeat(num, *[1] * (v.dim() - 1)) for k, v in state.tensors().items()}
            rep["pos"] = augment_positions(state.pos, num, which)
        copies = replace(state, **rep)
        return replace(copies, cost=self.solution_cost(copies, copies.pos, best=False),
                       best_cost=self.solution_cost(copies, copies.pos, best=True))

    def best_of_copies(self, state: S, base: S, num: int) -> tuple[S, Tensor, Tensor]:
        """Of ``num`` copy-major copies of ``base`` (:meth:`augment`), the best
        solution of each instance, costed in ``base``'s coordinates.

        Returns:
            ``base`` with the winning best-so-far solutions, their costs ``[B]`` and
            the winning copy ``[B]`` of each instance.
        """
        b = len(base)
        costs = self.solution_cost(state, base.pos.repeat(num, 1, 1), best=True).view(num, b)
        best_cost, best_copy = costs.min(0)
        won = {}
        for name in state.BEST_FIELDS:
            value = getattr(state, name).view(num, b, *getattr(state, name).shape[1:])
            index = best_copy.view(1, b, *[1] * (value.dim() - 2)).expand(1, *value.shape[1:])
            won[name] = value.gather(0, index)[0]
        won["best_cost"] = best_cost
        return replace(base, **won), best_cost, best_copy

    def restart_best(self, state: S) -> S:
        """``state`` with its current solutions as the best-so-far ones (every
        ``best_X`` of ``BEST_FIELDS`` takes a copy of ``X``)."""
        return replace(state, **{name: getattr(state, name[len("best_"):]).clone()
                                 for name in state.BEST_FIELDS})

    def resume_best(self, state: S) -> S:
        """``state`` with its best-so-far solutions as the current ones (VRP-DACT's
        ``best_cl``: the training rollout starts from the best solution of the warm-up):
        every ``X`` of ``BEST_FIELDS`` takes a copy of ``best_X``, then
        :meth:`rebuild_solution` derives the rest. Raises ``NotImplementedError`` for an
        environment that does not define it."""
        current = {name[len("best_"):]: getattr(state, name).clone()
                   for name in state.BEST_FIELDS}
        return self.rebuild_solution(replace(state, **current))

    def rebuild_solution(self, state: S) -> S:
        """``state`` whose solution fields were replaced, with the fields derived from
        them made consistent again (and any move memory, such as a tabu, cleared)."""
        raise NotImplementedError(f"{type(self).__name__} cannot restart from the best "
                                  f"solution (curriculum start 'best')")

    def accept(self, old: S, new: S, accepted: Tensor) -> S:
        """Per instance, ``new`` where ``accepted [B]`` is True, else ``old``; the
        best-so-far fields (``BEST_FIELDS``) and the step count come from ``new``."""
        merged = {}
        for name, value in new.tensors().items():
            if name in new.BEST_FIELDS:
                continue
            keep = accepted.view(-1, *[1] * (value.dim() - 1))
            merged[name] = torch.where(keep, value, getattr(old, name))
        return replace(new, **merged)
