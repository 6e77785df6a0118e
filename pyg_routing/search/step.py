"""The step search: a batched improvement search with any step environment, policy
and acceptance rule (DACT's and N2S's test-time search, and their validation).

:class:`StepSearch` runs actions on every instance at once until its stopping
criterion (:mod:`.stop`) says stop (the only Python loop is over the steps), chosen
by a policy (anything with ``act(obs, greedy=, generator=)``, or called as
``policy(obs, ...)`` returning the action first) or uniformly at random among the
allowed actions; an acceptance rule (:mod:`.acceptance`) keeps or undoes each move,
and the best-so-far solution is tracked exactly. :func:`improve` is the same search
as one function call with a step count and/or a time limit.

Augmentation: all ``augment`` symmetric copies (:mod:`pyg_routing.envs.augment`)
start from the SAME solutions (built once on the original coordinates; or each from
its own with ``independent_starts``) and run as one batch of ``augment * B`` states;
the best solution over the copies is returned, costed in the original coordinates.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from pyg_routing.data.instances import RoutingInstances
from pyg_routing.data.type_checks import not_a_batch
from pyg_routing.envs.augment import random_symmetries
from pyg_routing.envs.base import BatchedState, ImprovementEnv
from pyg_routing.models.compiled import is_compiled
from pyg_routing.options import check_augment
from pyg_routing.search.acceptance import Acceptance, AlwaysAccept
from pyg_routing.search.result import SearchResult
from pyg_routing.search.stop import StoppingCriterion, budget, check_stop


def _check_search(instances: RoutingInstances, env: ImprovementEnv,
                  policy: nn.Module | None, augment: int, distinct: bool = True) -> None:
    """Refuse what the search cannot run, naming the argument."""
    if not isinstance(instances, RoutingInstances):
        raise not_a_batch(instances, "a step search (improve, StepSearch.run)")
    instances.check()
    env.check_problem(instances.problem)
    trained = getattr(policy, "problem", None)
    if trained is not None and trained != instances.problem.value:
        raise ValueError(f"the policy was built for {trained!r}, but the instances are "
                         f"{instances.problem.value!r}")
    check_augment(augment, distinct)


@dataclass
class StepSearch:
    """Batched step-by-step improvement (see the module docstring).

    Args:
        env: the step environment (default: the 2-opt environment of DACT).
        init: initial solutions (an entry of ``env.inits``; default its first).
        augment: number of symmetric copies (1..8) run together; the best solution
            over the copies is returned.
        greedy: argmax actions instead of sampling (policy only).
        acceptance: keeps or undoes each move (default :class:`AlwaysAccept`).
        independent_starts: with ``augment > 1``, every copy starts from its own
            initial solutions (``init`` drawn once per copy; N2S's diversity) instead
            of the same ones; ``initial_cost`` is then the first copy's.
        symmetries: ``"distinct"``: the copies are the first ``augment`` of the 8
            symmetries; ``"random"``: each copy a symmetry drawn at random, repeats
            allowed, any ``augment`` (N2S's random augmentations; with independent
            starts and sampling, repeated symmetries still search differently).
    """

    env: ImprovementEnv | None = None
    init: str | None = None
    augment: int = 1
    greedy: bool = False
    acceptance: Acceptance | None = None
    independent_starts: bool = False
    symmetries: str = "distinct"

    def __post_init__(self) -> None:
        if self.symmetries not in ("distinct", "random"):
            raise ValueError(f"symmetries must be 'distinct' or 'random', got "
                             f"{self.symmetries!r}")
        # refused when built, before any search
        check_augment(self.augment, distinct=self.symmetries == "distinct")

    def run(self, instances: RoutingInstances, policy: nn.Module | None,
            stop: StoppingCriterion, seed: int | None = None, *,
            generator: torch.Generator | None = None) -> SearchResult:
        """Improve the initial solutions of ``instances`` until ``stop``.

        Args:
            instances: ``B`` instances of a problem the environment supports.
            policy: an improvement policy, run under ``torch.no_grad()`` in eval
                mode; ``None``: uniformly random allowed actions (the baseline). A
                policy with a compiled search path (:mod:`pyg_routing.models.compiled`)
                first makes one greedy move that is neither timed nor kept: it compiles.
            stop: the budget (:mod:`.stop`); its progress drives the acceptance rule.
            seed: seeds a CPU generator of every random draw (the sampling, a random
                ``init``, the acceptance rule); ignored when ``generator`` is given.
            generator: the RNG itself (a CPU generator works on every device: the
                policy then samples from a device generator seeded from it).
        """
        t0 = time.perf_counter()
        env = self.env
        if env is None:
            from pyg_routing.envs.two_opt import TwoOptEnv

            env = TwoOptEnv()
        check_stop(stop)
        _check_search(instances, env, policy, self.augment, self.symmetries == "distinct")
        if generator is None and seed is not None:
            generator = torch.Generator().manual_seed(seed)
        init = self.init or env.inits[0]
        augment = self.augment
        acceptance = AlwaysAccept() if self.acceptance is None else self.acceptance
        always = isinstance(acceptance, AlwaysAccept)
        which = (random_symmetries(augment, generator)
                 if self.symmetries == "random" and augment != 1 else None)
        if augment != 1 and self.independent_starts:
            b = len(instances)
            starts = env.reset(
                instances[torch.arange(b, device=instances.device).repeat(augment)],
                init=init, generator=generator)
            base = starts[:b]
            state = env.augment(starts, augment, copies=True, which=which)
        else:
            base = env.reset(instances, init=init, generator=generator)
            state = env.augment(base, augment, which=which) if augment != 1 else base
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
                if isinstance(policy, nn.Module) and is_compiled(policy):
                    # torch.compile compiles on the first call of each shape (seconds to
                    # a minute): a greedy move (no random draw) compiles it untimed
                    w0 = time.perf_counter()
                    _policy_action(env, policy, state, True, None)
                    t0 += time.perf_counter() - w0
                while not stop(taken, time.perf_counter() - t0):
                    action = (env.random_action(state, generator=generator) if policy is None
                              else _policy_action(env, policy, state, self.greedy, sample_gen))
                    new, _ = env.step(state, action)
                    if not always:
                        progress = stop.progress(taken, time.perf_counter() - t0)
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
        return SearchResult(env.to_routes(best), best_cost, base.cost.clone(), taken,
                            time.perf_counter() - t0, best_copy=best_copy,
                            depots=env.route_depots(best))


def improve(instances: RoutingInstances, policy: nn.Module | None = None,
            steps: int | None = 100, init: str = "sweep", augment: int = 1,
            greedy: bool = False, generator: torch.Generator | None = None, *,
            env: ImprovementEnv | None = None, acceptance: Acceptance | None = None,
            time_limit: float | None = None, independent_starts: bool = False
            ) -> SearchResult:
    """:class:`StepSearch` in one call: ``steps`` moves per instance, or as many as fit
    in ``time_limit`` wall-clock seconds (the time of ``reset`` counts), or whichever
    ends first when both are given. The other arguments are :class:`StepSearch`'s and
    :meth:`StepSearch.run`'s."""
    for name, value in (("steps", steps), ("time_limit", time_limit)):
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, int | float)):
            raise ValueError(f"{name} must be a number, got {value!r}")
    if steps is not None and (not isinstance(steps, int) or steps < 0):
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit must be > 0 seconds, got {time_limit!r}")
    if steps is None and time_limit is None:
        raise ValueError("improve() needs steps or a time_limit")
    search = StepSearch(env, init, augment, greedy, acceptance, independent_starts)
    return search.run(instances, policy, budget(steps, time_limit), generator=generator)


def _policy_action(env: ImprovementEnv, policy: nn.Module, state: BatchedState, greedy: bool,
                   generator: torch.Generator | None) -> Tensor:
    params = policy.parameters() if hasattr(policy, "parameters") else iter(())
    obs = env.policy_observation(state, next((p.dtype for p in params), None))
    if hasattr(policy, "act"):            # no critic / log-prob / entropy needed
        return policy.act(obs, greedy=greedy, generator=generator)
    return policy(obs, greedy=greedy, generator=generator)[0]
