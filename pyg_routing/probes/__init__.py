"""The paper's probes of routing solutions and positional encodings.

* :mod:`~pyg_routing.probes.anisometry`: CV, max/min and residual MAD of route
  edge lengths (Tab. 1).
* :mod:`~pyg_routing.probes.entropy`: normalized depot-angle entropy per
  within-route position (Sec. 3.1, "Hierarchy").
* :mod:`~pyg_routing.probes.spearman`: Spearman correlation of PE distances with
  the desiderata D1-D3 (Tab. 3).
* :mod:`~pyg_routing.probes.paper_values`: the paper's numbers, as data.
* :mod:`~pyg_routing.commands.probe`: the ``pyg-routing probe`` command.
"""

from pyg_routing.probes.anisometry import RouteAnisometry, anisometry, route_anisometry
from pyg_routing.probes.entropy import hierarchy_entropy, normalized_entropy
from pyg_routing.probes.spearman import (
    ProbePairs,
    builtin_encodings,
    pairwise,
    paper_encodings,
    sample_pairs,
    spearman,
    spearman_probe,
)

__all__ = [
    "ProbePairs",
    "RouteAnisometry",
    "anisometry",
    "builtin_encodings",
    "hierarchy_entropy",
    "normalized_entropy",
    "pairwise",
    "paper_encodings",
    "route_anisometry",
    "sample_pairs",
    "spearman",
    "spearman_probe",
]
