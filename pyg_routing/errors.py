"""Typed errors raised by pyg_routing.

Every error names what is wrong and where (instance, route, node), so a user can
find the offending input without reading a stack trace from inside torch.
"""

from __future__ import annotations


class RoutingError(ValueError):
    """Base class of every error this library raises about its inputs."""


class InvalidInstanceError(RoutingError):
    """An instance is malformed: bad shapes, NaN/inf values, negative demand,
    a demand above capacity, a time window that opens after it closes, ..."""


class InvalidSolutionError(RoutingError):
    """A solution is structurally broken: a customer missing or visited twice,
    a node id out of range, the depot inside a route, an empty route, ..."""


class UnsupportedProblemError(RoutingError, NotImplementedError):
    """An environment, a search or a backbone was given a problem or a variant of one
    (an explicit matrix, open routes, several depots) that it does not support."""


class InfeasibleSolutionError(RoutingError):
    """A structurally valid solution violates a constraint of its problem:
    capacity, a time window, or a pickup after its delivery."""


class ZeroLengthRouteError(InvalidSolutionError):
    """A route has length zero (all of its customers sit on the depot), so its
    distance-normalized quantities are undefined."""


class NoSolutionError(RoutingError):
    """A solution-dependent quantity was asked of an instance with no solution."""


class UnknownInstanceError(RoutingError, FileNotFoundError):
    """A benchmark instance name or path could not be resolved."""


class InstanceFormatError(InvalidInstanceError):
    """An instance or solution file could not be parsed."""


class CorruptFileError(RoutingError):
    """A file we wrote or were handed (checkpoint, dataset cache, summary) exists
    but cannot be read: truncated, garbage bytes, or a different kind of file."""


class UntrustedFileError(CorruptFileError):
    """A PyTorch file (checkpoint, dataset cache) holds a type that loading without
    trust refuses (anything but tensors, numbers, strings and containers): loading it
    would run code from the file. The message names the file and the type."""


class RunInterrupted(RoutingError):
    """A run stopped before its end because it was told to (SIGTERM: a scheduler's
    preemption, ``timeout``); the message says where its resumable checkpoint is.
    Commands exit with :attr:`exit_status` (128 + SIGTERM, as a killed process)."""

    exit_status = 143


def where(instance: str | int | None = None, route: int | None = None,
          node: int | None = None) -> str:
    """Format a location prefix such as ``"instance 3, route 1, node 17: "``."""
    parts = []
    if instance is not None:
        parts.append(f"instance {instance!r}" if isinstance(instance, str) else
                     f"instance {instance}")
    if route is not None:
        parts.append(f"route {route}")
    if node is not None:
        parts.append(f"node {node}")
    return (", ".join(parts) + ": ") if parts else ""


def one_line(message: object) -> str:
    """The text of ``message`` (an exception, or any text) on one line (Lightning's and
    argparse's span several)."""
    return " ".join(line.strip() for line in str(message).splitlines() if line.strip())
