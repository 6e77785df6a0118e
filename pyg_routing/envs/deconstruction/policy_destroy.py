"""``PolicyDestroy``: removal sets from a learned NDS policy, behind the
:class:`~.destroy.DestroyProvider` protocol of the search.

Per call (one search iteration): the observation of every slot's current solution
(:func:`.observation.observe`; the policy computes its node code from it), one policy pass under
``torch.no_grad()`` in eval mode (autocast on CUDA, as NDS's test-time search), and
``num_sets`` rollouts of ``k`` picks per slot, returned as ``int32 [S, num_sets, k]``
numpy sets in pick order (the first repair's insertion order). Randomness (the
latents and the sampling) comes from a ``torch.Generator`` seeded from the search's
numpy ``rng``, so a seeded search is reproducible on one device.

The policy is duck-typed (an :class:`~pyg_routing.models.NDSPolicy` or anything with
its ``problem``, ``encoder.node_code`` and ``forward(obs, K, k, generator=...)``), so
the environments do not import the models.
"""

from __future__ import annotations

import contextlib
import numbers
from typing import Any

import numpy as np
import torch

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.problems import Problem
from pyg_routing.data.type_checks import not_a_batch
from pyg_routing.envs.deconstruction.depots import kernel_order
from pyg_routing.envs.deconstruction.destroy import PerArraysCache, check_propose
from pyg_routing.envs.deconstruction.observation import NDSFeatures, NDSObservation, observe
from pyg_routing.envs.deconstruction.problem import (
    ProblemArrays,
    arrays_mismatch,
    depot_rows,
    open_flags,
)
from pyg_routing.envs.deconstruction.state import ToursState
from pyg_routing.errors import InvalidInstanceError


def _mismatch(features: NDSFeatures, arrays: ProblemArrays, rows: np.ndarray | None,
              opened: np.ndarray) -> str | None:
    """Why ``arrays`` are not the instances of ``features`` (``None``: they are);
    ``rows``, ``opened``: the instances' :func:`depot_rows` and :func:`open_flags`."""
    k = features.num_depots
    if arrays.num_depots != k:
        return f"the arrays have {arrays.num_depots} depot(s), the instances {k}"
    pos = features.pos[0]                                              # identity copy
    if k > 1:              # arrays_mismatch reads the instances' order: undo the kernel's
        inverse = np.argsort(kernel_order(k, pos.shape[1]))
        pos = pos.index_select(1, torch.from_numpy(inverse).to(pos.device))
    return arrays_mismatch(arrays, features.problem, pos, rows, opened)


class PolicyDestroy:
    """Removal sets sampled from a learned NDS policy.

    Args:
        policy: an ``NDSPolicy`` (moved to its device beforehand).
        instances: the search's instances (coordinates and features; the
            :class:`ProblemArrays` passed to :meth:`propose` must be theirs).
        k: customers per set (NDS: 15).
        symmetry: augmentation of the slots' coordinates (``"depot"``, ``"unit_square"``
            for NDS checkpoints; see :mod:`.observation`).
        autocast: run the policy under ``torch.autocast`` (default: on CUDA only).
        temperature: softmax temperature (NDS: 1).

    Attributes:
        name: ``"policy"``.
    """

    name = "policy"

    def __init__(self, policy: Any, instances: RoutingInstances, k: int = 15,
                 symmetry: str = "depot", autocast: bool | None = None,
                 temperature: float = 1.0) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        if not isinstance(instances, RoutingInstances):
            raise not_a_batch(instances, "PolicyDestroy")
        if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) \
                or not (np.isfinite(temperature) and temperature > 0):
            raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
        prob = Problem.parse(instances.problem).value
        if getattr(policy, "problem", prob) != prob:
            raise ValueError(f"the policy was built for {policy.problem!r}, the instances are "
                             f"{prob!r}")
        customers = instances.num_nodes - instances.num_depots
        if k > customers:
            raise ValueError(f"k = {k} is above the number of customers {customers}")
        self.policy = policy
        self.k = k
        self.temperature = temperature
        self._autocast = autocast
        self.features = NDSFeatures.from_instances(instances, device=self.device,
                                                   symmetry=symmetry)
        rows, opened = depot_rows(instances), open_flags(instances)
        self._mismatch = PerArraysCache(
            lambda arrays: _mismatch(self.features, arrays, rows, opened))

    @property
    def device(self) -> torch.device:
        """The policy's device (where the observation is built)."""
        return next(self.policy.parameters()).device

    @property
    def autocast(self) -> bool:
        """Whether the policy runs under ``torch.autocast`` (default: on CUDA)."""
        return self.device.type == "cuda" if self._autocast is None else bool(self._autocast)

    def observe(self, state: ToursState) -> NDSObservation:
        """The policy's observation of ``state`` (no gradient bookkeeping needed), in
        full precision also inside an outer ``torch.autocast`` (Lightning's mixed
        precision): only the network runs under autocast."""
        if self.features.device != self.device:           # the policy was moved
            self.features = self.features.to(self.device)
        dtype = next(self.policy.parameters()).dtype
        with torch.autocast(self.device.type, enabled=False):
            return observe(state, self.features, dtype)

    def propose(self, state: ToursState, arrays: ProblemArrays, num_sets: int,
                rng: np.random.Generator) -> np.ndarray:
        """``int32 [S, num_sets, k]`` sets for the current solutions (customer ids 1..N
        of the kernel order, never a depot; distinct within a set, in pick order; no
        padding).

        Raises:
            InvalidInstanceError: ``arrays`` are not the instances given at construction.
            InvalidRemovalSetError: ``num_sets`` not an integer >= 1.
            ValueError: ``num_sets`` above ``1024`` (the policy's latents).
            TypeError: ``rng`` not a numpy ``Generator``.
        """
        num_sets = check_propose(state, arrays, num_sets)
        why = self._mismatch.get(arrays)
        if why is not None:
            raise InvalidInstanceError(
                f"PolicyDestroy.propose got ProblemArrays of other instances than those it "
                f"was built with ({why}); build it with the search's instances")
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"PolicyDestroy.propose: `rng` must be a numpy Generator "
                            f"(np.random.default_rng(seed)), got {rng!r}")
        seed = int(rng.integers(0, 2 ** 63 - 1))
        gen = torch.Generator(device=self.device).manual_seed(seed)
        was_training = self.policy.training
        self.policy.eval()
        amp = (torch.autocast(self.device.type) if self.autocast
               else contextlib.nullcontext())
        try:
            with torch.no_grad():
                # The encoding inputs in full precision; only the network under autocast.
                obs = self.observe(state)
                with amp:
                    sets, _, _ = self.policy(obs, num_sets, self.k, generator=gen,
                                             temperature=self.temperature)
        finally:
            self.policy.train(was_training)
        return sets.to(torch.int32).cpu().numpy()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(k={self.k}, problem={self.features.problem.value!r}, "
                f"symmetry={self.features.symmetry!r}, device={self.device})")
