"""Batched positional-encoding functions over route quantities.

Pure tensor functions (any device) that the transforms in :mod:`pyg_routing.transforms`,
the modules in :mod:`pyg_routing.models.pe` and the search loops of the backbones
share, so an encoding can be recomputed every search step.
"""

from pyg_routing.functional.graph_pe import laplacian_pe
from pyg_routing.functional.index_pe import (
           cycleformer_pe,
           dact_cpe,
           dense_route_inputs,
           gray_code,
           max_route_length,
           route_sizes,
           sinusoidal_pe,
)
from pyg_routing.functional.pair_pe import (
           alibi_slopes,
           apply_rotary,
           hop_distance,
           position_offsets,
)
from pyg_routing.functional.random_walk_pe import random_walk_pe
from pyg_routing.functional.route_angle import route_angle
from pyg_routing.functional.route_pe import index_ipe, ipe, ipe_frequencies, ipexpe, xpe

__all__ = ["alibi_slopes", "apply_rotary", "cycleformer_pe", "dact_cpe", "dense_route_inputs",
           "gray_code", "hop_distance", "index_ipe", "ipe", "ipe_frequencies", "ipexpe",
           "laplacian_pe", "max_route_length", "position_offsets", "random_walk_pe",
           "route_angle", "route_sizes", "sinusoidal_pe", "xpe"]
