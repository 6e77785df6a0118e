"""VRP-DACT's checkpoints as our ``dact`` checkpoints (``encoder="native"``).

VRP-DACT (yining043/VRP-DACT, ``agent/ppo.py``) saves ``epoch-<epoch>.pt`` as ``{"actor",
"critic", "optimizer", "rng_state", "cuda_rng_state"}``, two state dicts in its layout.
Our :class:`~pyg_routing.models.dact.dual_aspect.DualAspectEncoder`,
:class:`~pyg_routing.models.dact.mhc.MHCDecoder` and
:class:`~pyg_routing.models.dact.mhc.DACTCritic` keep its per-head tensors, stacked per
aspect (index 0 the node aspect, 1 the positional one):

==============================================================  ==============================
original                                                        ours (``policy.``)
==============================================================  ==============================
``embedder.embedder.weight``                                    ``encoder.embed.weight``
``encoder.i.MHA_sublayer.MHA.W_{query,key,val,out}_{node,pos}``  ``encoder.layers.i.{query,key,
                                                                value,out}[0 | 1]``
``encoder.i.FFandNorm_sublayer.FF{1,2}.{0,2}``                  ``encoder.layers.i.ff.{0,1}.*``
``decoder.compater_{node,pos}.W_{query,key}``                   ``decoder.{query,key}[0 | 1]``
``decoder.project_{node,graph}_{node,pos}``                     ``decoder.project_{node,graph}
                                                                .{0,1}``
``decoder.value_head.fc{1,2,3}``                                ``decoder.mix.{0,3,5}``
critic ``encoder.0.0.module.W_{query,key,val,out}``             ``critic.{query,key,value,
                                                                out}``
critic ``encoder.0.2.module.{0,2}``                             ``critic.ff.{0,2}``
critic ``value_head.project_{node,graph}``, ``MLP.fc{1,2,3}``   ``critic.project_*``,
                                                                ``critic.value_mlp.{0,3,5}``
==============================================================  ==============================

The problem comes from the node embedding (2 features: TSP, 7: CVRP, VRP-DACT's
``node_dim``), the width, heads and layers from the shapes. The problem size is not in
the file; the CPE's cycle and, on CVRP, the depot copies depend on it: the import takes
``num_customers`` and VRP-DACT's ``--dummy_rate`` for that size (its README: 0.5 at 20
customers, 0.4 at 50, 0.2 at 100; sizes in between take the next larger size's). The
encoding is VRP-DACT's CPE along the whole cycle (``pe="dact_cpe"``, ``cpe_scope="tour"``).
"""

from __future__ import annotations

import re
from typing import Any

import torch
from torch import Tensor

#: VRP-DACT's --dummy_rate per CVRP size (README)
DUMMY_RATES = {20: 0.5, 50: 0.4, 100: 0.2}
#: the problem of each width of VRP-DACT's node embedding (``node_dim``)
NODE_DIMS = {2: "tsp", 7: "cvrp"}


def dummy_rate(num_customers: int) -> float:
    """VRP-DACT's depot-copy rate for ``num_customers`` (the next larger published size;
    above 100, 100's)."""
    for size in sorted(DUMMY_RATES):
        if num_customers <= size:
            return DUMMY_RATES[size]
    return DUMMY_RATES[max(DUMMY_RATES)]


def dact_mapping(a: Any, c: Any, layers: int) -> dict[str, tuple[Tensor, str]]:
    """Our ``policy.*`` keys -> (tensor, original key), from the actor's and the critic's
    tensors (``a(key)``, ``c(key)``: the original's, by key)."""
    m: dict[str, tuple[Tensor, str]] = {
        "policy.encoder.embed.weight": (a("embedder.embedder.weight"), "embedder.embedder.weight")}
    for i in range(layers):
        mha, ff, ours = f"encoder.{i}.MHA_sublayer.MHA.", f"encoder.{i}.FFandNorm_sublayer.", \
            f"policy.encoder.layers.{i}."
        for theirs, mine in (("W_query", "query"), ("W_key", "key"), ("W_val", "value"),
                             ("W_out", "out")):
            m[ours + mine] = (torch.stack([a(f"{mha}{theirs}_node"), a(f"{mha}{theirs}_pos")]),
                              f"{mha}{theirs}_node")
        for aspect, block in enumerate(("FF1", "FF2")):
            for j in (0, 2):
                for p in ("weight", "bias"):
                    key = f"{ff}{block}.{j}.{p}"
                    m[f"{ours}ff.{aspect}.{j}.{p}"] = (a(key), key)
    dec = "decoder."
    for theirs, mine in (("W_query", "query"), ("W_key", "key")):
        m[f"policy.decoder.{mine}"] = (
            torch.stack([a(f"{dec}compater_node.{theirs}"), a(f"{dec}compater_pos.{theirs}")]),
            f"{dec}compater_node.{theirs}")
    for kind in ("node", "graph"):
        for aspect, name in enumerate(("node", "pos")):
            key = f"{dec}project_{kind}_{name}.weight"
            m[f"policy.decoder.project_{kind}.{aspect}.weight"] = (a(key), key)
    for j, theirs in ((0, "fc1"), (3, "fc2"), (5, "fc3")):
        for p in ("weight", "bias"):
            key = f"{dec}value_head.{theirs}.{p}"
            m[f"policy.decoder.mix.{j}.{p}"] = (a(key), key)
    crit = "encoder.0.0.module."
    for theirs, mine in (("W_query", "query"), ("W_key", "key"), ("W_val", "value"),
                         ("W_out", "out")):
        m[f"policy.critic.{mine}"] = (c(crit + theirs), crit + theirs)
    for ours_, theirs in (("ff.0", "encoder.0.2.module.0"), ("ff.2", "encoder.0.2.module.2"),
                          ("value_mlp.0", "value_head.MLP.fc1"),
                          ("value_mlp.3", "value_head.MLP.fc2"),
                          ("value_mlp.5", "value_head.MLP.fc3")):
        for p in ("weight", "bias"):
            m[f"policy.critic.{ours_}.{p}"] = (c(f"{theirs}.{p}"), f"{theirs}.{p}")
    for kind in ("node", "graph"):
        key = f"value_head.project_{kind}.weight"
        m[f"policy.critic.project_{kind}.weight"] = (c(key), key)
    return m


def dact_options(state: dict[str, Tensor], num_customers: int, name: str,
                 error: type[Exception]) -> dict[str, Any]:
    """Our ``dact`` configuration of VRP-DACT's actor state dict ``state`` (refused,
    naming ``name``, with ``error`` when its node embedding is none of VRP-DACT's)."""
    key = "embedder.embedder.weight"
    if key not in state:
        raise error(f"{name}: no {key!r} in the actor state dict")
    dim, node_dim = state[key].shape
    if node_dim not in NODE_DIMS:
        raise error(f"{name}: {key!r} reads {node_dim} node features; VRP-DACT's models read "
                    f"2 (TSP) or 7 (CVRP)")
    heads = state["encoder.0.MHA_sublayer.MHA.W_query_node"].shape[0] \
        if "encoder.0.MHA_sublayer.MHA.W_query_node" in state else 4
    layers = len({m.group(1) for k in state if (m := re.match(r"encoder\.(\d+)\.", k))})
    problem = NODE_DIMS[node_dim]
    options = {"problem": problem, "num_customers": int(num_customers), "pe": "dact_cpe",
               "cpe_scope": "tour", "encoder": "native", "dim": int(dim), "pe_dim": int(dim),
               "heads": int(heads), "num_layers": layers}
    if problem == "cvrp":
        options["depot_rate"] = dummy_rate(int(num_customers))
    return options
