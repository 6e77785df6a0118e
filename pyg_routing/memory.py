"""How a command's process keeps the memory it frees: no fresh pages every step.

The search and training paths allocate and free the same temporaries every step.
glibc's ``malloc`` gives freed memory back to the kernel when the free space at the
top of its heap passes a threshold that it adjusts as it goes (at most 64 MB), and
maps blocks above another (at most 32 MB) afresh each time; the next step's
temporaries then arrive as fresh pages, each faulted in and zeroed by the kernel
(issue 40). The largest temporaries already run in cache-sized slices
(:mod:`pyg_routing.functional.chunks`), but what is left still faulted: N2S's
search step at PDP-51, batch 64, took 4 000-7 400 page faults and 15-20 % of its
time, NDS's CVRP-500 destroy decoder 5 000-7 500 and about 5 %.

A library does not own the process's allocator, so the package never changes it on
import. The commands own their process: :func:`apply_memory_policy` (called by the
``pyg-routing`` script at start) fixes glibc's thresholds with ``mallopt`` so that
freed memory stays in the process (:data:`TRIM_THRESHOLD` of free space at the top of
the heap before it is returned; blocks below :data:`MMAP_THRESHOLD` from the heap),
and those steps take no fault after the first. The price is up to
:data:`TRIM_THRESHOLD` of freed memory kept resident. A Python program that wants
the same calls :func:`keep_freed_memory` itself.

:func:`available_memory` is what the process may still take (the machine's available
memory, capped by its control group's limit): the training passes in slices judge by it
whether to keep their activations (:func:`pyg_routing.functional.chunks.keeps_activations`).

Override: ``PYG_ROUTING_MALLOC=glibc`` leaves glibc's defaults (``keep``, the
default, applies the policy); a value that is neither is refused with a
:class:`ValueError` naming it. glibc's own settings win: with ``MALLOC_TRIM_THRESHOLD_``,
``MALLOC_MMAP_THRESHOLD_`` or a ``glibc.malloc`` tunable in ``GLIBC_TUNABLES`` set, the
policy leaves the allocator alone. Elsewhere than glibc (macOS, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import os

#: the environment variable that chooses the memory policy of every command
MALLOC_ENV = "PYG_ROUTING_MALLOC"
#: free space at the top of the heap that glibc keeps before returning it (bytes)
TRIM_THRESHOLD = 256 * 2**20
#: blocks at least this large are mapped afresh and unmapped on free (bytes): the
#: ceiling of glibc's own adjusted threshold. Larger blocks from the heap would be kept
#: too, but torch's aligned allocations of one size then fail to reuse each other's
#: freed blocks for many steps (a 48 MB temporary grew the heap to 700 MB)
MMAP_THRESHOLD = 32 * 2**20
#: glibc's environment settings that make its own choice (the policy then stands back)
GLIBC_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_")

# mallopt's parameter numbers (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def is_glibc() -> bool:
    """Whether this process's C library is glibc (whose ``mallopt`` the policy sets): the
    running library's own answer, not a scan of the interpreter's binary."""
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (AttributeError, ValueError, OSError):    # no confstr, or no such name
        return False


def keep_freed_memory(trim_threshold: int = TRIM_THRESHOLD,
                      mmap_threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's trim and mmap thresholds (bytes) for this whole process, so that
    memory freed by one step serves the next without fresh pages. Returns whether
    both were set (``False`` off glibc, or where glibc refused a value).

    Raises:
        ValueError: a threshold that is not a positive integer.
    """
    for name, value in (("trim_threshold", trim_threshold),
                        ("mmap_threshold", mmap_threshold)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive number of bytes, got {value!r}")
    if not is_glibc():
        return False
    libc = ctypes.CDLL(None)
    # setting either turns glibc's adjusting thresholds off: both are set
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, mmap_threshold)) \
        and bool(libc.mallopt(_M_TRIM_THRESHOLD, trim_threshold))


def chosen_policy() -> str:
    """``"keep"`` or ``"glibc"``: ``PYG_ROUTING_MALLOC`` (default ``keep``), except
    that glibc's own settings in the environment make it ``"glibc"``.

    Raises:
        ValueError: ``PYG_ROUTING_MALLOC`` is set to something else.
    """
    value = os.environ.get(MALLOC_ENV, "").strip().lower() or "keep"
    if value not in ("keep", "glibc"):
        raise ValueError(f"{MALLOC_ENV}={os.environ[MALLOC_ENV]!r}: give 'keep' (freed "
                         f"memory stays in the process) or 'glibc' (glibc's defaults)")
    if any(os.environ.get(name) for name in GLIBC_SETTINGS) \
            or "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return "glibc"
    return value


def apply_memory_policy() -> bool:
    """:func:`keep_freed_memory` unless :func:`chosen_policy` says ``"glibc"``; returns
    whether the thresholds were set."""
    return chosen_policy() == "keep" and keep_freed_memory()


#: the kernel's memory figures, the process's control groups, and where Linux mounts
#: the groups (v2: one tree; v1: a tree per controller)
MEMINFO, PROC_CGROUP, CGROUP_ROOT = "/proc/meminfo", "/proc/self/cgroup", "/sys/fs/cgroup"


def available_memory() -> int | None:
    """Bytes this process may still take: the kernel's ``MemAvailable`` (free memory
    plus what it can reclaim), capped by the limit of the process's memory control group
    less its usage (a container's, or a batch job's; cgroup v2 and v1). ``None`` where
    neither can be read (not Linux)."""
    found = [value for value in (_meminfo_available(), _cgroup_headroom())
             if value is not None]
    return min(found) if found else None


def _meminfo_available() -> int | None:
    try:
        with open(MEMINFO) as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_headroom() -> int | None:
    """The least ``limit - usage`` over the process's memory cgroup and its ancestors
    (a job's limit may sit on a parent group), ``None`` without a limit."""
    try:
        with open(PROC_CGROUP) as groups:
            lines = groups.read().splitlines()
    except OSError:
        return None
    for line in lines:                       # "id:controllers:path"
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":                # v2: memory.max and memory.current
            names, tree = ("memory.max", "memory.current"), CGROUP_ROOT
        elif "memory" in controllers.split(","):
            names = ("memory.limit_in_bytes", "memory.usage_in_bytes")
            tree = os.path.join(CGROUP_ROOT, "memory")
        else:
            continue
        # the group's directory and its parents up to the mount's root, which is where
        # a container (in its own cgroup namespace) sees its own group
        headroom, folder = [], os.path.join(tree, path.strip("/"))
        while True:
            limit, usage = (_read_bytes(os.path.join(folder, name)) for name in names)
            # no limit: v2 writes "max" (not a number: None), v1 a number near 2^63
            if limit is not None and usage is not None and limit < 1 << 60:
                headroom.append(max(0, limit - usage))
            if os.path.normpath(folder) == os.path.normpath(tree):
                break
            folder = os.path.dirname(folder)
        if headroom:
            return min(headroom)
    return None


def _read_bytes(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
