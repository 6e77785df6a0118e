"""The ``RandomWalkPE`` transform: random-walk structural encoding of the route graph."""

from __future__ import annotations

from torch import Tensor

from pyg_routing.functional.random_walk_pe import random_walk_pe
from pyg_routing.transforms._base import EncodingInputs, NodeEncoding


class RandomWalkPE(NodeEncoding):
    r"""Random-walk structural encoding (RWSE, Dwivedi et al.) of the *route graph*:
    ``[(R^t)_{vv}]_{t=1..walk_length}`` with ``R = D^{-1} A`` of the undirected
    graph of the route arcs, ``data[attr_name]`` of shape ``[num_nodes, walk_length]``.

    Values equal PyG's ``AddRandomWalkPE(walk_length)`` applied to that graph
    (isolated unvisited customers: all zeros), but a whole ``Batch`` is computed
    at once from per-route tables
    (see :func:`~pyg_routing.functional.random_walk_pe.random_walk_pe`).

    Args:
        walk_length: number of random-walk steps ``K``.
        attr_name: attribute to store the encoding in; ``None`` concatenates it
            onto ``data.x`` (creating ``data.x`` if absent).

    Raises:
        NoSolutionError: the instance has no solution (no route arcs).
    """

    def __init__(self, walk_length: int = 8, attr_name: str | None = "random_walk_pe") -> None:
        if not isinstance(walk_length, int) or walk_length < 1:
            raise ValueError(f"RandomWalkPE needs walk_length >= 1, got {walk_length!r}")
        self.walk_length = walk_length
        self.attr_name = attr_name

    @property
    def width(self) -> int:
        return self.walk_length

    def code(self, inputs: EncodingInputs) -> Tensor:
        rg = inputs.graph(type(self).__name__)
        return inputs.per_node(random_walk_pe(rg, walk_length=self.walk_length,
                                              dtype=inputs.dtype))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(walk_length={self.walk_length}, "
                f"attr_name={self.attr_name!r})")
