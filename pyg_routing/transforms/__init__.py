"""Node positional encodings as PyG ``BaseTransform``s.

Each reads the route quantities of a :class:`~pyg_routing.data.RoutingData` (or a
``Batch``) and stores ``[num_nodes, dim]`` under ``attr_name`` (``None``
concatenates onto ``data.x``).
"""

from pyg_routing.transforms.ipe import IPE
from pyg_routing.transforms.ipexpe import IPEXPE
from pyg_routing.transforms.xpe import XPE

__all__ = ["IPE", "IPEXPE", "XPE"]
