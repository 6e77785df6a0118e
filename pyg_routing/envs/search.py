"""Batched improvement search with any environment, policy and acceptance rule.

:func:`improve` runs ``steps`` actions on every instance at once (the only Python
loop is over the steps), chosen by a policy (anything with ``act(obs, greedy=,
generator=)``, or called as ``policy(obs, ...)`` returning the action first) or
uniformly at random among the allowed actions; an acceptance rule
(:mod:`.acceptance`) keeps or undoes each move, and the best-so-far solution is
tracked exactly.

Augmentation: all ``augment`` symmetric copies (:mod:`.augment`) start from the SAME
solutions (built once on the original coordinates; or each from its own with
``independent_starts``) and run as one batch of ``augment * B`` states; the best
solution over the copies is returned, costed in
the original coordinates.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.envs.acceptance import Acceptance, AlwaysAccept
from pyg_routing.envs.augment import check_augment
from pyg_routing.envs.base import BatchedState, ImprovementEnv


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
        steps: search steps taken (fewer than asked when ``time_limit`` stopped it).
    """

    routes: list[list[list[int]]]
    best_cost: Tensor
    initial_cost: Tensor
    seconds: float
    best_copy: Tensor
    steps: int = 0


def _check_search(instances: RoutingInstances, env: ImprovementEnv, policy: nn.Module | None,
                  steps: int | None, time_limit: float | None, augment: int) -> None:
    """Refuse what the search cannot run, naming the argument."""
    if not isinstance(instances, RoutingInstances):
        raise TypeError(f"improve() takes RoutingInstances (a generator's sample), got "
                        f"{type(instances).__name__}")
    instances.check()
    env.check_problem(instances.problem)
    trained = getattr(policy, "problem", None)
    if trained is not None and trained != instances.problem.value:
        raise ValueError(f"the policy was built for {trained!r}, but the instances are "
                         f"{instances.problem.value!r}")
    if steps is None and time_limit is None:
        raise ValueError("improve() needs steps or a time_limit")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int)
                              or steps < 0):
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit must be > 0 seconds, got {time_limit!r}")
    check_augment(augment)


def improve(instances: RoutingInstances, policy: nn.Module | None = None,
            steps: int | None = 100, init: str = "sweep", augment: int = 1,
            greedy: bool = False, generator: torch.Generator | None = None, *,
            env: ImprovementEnv | None = None, acceptance: Acceptance | None = None,
            time_limit: float | None = None, independent_starts: bool = False
            ) -> ImproveResult:
    """Improve the initial solutions of ``instances`` by ``steps`` moves each.

    Args:
        instances: ``B`` instances of a problem ``env`` supports (validated).
        policy: an improvement policy (``policy.act(obs, greedy=, generator=)``, or
            ``policy(obs, greedy=, generator=)`` returning the action first), run
            under ``torch.no_grad()`` in eval mode; ``None``: uniformly random
            allowed actions.
        steps: moves per instance (``None``: until ``time_limit``).
        init: initial solutions (an entry of ``env.inits``).
        augment: number of symmetric copies (1..8) run together; the best
            solution over the copies is returned.
        greedy: argmax actions instead of sampling (policy only).
        generator: RNG of the sampling, of ``init="random"`` and of the acceptance
            rule (a CPU generator works on every device: the policy then samples
            from a device generator seeded from it).
        env: the environment (default: the 2-opt environment of DACT).
        acceptance: keeps or undoes each move (default :class:`AlwaysAccept`).
        time_limit: wall-clock seconds; the search stops after the step that
            passes it (the time of ``reset`` counts).
        independent_starts: with ``augment > 1``, every copy starts from its own
            initial solutions (``init`` drawn once per copy; N2S's diversity) instead
            of the same ones; ``initial_cost`` is then the first copy's.

    Returns:
        :class:`ImproveResult` with the best routes and costs per instance.
    """
    t0 = time.perf_counter()
    if env is None:
        from pyg_routing.envs.two_opt import TwoOptEnv

        env = TwoOptEnv()
    _check_search(instances, env, policy, steps, time_limit, augment)
    acceptance = AlwaysAccept() if acceptance is None else acceptance
    always = isinstance(acceptance, AlwaysAccept)
    if augment != 1 and independent_starts:
        b = len(instances)
        starts = env.reset(instances[torch.arange(b, device=instances.device).repeat(augment)],
                           init=init, generator=generator)
        base = starts[:b]
        state = env.augment(starts, augment, copies=True)
    else:
        base = env.reset(instances, init=init, generator=generator)
        state = env.augment(base, augment) if augment != 1 else base
    sample_gen = generator
    if generator is not None and policy is not None and generator.device != state.device:
        # init draws on the CPU generator; the policy samples on the state's device
        seed = int(torch.randint(2**62, (1,), generator=generator))
        sample_gen = torch.Generator(device=state.device).manual_seed(seed)
    was_training = policy.training if policy is not None else False
    if policy is not None:
        policy.eval()
    taken = 0
    try:
        with torch.no_grad():
            while steps is None or taken < steps:
                if time_limit is not None and time.perf_counter() - t0 > time_limit:
                    break
                action = (env.random_action(state, generator=generator) if policy is None
                          else _policy_action(env, policy, state, greedy, sample_gen))
                new, _ = env.step(state, action)
                if not always:
                    progress = (taken / steps if steps else 0.0) if time_limit is None \
                        else (time.perf_counter() - t0) / time_limit
                    new = env.accept(state, new, acceptance(state.cost, new.cost, progress,
                                                            generator))
                state = new
                taken += 1
    finally:
        if policy is not None:
            policy.train(was_training)
    if augment != 1:
        best, best_cost, best_copy = env.best_of_copies(state, base, augment)
    else:
        best = state
        best_cost = env.solution_cost(state, base.pos, best=True)
        best_copy = torch.zeros(len(base), dtype=torch.long, device=base.device)
    return ImproveResult(env.to_routes(best), best_cost, base.cost.clone(),
                         time.perf_counter() - t0, best_copy, taken)


def _policy_action(env: ImprovementEnv, policy: nn.Module, state: BatchedState, greedy: bool,
                   generator: torch.Generator | None) -> Tensor:
    obs = env.policy_observation(state, policy)
    if hasattr(policy, "act"):            # no critic / log-prob / entropy needed
        return policy.act(obs, greedy=greedy, generator=generator)
    return policy(obs, greedy=greedy, generator=generator)[0]
