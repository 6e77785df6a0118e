"""The type errors of the batch/instance boundary: where one instance is expected and
a batch is given, or the other way round, the error says what to pass instead; and a
PyG batch that lost the fields of some of its instances."""

from __future__ import annotations

from typing import Any

import torch
from torch_geometric.data import Batch, Data

from pyg_routing.data.problems import Problem
from pyg_routing.errors import InvalidInstanceError


def check_one_instance(instance: Any) -> None:
    """:meth:`RoutingData.from_routes` takes ONE instance: a batch (``RoutingInstances``
    or a PyG ``Batch``) or anything but a ``Data`` is refused, saying what to pass."""
    is_batch = isinstance(instance, Batch) or (not isinstance(instance, Data)
                                               and hasattr(instance, "to_data_list"))
    if is_batch:
        count = instance.num_graphs if isinstance(instance, Batch) else len(instance)
        raise TypeError(f"RoutingData.from_routes takes one instance (a RoutingData), got a "
                        f"batch of {count} ({type(instance).__name__}); give each instance "
                        f"its routes on its own: instances[i] is instance i")
    if not isinstance(instance, Data):
        raise TypeError(f"RoutingData.from_routes takes one instance (a RoutingData), got "
                        f"{type(instance).__name__}")


def not_a_batch(value: Any, who: str) -> TypeError:
    """The error for ``value`` given to ``who`` where a dense ``RoutingInstances`` batch
    is expected; one instance (a :class:`RoutingData`, or a PyG batch of them) is told
    how to make such a batch."""
    make = "pyg_routing.data.solvers.stack_instances"
    if isinstance(value, Batch):
        return TypeError(f"{who} takes a RoutingInstances batch, got a PyG Batch of "
                         f"{value.num_graphs} instances; make a dense batch with "
                         f"{make}(batch.to_data_list())")
    if isinstance(value, Data):
        return TypeError(f"{who} takes a RoutingInstances batch, got one "
                         f"{type(value).__name__} (a single instance); make a batch of it "
                         f"with {make}([data]) (its cost matrix and open routes are kept), "
                         f"or slice a batch: instances[i:i + 1]; for a file: "
                         f"pyg_routing.data.load_search_instance(path).instances")
    return TypeError(f"{who} takes a RoutingInstances batch (a generator's sample, or "
                     f"pyg_routing.data.load_search_instance(path).instances for a file), "
                     f"got {type(value).__name__}")


def refuse_lost_fields(data: Any) -> None:
    """Refuse a PyG ``Batch`` of ``RoutingData`` that lost fields some of its problems
    need.

    PyG collates only the keys of the batch's first instance, so the fields a problem
    needs are all in a batch exactly when no field was dropped that one of its instances
    required (``RoutingData.from_instance`` guarantees them).

    Raises:
        InvalidInstanceError: a lost cost matrix or depot vehicle limits (naming the
            instance) or problem fields.
    """
    problems = data.problem
    if not isinstance(problems, list):
        return
    # a field some instances carry is announced by a flag on every instance
    for flag, key, lost, alone in (
            ("explicit_cost", "travel_cost", "its cost matrix was", "explicit costs"),
            ("limited_fleet", "depot_vehicles", "its depots' vehicle limits were",
             "depot_vehicles")):
        if flag in data and bool(data[flag].any()) and key not in data:
            first = int(torch.nonzero(data[flag])[0])
            raise InvalidInstanceError(
                f"{data._label(first)}{lost} lost in batching (PyG keeps only the fields "
                f"of the first instance, which has none): batch instances with {alone} "
                f"apart from those without")
    kinds = [Problem.parse(p) for p in dict.fromkeys(problems)]
    lost = [key for key in dict.fromkeys(f for p in kinds for f in p.instance_fields)
            if key not in data]
    if lost:
        names = [repr(p.value) for p in kinds]
        listed = ", ".join(names[:-1]) + f" and {names[-1]}"
        raise InvalidInstanceError(
            f"batch mixes problems {listed}; their fields ({', '.join(lost)}) cannot "
            f"be batched (PyG keeps only the fields of the first instance, problem "
            f"{problems[0]!r}): batch one problem at a time")
