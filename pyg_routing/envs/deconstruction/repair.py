"""NDS's greedy repair of removal sets (Hottung et al. 2025), compiled with numba.

Rules (NDS's ``ModifiedSolution::removeCustomers`` / ``repair`` with
``insertInNewToursOnly = True`` and ``beta = 0``, ``remove_recreate_allImp`` /
``singleImp``), followed exactly, ties included, by the kernels and by the
pure-Python reference :mod:`.repair_reference`:

* **Removal set**: int32 ``[..., k]`` customer ids 1..N padded with -1 at the end.
  Every tour holding a removed customer is *touched*: rebuilt without them, and
  dropped if left empty. PCVRP: removing an unvisited customer is a no-op that
  nominates it for insertion.
* **Candidate tours**: the non-empty touched tours in order of the first appearance
  of their removed customers in the set, then the tours opened during the repair,
  in the order opened. Untouched tours are never candidates.
* **Greedy reinsertion** in the attempt's order: over candidates in order, over
  positions 0..len, the cost ``d(p,c) + d(c,n) - d(p,n)`` (``p``/``n`` = depot at the
  ends); the STRICT minimum over feasible positions wins (first on ties).
  Feasible: ``load + d_c <= C (1 + 1e-9)``; VRPTW also every arrival (c, the pushed
  successors, the depot return) by its window's end, with waiting allowed. No
  feasible position: open a new tour ``[c]``.
* **PCVRP**: cost ``Δdist - p_c``, inserted only if the best is < 0; otherwise a new
  tour ``[c]`` if ``2 d(0,c) - p_c < 0`` or a coin flip ``u < 0.5``; otherwise ``c``
  stays unvisited.
* **Best of recreate_n**: attempt 0 in the set's order, attempt ``a >= 1`` in a
  Fisher-Yates shuffle of the set's order (``for i in m-1..1: j = min(int(u (i+1)), i)``).
  Δ = Σ (length - prize) of the candidate tours in candidate order - Σ of the
  touched tours in order (each tour's values summed from the depot); the lowest Δ
  wins, the earliest on ties.
* **Several depots** (:mod:`.depots`): a tour's arcs out of and back into "the depot"
  are its own depot's; a new tour opens at the depot with the cheapest out-and-back
  trip among those with a vehicle to spare; an attempt needing a vehicle no depot has
  has ``Δ = +inf`` (never accepted, never committed).
* **SA** (:func:`apply_sets_sa`): the R sets of a slot are applied one after the
  other to the evolving solution; accept iff ``Δ < -T ln u`` (``Δ < 0`` at T = 0).

**Uniforms** (no RNG inside kernels): each set has a row of
``U = uniforms_per_set(k, recreate_n)`` float64 in [0, 1), laid out as

* ``[(a-1)(k-1) + (m-1-i)]``: Fisher-Yates step ``i`` (m-1 down to 1) of attempt
  ``a >= 1`` (``m`` = the set's actual size);
* ``[(R-1)(k-1) + a k + q]``: PCVRP coin flip of the ``q``-th inserted customer of
  attempt ``a``;
* ``[U - 1]``: the Metropolis uniform.
"""

from __future__ import annotations

import numpy as np

from pyg_routing.envs.deconstruction._kernels import (
    MODE_COMMIT,
    MODE_EVALUATE,
    MODE_SA,
    sets_kernel,
)
from pyg_routing.envs.deconstruction._validate import (
    check_recreate_n,
    check_sets,
    check_temperature,
    check_uniforms,
    check_which,
)
from pyg_routing.envs.deconstruction.compile_notice import announce_compilation
from pyg_routing.envs.deconstruction.problem import ProblemArrays
from pyg_routing.envs.deconstruction.state import ToursState, state_shapes_match
from pyg_routing.errors import InvalidSolutionError


def uniforms_per_set(k: int, recreate_n: int) -> int:
    """Length ``U`` of the uniform row of one removal set of width ``k`` (layout in the
    module docstring): ``(recreate_n - 1)(k - 1) + recreate_n k + 1``."""
    return (recreate_n - 1) * max(k - 1, 0) + recreate_n * k + 1


def draw_uniforms(rng: np.random.Generator | int | None, shape: tuple[int, ...], k: int,
                  recreate_n: int) -> np.ndarray:
    """``float64 [*shape, uniforms_per_set(k, recreate_n)]`` uniforms in [0, 1)."""
    gen = np.random.default_rng(rng)
    return gen.random((*shape, uniforms_per_set(k, recreate_n)))


def _prepare(state: ToursState, arrays: ProblemArrays, sets, u, recreate_n: int, rng):
    state_shapes_match(state, arrays)
    check_recreate_n(recreate_n)
    sets = check_sets(sets, len(state), state.num_customers)
    if u is None:
        u = draw_uniforms(rng, sets.shape[:2], sets.shape[2], recreate_n)
    u = check_uniforms(u, sets.shape, uniforms_per_set(sets.shape[2], recreate_n))
    return sets, u


