"""How many threads torch uses in a command: the free cores, not all of them.

Every torch op on the CPU splits its work over ``torch.get_num_threads()`` OpenMP
threads and waits for the slowest at a barrier. On a machine that other jobs share,
one of those threads is often descheduled, and every op of a step waits for it: a
DACT step with 500-800 ops ran 5-10x slower on 2 threads than on 1 when the 2 cores
were busy (issue 40). So a command asks :func:`choose_threads` for the cores that are
free when it starts (the cores this process may run on, less the load average of the
last minute, at least 1), and :func:`apply_threads` sets torch to that.

Override: the environment variable ``PYG_ROUTING_THREADS`` (an integer >= 1, or
``auto`` for the rule above) wins over the rule and over the command's own choice;
a value that is not one of these is refused with a :class:`ValueError` naming it.
``OMP_NUM_THREADS`` and ``torch.set_num_threads`` called later still work as usual.
"""

from __future__ import annotations

import os

#: the environment variable that overrides the thread count of every command
THREADS_ENV = "PYG_ROUTING_THREADS"


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS reports it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):           # not Linux
        return os.cpu_count() or 1


def choose_threads(requested: int | None = None, *, cores: int | None = None,
                   load: float | None = None) -> int:
    """The torch thread count of a command.

    Args:
        requested: the command's own choice (e.g. a ``--threads`` option); ``None``:
            the free cores.
        cores: the cores to share (default :func:`available_cores`).
        load: the other jobs' demand in cores (default: the 1-minute load average,
            taken when the command starts, before it loads the cores itself).

    Returns:
        ``PYG_ROUTING_THREADS`` if set to an integer; else ``requested`` if given;
        else ``max(1, min(cores, round(cores - load)))``.

    Raises:
        ValueError: ``PYG_ROUTING_THREADS`` or ``requested`` is not an integer >= 1
            (``PYG_ROUTING_THREADS=auto`` means the rule, as if unset).
    """
    env = os.environ.get(THREADS_ENV, "").strip()
    if env and env.lower() != "auto":
        try:
            value = int(env)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"{THREADS_ENV}={env!r}: give an integer >= 1 or 'auto'")
        return value
    if requested is not None:
        if isinstance(requested, bool) or not isinstance(requested, int) or requested < 1:
            raise ValueError(f"threads must be an integer >= 1, got {requested!r}")
        return requested
    cores = available_cores() if cores is None else cores
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):       # not Unix: assume an idle machine
            load = 0.0
    return max(1, min(cores, round(cores - load)))


def apply_threads(requested: int | None = None) -> int:
    """``torch.set_num_threads(choose_threads(requested))`` and the same count for
    numba's parallel kernels (NDS's repairs); returns the count set.

    Both at once because they share one OpenMP runtime: numba's ``omp`` threading
    layer sets OpenMP's thread count to numba's at every parallel launch, which is
    torch's count from then on (a 1-thread torch became 2-thread after one repair)."""
    import numba
    import torch

    threads = choose_threads(requested)
    torch.set_num_threads(threads)
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    return threads
