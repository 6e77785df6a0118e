"""Batched positional-encoding functions over route quantities.

Pure tensor functions (any leading shape, any device) that the transforms in
:mod:`pyg_routing.transforms` and the search loops of the backbones share.
"""

from pyg_routing.functional.route_pe import ipe, ipe_frequencies, ipexpe, xpe

__all__ = ["ipe", "ipe_frequencies", "ipexpe", "xpe"]
