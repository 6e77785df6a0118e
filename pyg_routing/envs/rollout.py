"""Batched improvement rollouts on the 2-opt environment, with 8-fold augmentation.

:func:`improve` runs ``steps`` 2-opt moves on every instance at once (the only
Python loop is over the steps), chosen by a policy (``DACTPolicy``-like: called
as ``policy(obs, greedy=..., generator=...)`` and returning the action first) or
uniformly at random among the allowed moves.

Augmentation: the 8 symmetries of the square (4 rotations by 90 degrees and 4
reflections) applied to the coordinates relative to the depot preserve all
distances, so the same routes have the same cost in every copy. All copies start
from the SAME routes (built once on the original coordinates) and run as one
batch of ``augment * B`` states; the best solution over the copies is returned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields, replace

import torch
from torch import Tensor, nn

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.envs.observation import observe
from pyg_routing.envs.state import TwoOptState, cycle_cost
from pyg_routing.envs.two_opt import action_mask, random_action, reset, step, to_routes

#: ``(a, b, c, d)``: ``(dx, dy) -> (a dx + b dy, c dx + d dy)``; identity first.
SYMMETRIES = (
    (1, 0, 0, 1), (0, -1, 1, 0), (-1, 0, 0, -1), (0, 1, -1, 0),    # rotations
    (1, 0, 0, -1), (-1, 0, 0, 1), (0, 1, 1, 0), (0, -1, -1, 0),    # reflections
)


@dataclass
class ImproveResult:
    """Outcome of :func:`improve` on ``B`` instances.

    Attributes:
        routes: best routes per instance in original node ids (customers
            ``1 .. N-1``, depot omitted), for ``RoutingData.from_routes``.
        best_cost: ``[B]`` cost of ``routes`` in the original coordinates.
        initial_cost: ``[B]`` cost of the initial solutions.
        seconds: wall-clock time of the whole call.
        best_copy: ``[B]`` long, the augmentation copy that found ``routes``.
    """

    routes: list[list[list[int]]]
    best_cost: Tensor
    initial_cost: Tensor
    seconds: float
    best_copy: Tensor


def augment_positions(pos: Tensor, num: int = 8) -> Tensor:
    """The first ``num`` symmetries of ``pos [B, M, 2]`` about node 0 (the depot),
    stacked copy-major: ``[num * B, M, 2]`` (row ``c * B + b`` = copy ``c`` of ``b``)."""
    if not 1 <= num <= len(SYMMETRIES):
        raise ValueError(f"augment must be in 1..{len(SYMMETRIES)}, got {num}")
    depot = pos[:, :1]
    d = pos - depot
    mats = torch.tensor(SYMMETRIES[:num], dtype=pos.dtype, device=pos.device).view(num, 1, 1, 2, 2)
    out = (mats @ d.unsqueeze(-1).unsqueeze(0)).squeeze(-1) + depot.unsqueeze(0)
    return out.reshape(num * pos.size(0), *pos.shape[1:])


def augment_state(state: TwoOptState, num: int = 8) -> TwoOptState:
    """``num`` copies of ``state`` (copy-major, ``[num * B, ...]``) with transformed
    coordinates and the same solutions; costs recomputed in the new coordinates."""
    rep = {f.name: getattr(state, f.name).repeat(num, *[1] * (getattr(state, f.name).dim() - 1))
           for f in fields(state) if isinstance(getattr(state, f.name), Tensor)}
    rep["pos"] = augment_positions(state.pos, num)
    rep["cost"] = cycle_cost(rep["pos"], rep["order"])
    rep["best_cost"] = cycle_cost(rep["pos"], rep["best_order"])
    return replace(state, **rep)


def _policy_action(policy: nn.Module, state: TwoOptState, greedy: bool,
                   generator: torch.Generator | None) -> Tensor:
    mask = action_mask(state)
    stuck = ~mask.flatten(1).any(1)
    if bool(stuck.any()):                 # no allowed move: the no-op (0, 0)
        mask[stuck, 0, 0] = True
    obs = observe(state, policy, mask)
    if hasattr(policy, "act"):            # DACTPolicy: no critic / log-prob / entropy
        return policy.act(obs, greedy=greedy, generator=generator)
    return policy(obs, greedy=greedy, generator=generator)[0]


def improve(instances: RoutingInstances, policy: nn.Module | None = None, steps: int = 100,
            init: str = "sweep", augment: int = 1, greedy: bool = False,
            generator: torch.Generator | None = None) -> ImproveResult:
    """Improve the initial solutions of ``instances`` by ``steps`` 2-opt moves each.

    Args:
        instances: ``B`` TSP / CVRP / VRPTW instances.
        policy: a ``DACTPolicy`` (anything with ``.encoder`` and either
            ``policy.act(obs, greedy=, generator=) -> action [B, 2]`` or
            ``policy(obs, greedy=, generator=) -> (action [B, 2], ...)``), run under
            ``torch.no_grad()``; ``None``: uniformly random allowed moves.
        steps: moves per instance.
        init: initial solutions (see :func:`~pyg_routing.envs.reset`).
        augment: number of symmetric copies (1..8) run together; the best
            solution over the copies is returned.
        greedy: argmax moves instead of sampling (policy only).
        generator: RNG of the sampling and of ``init="random"`` (a CPU generator
            works on every device: the policy then samples from a device
            generator seeded from it).

    Returns:
        :class:`ImproveResult` with the best routes and costs per instance.
    """
    t0 = time.perf_counter()
    base = reset(instances, init=init, generator=generator)
    b = len(base)
    state = augment_state(base, augment) if augment != 1 else base
    sample_gen = generator
    if generator is not None and policy is not None and generator.device != state.pos.device:
        # init draws on the CPU generator; the policy samples on the state's device
        seed = int(torch.randint(2**62, (1,), generator=generator))
        sample_gen = torch.Generator(device=state.pos.device).manual_seed(seed)
    was_training = policy.training if policy is not None else False
    if policy is not None:
        policy.eval()
    try:
        with torch.no_grad():
            for _ in range(steps):
                if policy is None:
                    action = random_action(state, generator=generator)
                else:
                    action = _policy_action(policy, state, greedy, sample_gen)
                state, _ = step(state, action)
    finally:
        if policy is not None:
            policy.train(was_training)
    # Costs of every copy's best cycle in the ORIGINAL coordinates (exact ties).
    orders = state.best_order.view(augment, b, -1)
    costs = cycle_cost(base.pos.repeat(augment, 1, 1), state.best_order).view(augment, b)
    best_cost, best_copy = costs.min(0)
    best_order = orders.gather(0, best_copy.view(1, b, 1).expand(1, b, orders.size(-1)))[0]
    routes = to_routes(replace(base, best_order=best_order))
    return ImproveResult(routes, best_cost, base.cost.clone(), time.perf_counter() - t0,
                         best_copy)
