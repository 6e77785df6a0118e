"""NDS's start solutions (``create_starting_solution`` in NDS's Operations.cpp).

Every slot starts from ``N`` singleton tours (PCVRP too: every customer visited).
Then ``rounds`` times: remove a uniformly random subset of ``m`` customers and
reinsert them greedily, in the subset's (random) order, into ALL tours, untouched
ones included (NDS's ``insertInNewToursOnly = False``, one attempt), accepting only
strict improvements (``T = 0``). The random subsets and the PCVRP coin flips are
drawn outside the kernel from a numpy ``Generator``; the kernel runs slots in
parallel.

All-tours candidate order (NDS scans its untouched tours, then its new tours): the
untouched tours ordered by their first customer (NDS: vector order, an arbitrary
label), then the rebuilt touched tours in order of first appearance, then, in the
order they arise, the tours opened and the untouched tours that received a
customer (such a tour leaves the untouched list and is appended, as in NDS).

Several depots (:mod:`.depots`): each singleton tour leaves from its customer's
cheapest depot (out and back). Where the instance limits each depot's vehicles, the
singletons would break the limits, so the rounds start instead from one greedy
all-tours repair of every customer, farthest first (decreasing cheapest out-and-back
trip, ties by id), new tours opening at the cheapest depot with a vehicle to spare; an
instance whose customers that construction cannot fit is refused by name.

Round counts (NDS's configs, ``nb_iterations`` and ``nb_nodes_ratio``, with
``m = int(N * ratio)``): 50 rounds removing 15 % for N <= 100 (every train config at
N = 100 and the CVRP/PCVRP eval configs; NDS's VRPTW-100 eval config uses 100 /
25 %), 100 rounds removing 25 % otherwise (every config at N >= 500).
"""

from __future__ import annotations

import numpy as np

from pyg_routing.envs.deconstruction._kernels import MODE_COMMIT, MODE_SA
from pyg_routing.envs.deconstruction._validate import (
    InvalidRemovalSetError,
    _array,
    as_generator,
    check_count,
    check_sets,
    check_uniforms,
)
from pyg_routing.envs.deconstruction.depots import cheapest_depots, depot_trips
from pyg_routing.envs.deconstruction.problem import ProblemArrays
from pyg_routing.envs.deconstruction.repair import run_kernel, uniforms_per_set
from pyg_routing.envs.deconstruction.state import ToursState
from pyg_routing.errors import InfeasibleSolutionError, where


def start_parameters(num_customers: int) -> tuple[int, int]:
    """``(rounds, m)`` of NDS's configs for ``N`` customers (see the module docstring)."""
    rounds, ratio = (50, 0.15) if num_customers <= 100 else (100, 0.25)
    return rounds, int(num_customers * ratio)


def draw_start_randomness(num_slots: int, num_customers: int, rounds: int, num_removed: int,
                          rng: np.random.Generator | int | None = None
                          ) -> tuple[np.ndarray, np.ndarray]:
    """Random removal subsets and uniforms for :func:`start_solutions`.

    Returns:
        ``removal int32 [S, rounds, m]``: per round the first ``m`` entries of a uniform
        random permutation of ``1..N`` (a random subset in random order);
        ``u float64 [S, rounds, m + 1]``: ``uniforms_per_set(m, 1)`` per round (PCVRP coin
        flips, then an unused Metropolis slot).
    """
    gen = np.random.default_rng(rng)
    removal = np.empty((num_slots, rounds, num_removed), np.int32)
    for s in range(num_slots):  # one [rounds, N] draw per slot bounds the memory
        keys = gen.random((rounds, num_customers))
        removal[s] = np.argsort(keys, axis=1)[:, :num_removed] + 1
    u = gen.random((num_slots, rounds, uniforms_per_set(num_removed, 1)))
    return removal, u


