"""Checks of the numeric options every generator takes (sizes, capacities, ...) and
of the instance count its ``sample`` draws.

Shared by the App. F generators (:mod:`~pyg_routing.data.paper_generators`) and
NDS's (:mod:`~pyg_routing.data.nds_generators`); it sits below both so neither
generator module has to import the other.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable
from typing import Any

import torch

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


def batch_count(value: object, name: str = "batch_size") -> int:
    """The number of instances a generator's ``sample`` draws: an integer ``>= 0`` (a
    Python or NumPy integer, or a 0-d integer tensor); a bool, a float (even ``2.0``),
    a string or a negative count is refused, naming it."""
    if isinstance(value, torch.Tensor) and value.dim() == 0 and not (
            value.is_floating_point() or value.is_complex() or value.dtype == torch.bool):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInstanceError(f"{name} (the number of instances) must be an integer "
                                   f">= 0, got {value!r}")
    if value < 0:
        raise InvalidInstanceError(f"{name} (the number of instances) must be >= 0, got "
                                   f"{value!r}")
    return int(value)


def make_with_options(factory: Callable[..., Any], num_customers: int, seed: int | None,
                      options: dict[str, Any], owner: str) -> Any:
    """``factory(num_customers, seed=seed, **options)``, refusing an option the factory
    does not take with :class:`InvalidInstanceError` naming it and the accepted ones
    (``owner`` says whose options they are, e.g. ``"preset 'nds', problem 'cvrp'"``)."""
    params = inspect.signature(factory).parameters
    accepted = [k for k, p in params.items() if k not in ("self", "num_customers", "seed")
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    unknown = [] if takes_any else [k for k in options if k not in accepted]
    if unknown:
        raise InvalidInstanceError(
            f"{owner} has no generator option {unknown[0]!r}; its options: "
            f"{', '.join(accepted) or 'none'}")
    return factory(num_customers, seed=seed, **options)


__all__ = ["batch_count", "count_option", "make_with_options", "number_option"]
