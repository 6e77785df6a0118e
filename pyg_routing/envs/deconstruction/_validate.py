"""Input validation of the repair wrappers: numpy masks over all slots and sets at
once, errors naming the first offending slot / set / customer. Inputs are never
modified (a converted copy is returned where the dtype or layout differs)."""

from __future__ import annotations

import numpy as np

from pyg_routing.errors import RoutingError


class InvalidRemovalSetError(RoutingError):
    """A removal set, its uniforms or a search parameter is malformed."""


def _array(x, name: str) -> np.ndarray:
    if hasattr(x, "detach"):                         # a torch tensor
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x)
    except ValueError:                               # ragged nested lists
        raise InvalidRemovalSetError(f"`{name}` must be a rectangular numeric array (pad "
                                     f"short sets with -1), got ragged nested "
                                     f"{type(x).__name__}s") from None
    if arr.dtype == object or arr.dtype.kind in "USV":
        raise InvalidRemovalSetError(f"`{name}` must be a numeric array, got {type(x).__name__}"
                                     f" of {arr.dtype}")
    return arr


def check_count(value, name: str, low: int = 1) -> int:
    """``value`` as an ``int`` if it is an integer (Python or NumPy, not a bool) ``>= low``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise InvalidRemovalSetError(f"`{name}` must be an integer >= {low}, got {value!r}")
    return int(value)


def check_recreate_n(recreate_n: int) -> int:
    if isinstance(recreate_n, bool) or not isinstance(recreate_n, int | np.integer) \
            or recreate_n < 1:
        raise InvalidRemovalSetError(f"recreate_n must be an integer >= 1, got {recreate_n!r}")
    return int(recreate_n)


def as_generator(rng, name: str = "rng") -> np.random.Generator:
    """``np.random.default_rng(rng)`` (a Generator is returned as it is), refusing what
    it cannot seed from (a float, a string, a bool, a negative integer) by name."""
    if isinstance(rng, np.random.Generator):
        return rng
    what = (f"`{name}` must be a numpy Generator, a seed (an integer >= 0) or None, got "
            f"{rng!r}")
    if isinstance(rng, bool | float | str):
        raise TypeError(what)
    try:
        return np.random.default_rng(rng)
    except TypeError:
        raise TypeError(what) from None
    except ValueError:
        raise InvalidRemovalSetError(what) from None


def check_sets(sets, num_slots: int, n: int) -> np.ndarray:
    """``int32 [S, R, k]`` removal sets: ids 1..N, no depot, no duplicates within a set,
    -1 padding only at the end."""
    arr = _array(sets, "sets")
    if arr.ndim != 3 or arr.shape[0] != num_slots or arr.shape[2] < 1:
        raise InvalidRemovalSetError(f"`sets` must have shape [S={num_slots}, R, k >= 1], got "
                                     f"{arr.shape}")
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise InvalidRemovalSetError(f"`sets` must hold integer customer ids, got {arr.dtype}")
    a = arr.astype(np.int64)

    def fail(mask: np.ndarray, what: str) -> None:
        if mask.any():
            s, r, j = (int(x) for x in np.argwhere(mask)[0])
            raise InvalidRemovalSetError(f"slot {s}, set {r}, customer {int(a[s, r, j])} "
                                         f"(position {j}): {what}")

    fail(a == 0, "the depot cannot be removed")
    fail((a < -1) | (a > n), f"customer id out of range: customers are 1..{n} (-1 pads)")
    pad = a < 0
    fail(pad[..., :-1] & ~pad[..., 1:], "-1 padding must come after all customers of a set")
    srt = np.sort(a, axis=-1)
    dup = (srt[..., 1:] == srt[..., :-1]) & (srt[..., 1:] > 0)
    if dup.any():
        s, r, j = (int(x) for x in np.argwhere(dup)[0])
        c = int(srt[s, r, j])
        raise InvalidRemovalSetError(f"slot {s}, set {r}, customer {c}: the customer appears "
                                     f"twice in the set")
    return np.ascontiguousarray(a, dtype=np.int32)


def check_uniforms(u, set_shape: tuple[int, ...], width: int) -> np.ndarray:
    """``float64 [S, R, U]`` uniforms in [0, 1]."""
    arr = _array(u, "u")
    want = (*set_shape[:2], width)
    if arr.shape != want:
        raise InvalidRemovalSetError(f"`u` must have shape {want} (U = uniforms_per_set(k, "
                                     f"recreate_n)), got {arr.shape}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    bad = ~((arr >= 0.0) & (arr <= 1.0))
    if bad.any():
        s, r, j = (int(x) for x in np.argwhere(bad)[0])
        value = float(arr[s, r, j])
        raise InvalidRemovalSetError(f"slot {s}, set {r}: uniform {j} is {value!r}, not in "
                                     f"[0, 1]")
    return arr


def check_temperature(temperature, num_slots: int) -> np.ndarray:
    """``float64 [S]`` finite temperatures >= 0 (a scalar is broadcast)."""
    arr = _array(temperature, "temperature").astype(np.float64)
    if arr.ndim == 0:
        arr = np.full(num_slots, float(arr))
    if arr.shape != (num_slots,):
        raise InvalidRemovalSetError(f"`temperature` must be a scalar or have shape "
                                     f"[{num_slots}], got {arr.shape}")
    bad = ~(np.isfinite(arr) & (arr >= 0))
    if bad.any():
        s = int(np.argmax(bad))
        value = float(arr[s])
        raise InvalidRemovalSetError(f"slot {s}: temperature {value!r} must be finite and >= 0")
    return np.ascontiguousarray(arr)


def check_which(which, num_slots: int, num_sets: int) -> np.ndarray:
    """``int64 [S]`` set index per slot in -1..K-1 (-1 = leave the slot unchanged)."""
    arr = _array(which, "which")
    if arr.shape != (num_slots,) or not np.issubdtype(arr.dtype, np.integer) \
            or arr.dtype == bool:
        raise InvalidRemovalSetError(f"`which` must be an integer array of shape "
                                     f"[{num_slots}], got {arr.dtype} {arr.shape}")
    bad = (arr < -1) | (arr >= num_sets)
    if bad.any():
        s = int(np.argmax(bad))
        raise InvalidRemovalSetError(f"slot {s}: which = {int(arr[s])} is not a set index "
                                     f"(0..{num_sets - 1}, or -1 to skip)")
    return np.ascontiguousarray(arr, dtype=np.int64)
