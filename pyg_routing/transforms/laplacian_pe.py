"""The ``LaplacianPE`` transform: Laplacian eigenvectors of the route graph (App. E)."""

from __future__ import annotations

import torch
from torch import Tensor

from pyg_routing.functional.graph_pe import laplacian_pe
from pyg_routing.transforms._base import EncodingInputs, NodeEncoding


class LaplacianPE(NodeEncoding):
    r"""Laplacian eigenvector PE (Dwivedi et al.) of the *route graph*: the ``k``
    smallest non-trivial eigenvectors of ``L = D - A`` (unnormalized) of the
    undirected graph of the route arcs, ``data[attr_name]`` of shape
    ``[num_nodes, k]``.

    The route graph has the depot, one cycle per route of ``>= 2`` customers, one
    edge per single-customer route, and isolated unvisited customers (PCVRP,
    whose zero eigenvalues come first as indicator vectors). Graphs with fewer
    than ``k + 1`` nodes are zero-padded. Computed in closed form for a whole
    ``Batch`` at once (see :func:`~pyg_routing.functional.graph_pe.laplacian_pe`);
    degenerate eigenspaces (routes of equal length) come in some orthonormal basis.

    **Sign flips.** Eigenvectors are defined up to sign, so during training each
    eigenvector of each graph is multiplied by a random ``±1``. Like an
    ``nn.Module`` the transform has a ``training`` flag (``True`` on creation);
    call :meth:`eval` for deterministic signs at validation/test time and
    :meth:`train` to switch back. ``random_sign=False`` never flips.

    Args:
        k: eigenvectors per graph.
        attr_name: attribute to store the encoding in; ``None`` concatenates it
            onto ``data.x`` (creating ``data.x`` if absent), as PyG's
            ``AddLaplacianEigenvectorPE`` does.
        random_sign: flip signs at random in training mode.
        generator: random generator for the flips (default: torch's global one).

    Raises:
        NoSolutionError: the instance has no solution (no route arcs).
    """

    def __init__(self, k: int = 8, attr_name: str | None = "laplacian_pe",
                 random_sign: bool = True, generator: torch.Generator | None = None) -> None:
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"LaplacianPE needs k >= 1 eigenvectors, got k={k!r}")
        self.k = k
        self.attr_name = attr_name
        self.random_sign = random_sign
        self.generator = generator
        self.training = True

    def train(self, mode: bool = True) -> LaplacianPE:
        """Set training mode (random sign flips if ``random_sign``); returns self."""
        self.training = bool(mode)
        return self

    def eval(self) -> LaplacianPE:
        """Evaluation mode: no sign flips. Returns self."""
        return self.train(False)

    @property
    def width(self) -> int:
        return self.k

    def code(self, inputs: EncodingInputs) -> Tensor:
        rg = inputs.graph(type(self).__name__)
        return inputs.per_node(laplacian_pe(
            rg, k=self.k, random_sign=self.random_sign and self.training,
            generator=self.generator, dtype=inputs.dtype))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(k={self.k}, attr_name={self.attr_name!r}, "
                f"random_sign={self.random_sign}, training={self.training})")
