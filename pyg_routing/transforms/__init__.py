"""Node positional encodings as PyG ``BaseTransform``s.

Each reads the route quantities of a :class:`~pyg_routing.data.RoutingData` (or a
``Batch``) and stores ``[num_nodes, dim]`` under ``attr_name`` (``None``
concatenates onto ``data.x``). Attention-bias and rotary encodings are modules:
see :mod:`pyg_routing.models.pe`. Every node encoding is a :class:`NodeEncoding`:
``width`` and ``code(EncodingInputs)``, the same call a search loop makes on its
dense state.
"""

from pyg_routing.transforms._base import EncodingInputs, NodeEncoding
from pyg_routing.transforms.cycleformer_pe import CycleFormerPE
from pyg_routing.transforms.dact_cpe import DACTCPE
from pyg_routing.transforms.ipe import IPE
from pyg_routing.transforms.ipexpe import IPEXPE
from pyg_routing.transforms.laplacian_pe import LaplacianPE
from pyg_routing.transforms.random_walk_pe import RandomWalkPE
from pyg_routing.transforms.shortest_path_distance import ShortestPathDistance
from pyg_routing.transforms.sinusoidal_pe import SinusoidalPE
from pyg_routing.transforms.xpe import XPE

__all__ = ["CycleFormerPE", "DACTCPE", "EncodingInputs", "IPE", "IPEXPE", "LaplacianPE",
           "NodeEncoding", "RandomWalkPE", "ShortestPathDistance", "SinusoidalPE", "XPE"]
