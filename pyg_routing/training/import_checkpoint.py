"""Checkpoints of the original NDS, N2S and DACT code as our training checkpoints.

What the originals save:

* NDS (ahottung/NDS, ``src/trainer.py``): ``checkpoint-<epoch>.pt`` is ``{"epoch",
  "model_state_dict", "optimizer_state_dict", "scheduler_state_dict", "model_params",
  "env_params", "wandb_run_id"}``; ``model_params`` and ``env_params`` are OmegaConf
  objects. Our :class:`~pyg_routing.models.NDSPolicy` keeps NDS's parameter names, so
  the state dict is taken as it is (``policy.`` prefixed).
* N2S (yining043/PDP-N2S, ``agent/ppo.py``): ``epoch-<epoch>.pt`` is ``{"actor",
  "critic", "optimizer", "rng_state", "cuda_rng_state"}``, two state dicts in the
  original's layout, reshaped here (``D`` width, ``H = 4`` heads, ``d = D / H``):

  ===============================================  ============================================
  original                                         ours
  ===============================================  ============================================
  ``W_query, W_key, W_val [H, D, d]`` per head      one fused ``qkv.weight [3 D, D]`` (rows
                                                   ``t D + h d + e`` = ``W_t[h, :, e]``)
  ``W_out [H, d, D]``                              ``out.weight [D, D]`` (transposed)
  ``score_aggr.0 [2H, 2H]`` (node | positional)    ``mix_node [2H, H]`` + bias, ``mix_pos [2H, H]``
  ``pos_encoder.W_query/W_key [H, D, d]``          ``pos_query/pos_key.weight [D, D]``
  ``compater_insert1/2.W_query/W_key [H, D, D]``   ``reinsertion.query/key [2, H, D, D]``
  ``compater_removal.agg.fc1 [32, 2H + 4]``        ``removal.score.0``, history columns permuted
  critic ``MultiHeadAttention`` (no biases)        ``critic.attn`` with its 512 biases set to 0
  ===============================================  ============================================

  The removal history: the original's columns are the last three removals OLDEST
  first, then the frequency; :meth:`PairReinsertionState.history` lists them most
  recent first. The import permutes the first layer's columns (our history and
  trained checkpoints stay as they are).

* DACT (yining043/VRP-DACT): ``epoch-<epoch>.pt``, the same layout as N2S's; mapped by
  :mod:`pyg_routing.training.import_dact` into our native DACT network.

The result is what ``pyg-routing train`` writes (``hyper_parameters`` with the
backbone, ``state_dict``), so ``evaluate``, ``search --checkpoint`` and ``compare`` take
it unchanged; ``imported_from`` records the original file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch import Tensor

from pyg_routing.envs import DeconstructionEnv
from pyg_routing.errors import CorruptFileError
from pyg_routing.options import ORIGINALS
from pyg_routing.training import backbones
from pyg_routing.training.import_dact import dact_mapping, dact_options
from pyg_routing.training.original_files import TensorSource, plain, read_original

#: the original keys of a fused query/key/value weight, in messages
QKV = "W_query|W_key|W_val"
#: the original N2S's removal-history columns in our order (most recent first)
N2S_HISTORY_ORDER = (2, 1, 0, 3)


# ---------------------------------------------------------------------- mapping
@contextmanager
def _naming(name: str, *sources: TensorSource) -> Iterator[None]:
    """Report tensors that do not fit together (a reshape, a concatenation, an index
    that fails on a malformed tensor of the right rank) against the file and the last
    key read, instead of torch's bare message."""
    try:
        yield
    except CorruptFileError:
        raise
    except (RuntimeError, IndexError, ValueError, TypeError) as exc:
        keys = [s.last for s in sources if s.last is not None]
        near = f" (at {keys[-1]!r})" if keys else ""
        raise CorruptFileError(f"{name}: its tensors do not fit together{near}: "
                               f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from None


def _entry(content: Any, key: str, original: str, name: str) -> Any:
    if not isinstance(content, Mapping) or key not in content:
        article = "an" if original[0] in "AEFHILMNORSX" else "a"     # an NDS, a DACT
        raise CorruptFileError(f"{name} is not {article} {original} checkpoint (no {key!r}; "
                               f"expected what {original}'s training saves)")
    return content[key]


def _build(backbone: str, options: dict[str, Any], mapped: dict[str, tuple[Tensor, str]],
           name: str, record: dict[str, Any]) -> dict[str, Any]:
    """Our Lightning checkpoint: the backbone built from ``options`` (refused, naming the
    file, if they do not fit), its weights replaced by ``mapped`` (our key -> tensor,
    original key), each shape checked."""
    try:
        model = backbones.get(backbone)(**options)
    except ValueError as exc:
        raise CorruptFileError(f"{name}: {exc}") from None
    state = model.state_dict()
    for key, (value, origin) in mapped.items():
        if key not in state:
            raise CorruptFileError(f"{name}: {origin!r} has no place in our {backbone} model "
                                   f"({options})")
        if value.shape != state[key].shape:
            raise CorruptFileError(f"{name}: {origin!r} has shape {tuple(value.shape)}, our "
                                   f"{key} needs {tuple(state[key].shape)}")
    missing = [k for k in state if k not in mapped]
    if missing:
        raise CorruptFileError(f"{name}: nothing in the file for our {missing[0]}")
    model.load_state_dict({k: v for k, (v, _) in mapped.items()})
    return {"epoch": 0, "global_step": 0, "pytorch-lightning_version": L.__version__,
            "state_dict": {k: v.detach().clone() for k, v in model.state_dict().items()},
            "hyper_parameters": dict(model.hparams), "imported_from": record}


def _config(content: Mapping[str, Any], key: str, name: str) -> dict[str, Any]:
    """NDS's saved config ``key`` (an OmegaConf node read as data, or a dict) as a plain
    dict; ``{}`` when absent."""
    value = plain(content.get(key))
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CorruptFileError(f"{name}: {key!r} is not a config (a mapping), got "
                               f"{type(value).__name__}")
    return value


def _whole(config: dict[str, Any], key: str, where: str, name: str) -> int | None:
    """The whole number ``config[key]`` (``None`` when absent); anything else is refused
    naming the file and the key."""
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CorruptFileError(f"{name}: {where}.{key} must be a whole number >= 1, got "
                               f"{value!r}")
    return value


def _count(state: Mapping[str, Any], pattern: str) -> int:
    found = {m.group(1) for k in state if (m := re.match(pattern, k))}
    return len(found)


def import_nds(content: Any, *, problem: str | None = None, num_customers: int | None = None,
               heads: int | None = None, name: str = "checkpoint") -> dict[str, Any]:
    """Our ``nds`` checkpoint of NDS's saved dict ``content`` (``model_state_dict``;
    ``model_params`` / ``env_params`` where readable).

    The problem and the width come from the node embedding (``encoder.embedding_node
    .weight [D, F]``, ``F`` = 3 cvrp, 4 pcvrp, 5 vrptw); the layers from the keys;
    the heads (``head_num``), size (``problem_size``), removal size and repairs from
    the saved configs, else the arguments (heads default NDS's 8).

    Raises:
        CorruptFileError: not an NDS checkpoint, a key missing or of another shape
            (names ``name`` and the key), or an architecture we do not build.
    """
    src = TensorSource(_entry(content, "model_state_dict", "NDS", name), "model_state_dict",
                       name)
    model_params = _config(content, "model_params", name)
    env_params = _config(content, "env_params", name)
    dim, width = src.get("encoder.embedding_node.weight", ndim=2).shape
    by_width = {DeconstructionEnv.feature_width(p): p.value for p in DeconstructionEnv.problems}
    if width not in by_width:
        raise CorruptFileError(f"{name}: 'encoder.embedding_node.weight' reads {width} node "
                               f"features, which is none of NDS's problems")
    if problem is not None and problem != by_width[width]:
        raise CorruptFileError(f"{name} is an NDS {by_width[width]} model, not {problem}")
    size = num_customers or _whole(env_params, "problem_size", "env_params", name)
    if size is None:
        raise CorruptFileError(f"{name}: the file does not say its problem size; pass "
                               f"num_customers (command line: --num_customers)")
    first = _count(src.state, r"encoder\.layers\.(\d+)\.")
    layers = first + _count(src.state, r"encoder\.layers_2\.(\d+)\.")
    if first != layers // 2:
        raise CorruptFileError(f"{name}: {first} + {layers - first} attention layers around "
                               f"the tour and message-passing layers; ours split "
                               f"{layers // 2} + {layers - layers // 2}")
    options = {"problem": by_width[width], "num_customers": int(size), "pe": "none",
               "dim": int(dim), "num_layers": layers,
               "heads": int(heads or _whole(model_params, "head_num", "model_params", name)
                            or 8)}
    for ours, theirs in (("remove", "num_nodes_to_remove"), ("recreate", "recreate_n")):
        if (value := _whole(env_params, theirs, "env_params", name)) is not None:
            options[ours] = value
    mapped = {f"policy.{k}": (src[k], k) for k in src.state}
    record = {"original": "nds", "file": name, "epoch": content.get("epoch")}
    with _naming(name, src):
        return _build("nds", options, mapped, name, record)


def _rows(w: Tensor) -> Tensor:
    """Per-head ``[H, in, d]`` weights as one ``Linear`` weight ``[H d, in]``."""
    return w.permute(0, 2, 1).reshape(-1, w.shape[1])


def _attention(get: Callable[..., Tensor], prefix: str) -> tuple[Tensor, Tensor]:
    """(fused ``qkv.weight``, ``out.weight``) of an original multi-head attention."""
    qkv = torch.cat([_rows(get(prefix + n, 3)) for n in ("W_query", "W_key", "W_val")])
    w_out = get(prefix + "W_out", 3)
    return qkv, w_out.reshape(-1, w_out.shape[-1]).t()


def import_n2s(content: Any, *, num_customers: int, name: str = "checkpoint"
               ) -> dict[str, Any]:
    """Our ``n2s`` checkpoint of N2S's saved dict ``content`` (``actor`` and ``critic``
    state dicts; see the module docstring for the mapping).

    The width, heads and layers come from the shapes and keys; the problem size is not
    in the file (N2S's positional pattern is not saved), hence ``num_customers``.
    Our model is N2S's with ``hidden_dim = embedding_dim = 128`` and ``'layer'``
    normalisation (its defaults and released models); others are refused by key or
    shape. The critic attention's biases (ours has them, N2S has not) are zero.

    Raises:
        CorruptFileError: not an N2S checkpoint, a key missing, unexpected or of
            another shape (names ``name`` and the key).
    """
    actor = TensorSource(_entry(content, "actor", "N2S", name), "actor state dict", name)
    critic = TensorSource(_entry(content, "critic", "N2S", name), "critic state dict", name)
    with _naming(name, actor, critic):
        return _map_n2s(actor, critic, num_customers, name)


def _map_n2s(actor: TensorSource, critic: TensorSource, num_customers: int,
             name: str) -> dict[str, Any]:
    """:func:`import_n2s` once both state dicts are found."""
    a, c = actor.get, critic.get
    dim = a("embedder.embedder.weight", 2).shape[0]
    heads = a("pos_encoder.W_query", 3).shape[0]
    layers = _count(actor.state, r"encoder\.(\d+)\.")
    m: dict[str, tuple[Tensor, str]] = {
        "policy.encoder.embed.weight": (a("embedder.embedder.weight"),
                                        "embedder.embedder.weight"),
        "policy.encoder.pos_query.weight": (_rows(a("pos_encoder.W_query")),
                                            "pos_encoder.W_query"),
        "policy.encoder.pos_key.weight": (_rows(a("pos_encoder.W_key")), "pos_encoder.W_key")}
    for i in range(layers):
        mha, ff, ours = f"encoder.{i}.MHA_sublayer.MHA.", f"encoder.{i}.FFandNorm_sublayer.FF.", \
            f"policy.encoder.layers.{i}."
        qkv, out = _attention(a, mha)
        mix = a(mha + "score_aggr.0.weight")
        m |= {ours + "qkv.weight": (qkv, mha + QKV),
              ours + "out.weight": (out, mha + "W_out"),
              ours + "mix_node.weight": (mix[:, :heads], mha + "score_aggr.0.weight"),
              ours + "mix_pos.weight": (mix[:, heads:], mha + "score_aggr.0.weight"),
              ours + "mix_node.bias": (a(mha + "score_aggr.0.bias"), mha + "score_aggr.0.bias"),
              ours + "mix_out.weight": (a(mha + "score_aggr.2.weight"),
                                        mha + "score_aggr.2.weight"),
              ours + "mix_out.bias": (a(mha + "score_aggr.2.bias"), mha + "score_aggr.2.bias"),
              ours + "ff.0.weight": (a(ff + "0.weight"), ff + "0.weight"),
              ours + "ff.2.weight": (a(ff + "2.weight"), ff + "2.weight")}
    dec, rem, ins = "decoder.", "decoder.compater_removal.", "decoder.compater_reinsertion."
    fc1 = a(rem + "agg.fc1.weight")
    cut = fc1.shape[1] - len(N2S_HISTORY_ORDER)
    fc1 = torch.cat([fc1[:, :cut], fc1[:, [cut + j for j in N2S_HISTORY_ORDER]]], 1)
    m |= {"policy.project_node.weight": (a(dec + "project_node.weight"),
                                         dec + "project_node.weight"),
          "policy.project_graph.weight": (a(dec + "project_graph.weight"),
                                          dec + "project_graph.weight"),
          "policy.removal.query": (a(rem + "W_Q"), rem + "W_Q"),
          "policy.removal.key": (a(rem + "W_K"), rem + "W_K"),
          "policy.removal.score.0.weight": (fc1, rem + "agg.fc1.weight"),
          "policy.reinsertion.query": (torch.stack([a(ins + f"compater_insert{j}.W_query")
                                                    for j in (1, 2)]),
                                       ins + "compater_insert1.W_query"),
          "policy.reinsertion.key": (torch.stack([a(ins + f"compater_insert{j}.W_key")
                                                  for j in (1, 2)]),
                                     ins + "compater_insert1.W_key")}
    for ours, theirs in (("removal.score.0", rem + "agg.fc1"),
                         ("removal.score.2", rem + "agg.fc2"),
                         ("removal.score.4", rem + "agg.fc3"),
                         ("reinsertion.first", ins + "agg.fc1"),
                         ("reinsertion.hidden", ins + "agg.fc2"),
                         ("reinsertion.out", ins + "agg.fc3")):
        for p in ("weight", "bias"):
            m.setdefault(f"policy.{ours}.{p}", (a(f"{theirs}.{p}"), f"{theirs}.{p}"))
    qkv, out = _attention(c, "encoder.0.0.module.")
    m |= {"policy.critic.attn.qkv.weight": (qkv, "encoder.0.0.module." + QKV),
          "policy.critic.attn.qkv.bias": (torch.zeros(qkv.shape[0]), "(none: zero)"),
          "policy.critic.attn.out.weight": (out, "encoder.0.0.module.W_out"),
          "policy.critic.attn.out.bias": (torch.zeros(out.shape[0]), "(none: zero)")}
    for ours, theirs in (("ff.0", "encoder.0.2.module.0"), ("ff.2", "encoder.0.2.module.2"),
                         ("project_node", "value_head.project_node"),
                         ("project_graph", "value_head.project_graph"),
                         ("value.0", "value_head.MLP.fc1"), ("value.3", "value_head.MLP.fc2"),
                         ("value.5", "value_head.MLP.fc3")):
        for p in ("weight", "bias"):
            m[f"policy.critic.{ours}.{p}"] = (c(f"{theirs}.{p}"), f"{theirs}.{p}")
    actor.check_all_used()
    critic.check_all_used()
    options = {"problem": "pdtsp", "num_customers": int(num_customers), "pe": "dact_cpe",
               "dim": int(dim), "pe_dim": int(dim), "heads": int(heads), "num_layers": layers}
    return _build("n2s", options, m, name, {"original": "n2s", "file": name,
                                            "critic_attention_biases": "zero"})


def import_dact(content: Any, *, num_customers: int, name: str = "checkpoint"
                ) -> dict[str, Any]:
    """Our ``dact`` checkpoint (``encoder="native"``) of VRP-DACT's saved dict
    ``content`` (``actor`` and ``critic`` state dicts; the mapping:
    :mod:`pyg_routing.training.import_dact`). The problem (TSP or CVRP), width, heads
    and layers come from the shapes and keys; the problem size is not in the file.

    Raises:
        CorruptFileError: not a VRP-DACT checkpoint, a key missing, unexpected or of
            another shape (names ``name`` and the key).
    """
    actor = TensorSource(_entry(content, "actor", "DACT", name), "actor state dict", name)
    critic = TensorSource(_entry(content, "critic", "DACT", name), "critic state dict", name)
    options = dact_options(actor.state, num_customers, name, CorruptFileError)
    with _naming(name, actor, critic):
        mapped = dact_mapping(actor.__getitem__, critic.__getitem__, options["num_layers"])
    actor.check_all_used()
    critic.check_all_used()
    return _build("dact", options, mapped, name, {"original": "dact", "file": name})


def import_original(original: str, path: str | Path, *, trust: bool = False,
                    **options: Any) -> dict[str, Any]:
    """Read the original ``original`` (``"nds"``, ``"n2s"`` or ``"dact"``) checkpoint at
    ``path`` and import it (``options``: of :func:`import_nds` / :func:`import_n2s` /
    :func:`import_dact`)."""
    if original not in ORIGINALS:
        raise ValueError(f"unknown original {original!r}; choose from {', '.join(ORIGINALS)}")
    content = read_original(path, trust=trust)
    name = os.fspath(path)
    if original == "nds":
        return import_nds(content, name=name, **options)
    if options.get("num_customers") is None:
        raise ValueError(f"{name}: an {original.upper()} checkpoint does not say its problem "
                         f"size; pass num_customers (command line: --num_customers)")
    importer = import_n2s if original == "n2s" else import_dact
    return importer(content, num_customers=options["num_customers"], name=name)


def check_out_path(out: str | Path) -> Path:
    """Refuse an output path that cannot become a checkpoint file, before anything is
    read or written: an existing folder, or a parent that is a file.

    Raises:
        IsADirectoryError, NotADirectoryError: naming the path.
    """
    out = Path(out)
    if out.is_dir():
        raise IsADirectoryError(f"--out {out} is a folder; give the checkpoint file to "
                                f"write (e.g. {out / 'imported.ckpt'})")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise NotADirectoryError(f"--out {out}: {parent} is a file, not a folder")
            break
    return out


def write_checkpoint(checkpoint: dict[str, Any], out: str | Path) -> Path:
    """Write ``checkpoint`` to ``out`` (parents created; written to a temporary file
    and renamed, so a failed write leaves neither a partial checkpoint nor the
    temporary file). ``out`` is checked first (:func:`check_out_path`)."""
    out = check_out_path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    try:
        torch.save(checkpoint, tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out
