"""The type errors of the batch/instance boundary: where one instance is expected and
a batch is given, or the other way round, the error says what to pass instead."""

from __future__ import annotations

from typing import Any

from torch_geometric.data import Batch, Data


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
