"""Reading an instance file of any supported format, detected from its content.

The readers live beside their formats (:mod:`.benchmark_io`: VRPLIB, Solomon, Li &
Lim; :mod:`.cordeau_io`: Cordeau's multi-depot files); this module only dispatches, so
that every path that takes a file (``load_instance``, ``solve --instance``,
``search --instance``) reads all of them.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from pyg_routing.data.benchmark_io import read_lilim, read_solomon, read_vrplib, sniff_format
from pyg_routing.data.cordeau_io import read_cordeau
from pyg_routing.data.routing_data import RoutingData

#: format name (:func:`~pyg_routing.data.benchmark_io.sniff_format`) -> reader
READERS: dict[str, Callable[[str | os.PathLike], RoutingData]] = {
    "vrplib": read_vrplib, "solomon": read_solomon, "lilim": read_lilim,
    "cordeau": read_cordeau}


def read_instance_file(path: str | os.PathLike) -> RoutingData:
    """Read an instance file of any supported format (detected from its content).

    Raises:
        InstanceFormatError: an unreadable file, one of no known format, or a
            malformed one (naming the file).
    """
    return READERS[sniff_format(path)](path)
