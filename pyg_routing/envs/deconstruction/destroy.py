"""Destroy providers: where NDS's removal sets come from.

Every provider implements :class:`DestroyProvider`: ``propose(state, arrays,
num_sets, rng)`` returns ``int32 [S, num_sets, k_max]`` removal sets (customer ids
1..N, no duplicates within a set, padded with -1 at the end), all sampled for the
CURRENT solutions of the ``S`` slots. The search then applies a slot's sets one after
the other (:func:`~pyg_routing.envs.deconstruction.repair.apply_sets_sa`), so a later
set may name customers that an earlier accepted set has moved; the repair just
removes them from where they are now. This is by design, as in NDS.

Providers here:

* :class:`RandomDestroy`: a uniformly random seed customer and its ``k - 1`` nearest
  customers (the "seed + 14 nearest" sets of the repair benchmark).
* :class:`SISRDestroy`: the SISR string removal (Christiaens & Vanden Berghe 2020) as
  NDS runs it for its non-learned baseline (``use_baseline_destroy``).

A learned provider (the NDS policy) implements the same protocol. Providers may keep
per-instance caches (e.g. neighbour tables) keyed on the ``ProblemArrays`` object:
:class:`PerArraysCache` holds them weakly and recomputes them when ``arrays.dist`` is
replaced; mutating ``arrays.dist`` in place is not detected.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pyg_routing.envs.deconstruction._sisr_kernel import (
    HEAD_UNIFORMS,
    STRING_UNIFORMS,
    sisr_kernel,
)
from pyg_routing.envs.deconstruction._validate import (
    InvalidRemovalSetError,
    as_generator,
    check_count,
    check_uniforms,
)
from pyg_routing.envs.deconstruction.compile_notice import announce_compilation
from pyg_routing.envs.deconstruction.problem import PCVRP, ProblemArrays
from pyg_routing.envs.deconstruction.state import ToursState, state_shapes_match


@runtime_checkable
class DestroyProvider(Protocol):
    """Something that proposes removal sets for the current solutions.

    Attributes:
        name: a short identifier (``"random"``, ``"sisr"``, ``"policy"``, ...).
    """

    name: str

    def propose(self, state: ToursState, arrays: ProblemArrays, num_sets: int,
                rng: np.random.Generator) -> np.ndarray:
        """``int32 [S, num_sets, k_max]`` removal sets for the current solutions of the
        ``S`` slots of ``state`` (ids 1..N, no duplicates within a set, -1 padding at
        the end)."""
        ...


class PerArraysCache:
    """Values computed once per :class:`ProblemArrays` object.

    Keyed on the object's identity, held weakly (an entry goes away with its arrays),
    and rebuilt when ``arrays.dist`` is a different array than when it was built. At
    most ``max_entries`` entries are kept (the oldest is dropped first). Not pickled:
    a copied provider starts with an empty cache.
    """

    def __init__(self, build: Callable[[ProblemArrays], Any], max_entries: int = 8) -> None:
        self._build = build
        self._max = max_entries
        self._entries: dict[int, tuple[weakref.ref, weakref.ref, Any]] = {}

    def get(self, arrays: ProblemArrays) -> Any:
        key = id(arrays)
        hit = self._entries.get(key)
        if hit is not None and hit[0]() is arrays and hit[1]() is arrays.dist:
            return hit[2]
        value = self._build(arrays)
        entries = self._entries
        self._entries.pop(key, None)
        while len(self._entries) >= self._max:
            self._entries.pop(next(iter(self._entries)))
        # The callback forgets the entry when the arrays object dies (its id may be reused).
        self._entries[key] = (weakref.ref(arrays, lambda _, k=key: entries.pop(k, None)),
                              weakref.ref(arrays.dist), value)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def __getstate__(self) -> dict:
        return {"_build": self._build, "_max": self._max, "_entries": {}}


def neighbour_table(arrays: ProblemArrays, width: int | None = None) -> np.ndarray:
    """``int32 [I, N+1, width]`` neighbour lists from ``arrays.dist``.

    Row ``c >= 1`` of instance ``i``: ``c`` itself, then the other customers by
    increasing ``dist[i, c]`` (the arcs OUT of ``c``: an asymmetric matrix is used as
    given), ties by id; row 0: the customers by distance from the
    depot. The depot never appears. ``width`` (default ``N``) keeps the first columns.
    One stable argsort per instance (``O(N^2 log N)``), done once per arrays object by
    the providers' caches; memory ``4 I (N+1) width`` bytes.
    """
    n = arrays.num_customers
    n1 = n + 1
    width = n if width is None else width
    out = np.empty((arrays.num_instances, n1, width), np.int32)
    cust = np.arange(n)
    for i in range(arrays.num_instances):       # one [N+1, N] key matrix at a time
        key = arrays.dist[i, :n1, 1:n1].copy()  # depot 0 and the customers (.depots)
        key[cust + 1, cust] = -np.inf            # a customer precedes even a co-located one
        out[i] = np.argsort(key, axis=1, kind="stable")[:, :width] + 1
    return out


def check_propose(state: ToursState, arrays: ProblemArrays, num_sets: int) -> int:
    """What every provider's ``propose`` refuses: ``state`` or ``arrays`` of another
    type (``TypeError``), a state that does not fit ``arrays``
    (:class:`InvalidSolutionError`), ``num_sets`` not an integer >= 1."""
    if not isinstance(arrays, ProblemArrays):
        raise TypeError(f"propose takes the instances' ProblemArrays "
                        f"(ProblemArrays.from_instances(instances)), got "
                        f"{type(arrays).__name__}")
    if not isinstance(state, ToursState):
        raise TypeError(f"propose takes the slots' ToursState, got {type(state).__name__}")
    state_shapes_match(state, arrays)
    return check_count(num_sets, "num_sets", 1)


def check_destroy(destroy: Any, where: str, extra: str = "") -> DestroyProvider:
    """``destroy`` if it is a :class:`DestroyProvider` object; a provider's name, its
    class or anything else is refused (``TypeError``) saying what to pass."""
    what = f"a destroy provider object such as SISRDestroy() or RandomDestroy(k=15){extra}"
    if isinstance(destroy, str):
        raise TypeError(f"{where} takes {what}, not a name: got {destroy!r}")
    if isinstance(destroy, type):
        raise TypeError(f"{where} takes {what}, not a class: got the class "
                        f"{destroy.__name__} (call it: {destroy.__name__}(...))")
    if not isinstance(destroy, DestroyProvider):
        raise TypeError(f"{where} takes {what} (a `name` and a propose(state, arrays, "
                        f"num_sets, rng) method), got {type(destroy).__name__}")
    return destroy


class RandomDestroy:
    """A uniformly random seed customer and its ``k - 1`` nearest customers.

    Each set is ``[seed, 1st nearest, ..., (k-1)-th nearest]`` (by ``arrays.dist[seed]``,
    ties by id, never the depot), whatever the solution (PCVRP: visited or not). The
    neighbour lists are cached per arrays object; sampling is one vectorized gather.

    Args:
        k: set size, ``>= 1``. ``k > N`` is refused by :meth:`propose` (no clamping: a
            silently smaller set would change what an experiment measures).
    """

    name = "random"

    def __init__(self, k: int = 15) -> None:
        self.k = check_count(k, "k", 1)
        self._tables = PerArraysCache(functools.partial(neighbour_table, width=self.k))

    def __repr__(self) -> str:
        return f"RandomDestroy(k={self.k})"

    def propose(self, state: ToursState, arrays: ProblemArrays, num_sets: int,
                rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``int32 [S, num_sets, k]`` sets (no padding).

        Raises:
            InvalidRemovalSetError: ``k > N``, ``num_sets < 1``.
            InvalidSolutionError: ``state`` does not fit ``arrays``.
        """
        num_sets = check_propose(state, arrays, num_sets)
        n = arrays.num_customers
        if self.k > n:
            raise InvalidRemovalSetError(f"RandomDestroy `k` = {self.k} exceeds the number "
                                         f"of customers N = {n}")
        table = self._tables.get(arrays)                            # [I, N+1, k]
        seeds = as_generator(rng).integers(1, n + 1, size=(len(state), num_sets))
        return np.ascontiguousarray(table[state.inst[:, None], seeds])