def start_solutions(arrays: ProblemArrays, inst: np.ndarray, rounds: int | None = None,
                    num_removed: int | None = None, rng: np.random.Generator | int | None = None,
                    removal: np.ndarray | None = None, u: np.ndarray | None = None) -> ToursState:
    """NDS start solutions for slots ``inst [S]`` (instance row of each slot).

    Args:
        arrays: the instances.
        inst: ``[S]`` instance rows (e.g. ``np.repeat(np.arange(B), 8)``).
        rounds, num_removed: default :func:`start_parameters`.
        rng: seed or Generator for :func:`draw_start_randomness`.
        removal, u: pre-drawn randomness (overrides ``rng``; both or neither), shapes as
            returned by :func:`draw_start_randomness`.

    Raises:
        TypeError: ``arrays`` not :class:`ProblemArrays`; ``rng`` not a Generator or seed.
        InvalidRemovalSetError: ``inst`` not integer instance rows (floats and bools are
            refused, not rounded), counts that are not integers in range, only one of
            ``removal`` and ``u``, or malformed ones (naming slot, round and customer).
    """
    if not isinstance(arrays, ProblemArrays):
        raise TypeError(f"start_solutions takes the instances' ProblemArrays "
                        f"(ProblemArrays.from_instances(instances)), got {type(arrays).__name__}")
    n = arrays.num_customers
    inst = _array(inst, "inst")
    rows = f"instance rows in 0..{arrays.num_instances - 1}"
    if inst.ndim != 1 or inst.size and (inst.dtype == bool
                                        or not np.issubdtype(inst.dtype, np.integer)):
        raise InvalidRemovalSetError(f"`inst` must be a 1-D integer array of {rows}, got "
                                     f"{inst.dtype} {inst.shape}")
    bad = (inst < 0) | (inst >= arrays.num_instances)
    if bad.any():
        s = int(np.argmax(bad))
        raise InvalidRemovalSetError(f"slot {s}: `inst` = {int(inst[s])} is not one of the "
                                     f"{rows}")
    inst = np.ascontiguousarray(inst, dtype=np.int32)
    d_rounds, d_m = start_parameters(n)
    rounds = d_rounds if rounds is None else check_count(rounds, "rounds", 0)
    m = d_m if num_removed is None else check_count(num_removed, "num_removed", 0)
    if not 0 <= m <= n:
        raise InvalidRemovalSetError(f"need 0 <= num_removed <= N = {n}, got {m}")
    if (removal is None) != (u is None):
        raise InvalidRemovalSetError("give both `removal` and `u` (pre-drawn randomness), or "
                                     "neither")
    if removal is None:
        removal, u = draw_start_randomness(len(inst), n, rounds, m, as_generator(rng))
    removal = _array(removal, "removal")
    if removal.ndim != 3 or removal.shape[:2] != (len(inst), rounds):
        raise InvalidRemovalSetError(f"`removal` must have shape [S={len(inst)}, rounds="
                                     f"{rounds}, m], got {removal.shape}")
    if removal.shape[2] > 0:
        removal = check_sets(removal, len(inst), n)
    removal = np.ascontiguousarray(removal, dtype=np.int32)
    u = check_uniforms(u, removal.shape, uniforms_per_set(removal.shape[2], 1))
    state = construction(arrays, inst) if arrays.limited else singletons(arrays, inst)
    # A round is an SA step at T = 0 with one all-tours attempt, so the start solutions
    # run through the same compiled driver as the search (accepted iff Δ < 0).
    run_kernel(MODE_SA, state, None, arrays, removal, u, np.zeros(len(inst)),
         np.zeros(len(inst), np.int64), 1, np.zeros((1, 1)), np.zeros(len(inst), np.int64),
         all_tours=True)
    return state


def singletons(arrays: ProblemArrays, inst: np.ndarray) -> ToursState:
    """Every customer alone in its own tour (customer ``c`` in tour slot ``c - 1``), at
    its cheapest depot."""
    n = arrays.num_customers
    state = ToursState.empty(len(inst), n, inst)
    cust = np.arange(1, n + 1, dtype=np.int32)
    state.tour[:, 1:] = cust - 1
    state.first[:] = cust
    state.last[:] = cust
    state.size[:] = 1
    if arrays.num_depots > 1:
        state.depot[:] = cheapest_depots(arrays.dist, arrays.num_depots)[inst, 1:]
    state.recompute_costs(arrays)
    return state


def construction_order(arrays: ProblemArrays) -> np.ndarray:
    """``int32 [I, N]``: customers farthest first by their cheapest out-and-back trip
    ``d(D, c) + d(c, D)``, ties by id (the limited-fleet construction's order)."""
    trip = depot_trips(arrays.dist, arrays.num_depots)[:, :, 1:].min(axis=1)     # [I, N]
    return (np.argsort(-trip, axis=1, kind="stable") + 1).astype(np.int32)


def construction(arrays: ProblemArrays, inst: np.ndarray) -> ToursState:
    """Every customer inserted greedily into the tours opened so far, farthest first
    (:func:`construction_order`), by one all-tours repair of the empty solution: the
    limited-fleet start.

    Raises:
        InfeasibleSolutionError: naming an instance whose customers the construction
            cannot fit within its depots' vehicles.
    """
    n = arrays.num_customers
    state = ToursState.empty(len(inst), n, inst)
    sets = np.ascontiguousarray(construction_order(arrays)[inst][:, None, :])
    u = np.zeros((len(inst), 1, uniforms_per_set(n, 1)))
    run_kernel(MODE_COMMIT, state, None, arrays, sets, u, np.zeros(len(inst)),
               np.zeros(len(inst), np.int64), 1, np.zeros((1, 1)),
               np.zeros(len(inst), np.int64), all_tours=True)
    left = (state.tour[:, 1:] < 0).any(axis=1)
    if left.any():
        i = int(inst[int(np.argmax(left))])
        raise InfeasibleSolutionError(
            f"{where(i)}NDS's start cannot fit every customer within the depots' vehicles "
            f"{arrays.fleet[i].tolist()} (greedy insertion, farthest customer first)")
    return state
