"""``TravelCost``: the travel costs of a dense batch, the one object every layer asks.

A batch of instances is a *variant* of its problem by its data alone, never by an
option threaded through the layers:

* ``euclidean`` or ``explicit``: arcs cost the distance between the coordinates, or
  an explicit (possibly asymmetric) matrix's entry;
* ``open``: some instances have open routes (arcs into a depot cost nothing);
* ``multi_depot``: the instances have ``K > 1`` depots, nodes ``0 .. K-1``, each route
  leaving from and returning to its own.

:attr:`RoutingInstances.travel <pyg_routing.data.instances.RoutingInstances.travel>`
makes the object at the data boundary; environments, references and checks read the
costs (:meth:`TravelCost.dense`), the depots (:meth:`TravelCost.depot_mask`) and the
variants (:attr:`TravelCost.variants`: what an environment's ``reset`` checks, by
construction, against what it declares) from it. The rule of the costs themselves is
:mod:`.costs`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from pyg_routing.data.costs import dense_costs
from pyg_routing.errors import UnsupportedProblemError

#: Every variant, in the order they are reported
VARIANTS = ("euclidean", "explicit", "open", "multi_depot")
#: How an error message names an instance batch's variant
VARIANT_WORDS = {"euclidean": "Euclidean costs", "explicit": "an explicit cost matrix",
                 "open": "open routes", "multi_depot": "several depots"}


@dataclass(frozen=True)
class TravelCost:
    """What travelling costs in ``B`` instances of ``N`` nodes.

    Attributes:
        pos: ``[B, N, 2]`` coordinates.
        matrix: ``[B, N, N]`` explicit travel costs, or ``None`` (Euclidean).
        open_routes: ``[B]`` bool, instances whose vehicles end at their last
            customer, or ``None`` (all routes closed).
        num_depots: ``K``, the depots of every instance (nodes ``0 .. K-1``).
    """

    pos: Tensor
    matrix: Tensor | None = None
    open_routes: Tensor | None = None
    num_depots: int = 1

    @property
    def variants(self) -> tuple[str, ...]:
        """The variants of the batch (a subset of :data:`VARIANTS`, in its order):
        ``euclidean`` or ``explicit``, then ``open`` when any instance has open routes
        and ``multi_depot`` when there are several depots."""
        out = ["explicit" if self.matrix is not None else "euclidean"]
        if self.open_routes is not None and bool(self.open_routes.any()):
            out.append("open")
        if self.num_depots > 1:
            out.append("multi_depot")
        return tuple(out)

    @property
    def coordinates_suffice(self) -> bool:
        """Whether the coordinates alone cost every arc: no matrix and no open-route
        flags. Consumers keep their own Euclidean arithmetic then, bit for bit."""
        return self.matrix is None and self.open_routes is None

    def refuse_variants(self, supported: tuple[str, ...], who: str) -> None:
        """Refuse the batch unless each of its :attr:`variants` is ``supported``.

        Raises:
            UnsupportedProblemError: naming ``who`` (``"the two_opt environment"``),
                what it searches with and what these instances have.
        """
        given = [v for v in self.variants if v not in supported]
        if given:
            takes = [VARIANT_WORDS[v] for v in supported]
            said = ", ".join(takes[:-1]) + " and " + takes[-1] if len(takes) > 1 else takes[0]
            raise UnsupportedProblemError(
                f"{who} searches with {said}; these instances have "
                f"{' and '.join(VARIANT_WORDS[v] for v in given)}")

    def dense(self) -> Tensor:
        """``[B, N, N]`` travel costs by the rule of :mod:`.costs` (zero into every
        depot of an open-route instance)."""
        return dense_costs(self.pos, self.matrix, self.open_routes, self.num_depots)

    def matrix_or_none(self) -> Tensor | None:
        """:meth:`dense`, or ``None`` where :attr:`coordinates_suffice`."""
        return None if self.coordinates_suffice else self.dense()

    def open_flags(self) -> Tensor:
        """``[B]`` bool: the instances with open routes (all False when none)."""
        if self.open_routes is None:
            return torch.zeros(self.pos.size(0), dtype=torch.bool, device=self.pos.device)
        return self.open_routes.reshape(-1).to(torch.bool)

    def depot_mask(self) -> Tensor:
        """``[N]`` bool: True at the depots, nodes ``0 .. K-1``."""
        return torch.arange(self.pos.size(1), device=self.pos.device) < self.num_depots