class SISRDestroy:
    """SISR string removal (Christiaens & Vanden Berghe 2020) with NDS's rules.

    Per set (NDS ``ModifiedSolution::destroy``, cvrp/Solution.cpp; the same code in
    the VRPTW and PCVRP copies, PCVRP with two additions):

    1. ``ls_max = min(L_max, ⌊visited customers / tours⌋)`` (per slot; 1 if no tour).
    2. ``ks_max = 4 c̄ / (1 + ls_max) - 1``; number of strings
       ``ks = ⌊1 + u_0 (ks_max + 0.9999 - 1)⌋`` (NDS: ``⌊U(1, ks_max + 0.9999)⌋`` in
       float32), at least 1 (for ``c̄ < (1 + ls_max) / 2`` NDS's range is reversed and
       may yield 0 strings).
    3. Seed: ``1 + ⌊u_1 N⌋``, any customer.
    4. Walk the seed's neighbour list (seed first, then by distance, ties by id; NDS's
       unstable ``std::sort`` leaves ties unspecified; the depot skipped). With an
       asymmetric cost matrix the matrix is used as given: the distance of ``v`` from
       the seed is ``dist[seed, v]``, the cost of the arc seed -> ``v``. Stop once
       ``ks`` tours are ruined (PCVRP: also once more than ``2 c̄`` customers are
       removed). A customer ``c`` whose tour is not yet ruined ruins it with one
       string:

       * ``lt_max = min(|t|, ls_max)``; length ``lt = ⌊1 + u (lt_max + 0.9999 - 1)⌋``.
       * Plain string if ``lt < 2`` or ``lt = lt_max`` or ``u < 0.5``; otherwise a split
         string: a window of ``lt + m`` customers whose inner ``m`` are kept, ``m = 1``
         grown by one while ``rand > alpha`` and ``m < |t| - lt`` (drawn from one
         uniform: ``m > j`` iff ``u < (1 - alpha)^j``).
       * Window start uniform in ``[lo, hi] = [max(0, p - w), min(p, |t| - w)]``
         (``p`` = position of ``c``, ``w`` = window size; ``lo + min(⌊u (hi - lo + 1)⌋,
         hi - lo)``), as NDS's code has it. NDS's lower end lets
         the window end just before ``c`` (the paper requires it to contain ``c``);
         ``strict_strings=True`` uses ``p - w + 1`` instead.
       * Removed: the window (string), or its first ``⌊lt/2⌋`` and last
         ``lt - ⌊lt/2⌋`` customers (split string).
    5. PCVRP: an unvisited customer met in the walk (the seed included) is removed on
       its own, as NDS does; it ruins no tour.

    Set order: strings in walk order, each in tour order (NDS returns an
    ``unordered_set``, whose order its repair's first attempt then uses).

    Uniforms (float64 in [0, 1], drawn outside the kernel): per set a row of
    ``U = 2 + 4 ks_bound`` with ``ks_bound = max(1, ⌊2 c̄ - 0.0001⌋)`` the most strings
    a set can cut (``ks_max`` is largest at ``ls_max = 1``): ``[0]`` ks, ``[1]`` seed,
    and for the ``j``-th string ``[2 + 4j + 0..3]`` = length, string-or-split coin,
    preserved length ``m``, window start. The layout is fixed: a set that cuts fewer
    strings, or a plain string that needs no coin or ``m``, leaves its entries unread.

    Set width ``k_max`` (:meth:`max_set_size`): CVRP/VRPTW
    ``max_{ls ≤ L_max} ks_bound(ls) · ls`` (50 for the defaults), PCVRP
    ``⌊2 c̄⌋ + L_max`` (40), both at most N.

    Args:
        c_bar: average number of removed customers ``c̄`` (> 0; NDS 15).
        l_max: maximum string length ``L_max`` (>= 1; NDS 10).
        alpha: split-string preservation parameter (in [0, 1]; NDS 0.01).
        strict_strings: every window contains the customer that triggered it.
    """

    name = "sisr"

    def __init__(self, c_bar: float = 15.0, l_max: int = 10, alpha: float = 0.01,
                 strict_strings: bool = False) -> None:
        if isinstance(c_bar, bool) or not isinstance(c_bar, int | float | np.number) \
                or not math.isfinite(c_bar) or c_bar <= 0:
            raise InvalidRemovalSetError(f"SISR `c_bar` must be a finite number > 0, got "
                                         f"{c_bar!r}")
        if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.number) \
                or not 0.0 <= alpha <= 1.0:
            raise InvalidRemovalSetError(f"SISR `alpha` must be in [0, 1], got {alpha!r}")
        if not isinstance(strict_strings, bool):
            raise InvalidRemovalSetError(f"SISR `strict_strings` must be a bool, got "
                                         f"{strict_strings!r}")
        self.c_bar = float(c_bar)
        self.l_max = check_count(l_max, "l_max", 1)
        self.alpha = float(alpha)
        self.strict_strings = strict_strings
        self._tables = PerArraysCache(neighbour_table)

    def __repr__(self) -> str:
        return (f"SISRDestroy(c_bar={self.c_bar:g}, l_max={self.l_max}, alpha={self.alpha:g}, "
                f"strict_strings={self.strict_strings})")

    # ------------------------------------------------------------------ bounds
    def ks_bound(self, ls_max: int = 1) -> int:
        """Most strings a set can cut when the maximum string length is ``ls_max``."""
        ks_max = 4.0 * self.c_bar / (1.0 + ls_max) - 1.0
        # The kernel's ⌊1 + u x⌋ grows with u < 1, so u = 1 bounds it.
        return max(1, int(1.0 + ((ks_max + 0.9999) - 1.0)))

    @property
    def uniforms_per_set(self) -> int:
        """``U = 2 + 4 ks_bound(1)``: the uniforms of one set (see the class docstring)."""
        return HEAD_UNIFORMS + STRING_UNIFORMS * self.ks_bound(1)

    def max_set_size(self, kind: int, num_customers: int) -> int:
        """``k_max``: an upper bound on the size of any set for this problem kind."""
        top = min(self.l_max, num_customers)
        if kind == PCVRP:
            # The walk stops once more than 2 c̄ are removed; the last step adds at most
            # one string (<= ls_max) or one unvisited customer.
            bound = math.floor(2.0 * self.c_bar) + top
        else:
            bound = max(self.ks_bound(ls) * ls for ls in range(1, top + 1))
        return max(1, min(num_customers, bound))

    # ------------------------------------------------------------------ sampling
    def draw_uniforms(self, num_slots: int, num_sets: int,
                      rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``float64 [S, num_sets, U]`` uniforms for :meth:`sets_from_uniforms`."""
        shape = (check_count(num_slots, "num_slots", 0), check_count(num_sets, "num_sets", 1))
        return as_generator(rng).random((*shape, self.uniforms_per_set))

    def sets_from_uniforms(self, state: ToursState, arrays: ProblemArrays,
                           u: np.ndarray) -> np.ndarray:
        """``int32 [S, R, k_max]`` SISR sets for the current solutions from ``u [S, R, U]``
        (numba, slots in parallel).

        Raises:
            InvalidRemovalSetError: ``u`` of the wrong shape or outside [0, 1]; a CVRP or
                VRPTW state with an unvisited customer.
            InvalidSolutionError: ``state`` does not fit ``arrays``.
        """
        state_shapes_match(state, arrays)
        u = np.asarray(u)
        if u.ndim != 3:
            raise InvalidRemovalSetError(f"`u` must have shape [S, R, U={self.uniforms_per_set}]"
                                         f", got {u.shape}")
        return self._run(state, arrays, check_uniforms(u, (len(state), u.shape[1]),
                                                       self.uniforms_per_set))

    def _run(self, state: ToursState, arrays: ProblemArrays, u: np.ndarray) -> np.ndarray:
        """The kernel on a state that fits ``arrays`` and valid ``float64 [S, R, U]``."""
        n = arrays.num_customers
        if arrays.kind != PCVRP:
            missing = np.argwhere(state.tour[:, 1:] < 0)
            if len(missing):
                s, c = (int(x) for x in missing[0])
                raise InvalidRemovalSetError(f"slot {s}: customer {c + 1} is in no tour, which "
                                             f"only PCVRP allows")
        out = np.full((len(state), u.shape[1], self.max_set_size(arrays.kind, n)), -1,
                      np.int32)
        table = self._tables.get(arrays)
        announce_compilation(sisr_kernel)
        sisr_kernel(int(arrays.kind), table, state.inst, state.tour, state.succ, state.first,
                    state.size, self.c_bar, self.l_max, self.alpha, self.strict_strings, u, out)
        return out

    def propose(self, state: ToursState, arrays: ProblemArrays, num_sets: int,
                rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``int32 [S, num_sets, k_max]`` SISR sets (see the class docstring).

        Raises:
            InvalidRemovalSetError: ``num_sets < 1``.
            InvalidSolutionError: ``state`` does not fit ``arrays``.
        """
        num_sets = check_propose(state, arrays, num_sets)
        # Freshly drawn uniforms are valid by construction: skip their check.
        return self._run(state, arrays, self.draw_uniforms(len(state), num_sets, rng))
