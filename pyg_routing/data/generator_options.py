"""Checks of the numeric options every generator takes (sizes, capacities, ...).

Shared by the App. F generators (:mod:`~pyg_routing.data.paper_generators`) and
NDS's (:mod:`~pyg_routing.data.nds_generators`); it sits below both so neither
generator module has to import the other.
"""

from __future__ import annotations

import math

from pyg_routing.errors import InvalidInstanceError


def number_option(value: object, option: str) -> float:
    """A finite real generator option, else :class:`InvalidInstanceError`."""
    try:
        if isinstance(value, bool):
            raise TypeError
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidInstanceError(f"{option} must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise InvalidInstanceError(f"{option} must be a finite number, got {value!r}")
    return x


def count_option(value: object, option: str) -> int:
    """A whole-number generator option (``20`` or ``20.0``, not ``20.5``)."""
    x = number_option(value, option)
    if not x.is_integer():
        raise InvalidInstanceError(f"{option} must be a whole number, got {value!r}")
    return int(x)


__all__ = ["count_option", "number_option"]
