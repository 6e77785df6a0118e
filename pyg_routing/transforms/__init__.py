"""Node positional encodings as PyG ``BaseTransform``s (IPE, XPE, ...).

Filled in by the encodings work; the route quantities they consume live in
:mod:`pyg_routing.data.route_quantities`.
"""

__all__: list[str] = []
