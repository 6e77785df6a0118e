"""The paper's probes of routing solutions and positional encodings.

* :mod:`~pyg_routing.probes.anisometry`: CV, max/min and residual MAD of route
  edge lengths (Tab. 1).
* :mod:`~pyg_routing.probes.entropy`: normalized depot-angle entropy per
  within-route position (Sec. 3.1, "Hierarchy").
* :mod:`~pyg_routing.probes.spearman`: Spearman correlation of PE distances with
  the desiderata D1-D3 (Tab. 3).
* :mod:`~pyg_routing.probes.paper_values`: the paper's numbers, as data.
* :mod:`~pyg_routing.commands.probe`: the ``pyg-routing probe`` command.

Every name below is imported from its submodule on first use
(:mod:`pyg_routing._lazy`).
"""

from pyg_routing._lazy import lazy_exports

#: public name -> the submodule that defines it
_EXPORTS = {
    "anisometry": "anisometry",
    "builtin_encodings": "spearman",
    "hierarchy_entropy": "entropy",
    "normalized_entropy": "entropy",
    "pairwise": "spearman",
    "paper_encodings": "spearman",
    "ProbePairs": "spearman",
    "route_anisometry": "anisometry",
    "RouteAnisometry": "anisometry",
    "sample_pairs": "spearman",
    "spearman": "spearman",
    "spearman_probe": "spearman",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
