"""One line on stderr before numba compiles one of NDS's kernels for the first time.

The kernels (:mod:`._kernels`, :mod:`._sisr_kernel`) are compiled on their first call
and cached on disk (``cache=True``: next to their sources, or numba's user-wide cache
when the package folder is read-only; ``NUMBA_CACHE_DIR`` overrides). Loading the cache
takes about a second; compiling takes up to a minute, once per installation and
Python version. Without a word that minute looks like a hang, so
:func:`announce_compilation` says it, in one line and once per process, when a kernel
is called that the disk cache holds nothing for (its index is missing or stale).
"""

from __future__ import annotations

import sys
from typing import Any

_announced = False


def has_disk_cache(kernel: Any) -> bool | None:
    """Whether ``kernel`` (a numba dispatcher with ``cache=True``) has compiled code in
    its disk cache for the current source; ``None`` when numba's cache cannot be asked
    (its internals changed, or caching is off)."""
    try:
        return bool(kernel._cache._cache_file._load_index())
    except Exception:                   # numba's private cache API: fail silently
        return None


def announce_compilation(kernel: Any) -> bool:
    """Print one line on stderr if ``kernel`` is about to be compiled (no compiled
    signature in this process, none on disk), once per process whichever kernel comes
    first; returns whether it printed."""
    global _announced
    if _announced or getattr(kernel, "signatures", None) or has_disk_cache(kernel) is not False:
        return False
    _announced = True
    print("pyg_routing: compiling NDS's numba kernels (first use: up to a minute or two; "
          "cached on disk for later runs)", file=sys.stderr, flush=True)
    return True