def run_kernel(mode, state, best, arrays, sets, u, temperature, which, recreate_n, out,
               accepted, all_tours=False):
    """Call :func:`._kernels.sets_kernel` on validated inputs (``best`` None: no snapshots)."""
    b = best if best is not None else state
    announce_compilation(sets_kernel)
    sets_kernel(mode, all_tours, arrays.kind, arrays.dist, arrays.dist_in, arrays.demand,
                arrays.capacity, arrays.prize, arrays.schedule_tw, arrays.service, arrays.fleet,
                arrays.limited, state.inst,
                state.succ, state.pred, state.tour, state.first, state.last, state.size,
                state.load, state.length, state.prize, state.depot, state.cost,
                b.succ, b.pred, b.tour, b.first, b.last, b.size, b.load, b.length, b.prize,
                b.depot, b.cost, sets, u, temperature, which, recreate_n, out, accepted)


def apply_sets_sa(state: ToursState, best: ToursState, arrays: ProblemArrays,
                  sets: np.ndarray, u: np.ndarray | None = None,
                  temperature: np.ndarray | float = 0.0, recreate_n: int = 5,
                  rng: np.random.Generator | int | None = None) -> np.ndarray:
    """NDS's ``remove_recreate_allImp``: per slot, the sets one after the other, each
    repaired best-of-``recreate_n`` and accepted by the Metropolis rule.

    ``state`` is modified in place; ``best`` receives a slot's solution whenever its
    cost drops strictly below ``best.cost`` (start it as ``state.clone()``). Costs are
    recomputed from the per-tour values after every commit.

    Args:
        state, best: ``S`` slots each, same instances.
        arrays: the instances.
        sets: ``[S, R, k]`` int customer ids 1..N, padded with -1 at the end. Sets
            sampled for an older solution just remove those ids from where they are now.
        u: ``[S, R, U]`` uniforms (see the module docstring); drawn from ``rng`` if None.
        temperature: ``[S]`` or a scalar, >= 0.
        recreate_n: repair attempts per set (NDS: 5).

    Returns:
        ``int64 [S]`` number of accepted sets per slot.

    Raises:
        RoutingError subclasses naming the slot / set / customer for bad inputs.
    """
    state_shapes_match(best, arrays)
    if len(best) != len(state) or (best.inst != state.inst).any():
        raise InvalidSolutionError("`best` must have the same slots and instance rows as "
                                   "`state`")
    if any(np.shares_memory(a, b) for a, b in zip(state.arrays().values(),
                                                  best.arrays().values())):
        raise InvalidSolutionError("`best` must not share memory with `state`; pass "
                                   "state.clone()")
    sets, u = _prepare(state, arrays, sets, u, recreate_n, rng)
    temp = check_temperature(temperature, len(state))
    accepted = np.zeros(len(state), np.int64)
    run_kernel(MODE_SA, state, best, arrays, sets, u, temp, np.zeros(len(state), np.int64),
         recreate_n, np.zeros((1, 1)), accepted)
    return accepted


def evaluate_sets(state: ToursState, arrays: ProblemArrays, sets: np.ndarray,
                  u: np.ndarray | None = None, recreate_n: int = 5,
                  rng: np.random.Generator | int | None = None) -> np.ndarray:
    """NDS's ``singleImp`` scoring: for every set, the cost of its best-of-``recreate_n``
    repair of the SAME (unchanged) solution.

    Args:
        sets: ``[S, K, k]``; u: ``[S, K, U]`` (keep it to :func:`commit_sets` the winner).

    Returns:
        ``float64 [S, K]`` costs (``state.cost[s] + Δ``).
    """
    sets, u = _prepare(state, arrays, sets, u, recreate_n, rng)
    out = np.empty(sets.shape[:2], np.float64)
    run_kernel(MODE_EVALUATE, state, None, arrays, sets, u, np.zeros(len(state)),
         np.zeros(len(state), np.int64), recreate_n, out, np.zeros(len(state), np.int64))
    return out


def commit_sets(state: ToursState, arrays: ProblemArrays, sets: np.ndarray, u: np.ndarray,
                which: np.ndarray, recreate_n: int = 5) -> None:
    """Re-run set ``which[s]`` of each slot with the same uniforms as
    :func:`evaluate_sets` (so the same repair wins) and commit it unconditionally, as
    NDS does in training; ``which[s] = -1`` leaves slot ``s`` unchanged.
    """
    sets, u = _prepare(state, arrays, sets, u, recreate_n, None)
    which = check_which(which, len(state), sets.shape[1])
    run_kernel(MODE_COMMIT, state, None, arrays, sets, u, np.zeros(len(state)), which, recreate_n,
         np.zeros((1, 1)), np.zeros(len(state), np.int64))
