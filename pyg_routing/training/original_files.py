"""Reading the original NDS and N2S checkpoint files as data, and handing out their
tensors with errors that name the file and the key.

NDS's trainer saves its configs as OmegaConf objects (``model_params`` and
``env_params`` are nodes of the Hydra config, each pickled with its parent: the whole
config, resolver cache included). Reading them needs no OmegaConf and runs no code from
the file: the file is unpickled by a restricted unpickler (:class:`ConfigUnpickler`)
whose globals are exactly

* torch's weights-only allowlist (tensors, storages, dtypes, ``OrderedDict``, ...);
* every ``omegaconf.*`` class as an inert stand-in that only keeps the state it is
  given (:class:`_Inert`); :func:`plain` turns it into dicts, lists and values;
* ``collections.defaultdict`` (OmegaConf's resolver cache) as a function that returns a
  plain ``dict`` (the factory is never called);
* ``typing.Any`` (OmegaConf's type annotations) as a stand-in, and the builtin types
  OmegaConf records (``dict``, ``list``, ``int``, ...) as themselves.

Nothing in that list imports a module or runs code taken from the file. Any other global
is refused, naming the file and the global
(:class:`~pyg_routing.errors.UntrustedFileError`), as for any checkpoint. (torch's own
weights-only reader cannot read these files: it fills only exact dicts, and OmegaConf's
cache is a ``defaultdict``, which other libraries allow-list as itself.)
"""

from __future__ import annotations

import _compat_pickle
import os
import pickle
import types
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from pyg_routing.data.files import read_torch
from pyg_routing.errors import CorruptFileError
from pyg_routing.training import backbones

#: builtin types OmegaConf's metadata names (``object_type``, ``key_type``): harmless to
#: call, so they are admitted as themselves
_BUILTIN_TYPES = {f"builtins.{t.__name__}": t
                  for t in (dict, list, tuple, int, float, str, bool, set, frozenset)}


class _Inert:
    """Stand-in for a class the file names (OmegaConf's containers, ``typing.Any``): it
    runs nothing and keeps only the state it is given, as plain containers."""

    def __new__(cls, *args: Any, **kwargs: Any) -> _Inert:
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.state: Any = args or None

    def __setstate__(self, state: Any) -> None:
        self.state = state


def _stand_in(path: str) -> type:
    module, _, name = path.rpartition(".")
    return type(name, (_Inert,), {"__module__": module, "__qualname__": name})


def _plain_defaultdict(*args: Any) -> dict:
    """``collections.defaultdict(factory)`` read as a plain ``dict``."""
    return {}


@cache
def _torch_globals() -> dict[str, Any]:
    """torch's weights-only allowlist (what ``torch.load(weights_only=True)`` admits)."""
    from torch import _weights_only_unpickler

    return dict(_weights_only_unpickler._get_allowed_globals())


class ConfigUnpickler(pickle.Unpickler):
    """The restricted unpickler of the module docs: ``find_class`` admits torch's
    weights-only globals and OmegaConf's containers as plain data; anything else is an
    ``UnpicklingError`` naming the global."""

    def find_class(self, module: str, name: str) -> Any:
        # protocol 2 (torch.save's) names Python 2's modules (``__builtin__.dict``); map
        # them as pickle's own find_class does (no Python 3 module has those names)
        module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        full = f"{module}.{name}"
        allowed = _torch_globals()
        if full in allowed:
            return allowed[full]
        if module == "omegaconf" or module.startswith("omegaconf.") or full == "typing.Any":
            return _stand_in(full)
        if full == "collections.defaultdict":
            return _plain_defaultdict
        if full in _BUILTIN_TYPES:
            return _BUILTIN_TYPES[full]
        raise pickle.UnpicklingError(f"Unsupported global: GLOBAL {full} is not read from "
                                     f"an original checkpoint")


#: what ``torch.load(pickle_module=...)`` takes: a module with ``Unpickler`` and ``load``
CONFIG_PICKLE = types.ModuleType("pyg_routing_config_pickle")
CONFIG_PICKLE.Unpickler = ConfigUnpickler  # type: ignore[attr-defined]
CONFIG_PICKLE.load = lambda f, **kw: ConfigUnpickler(f, **kw).load()  # type: ignore[attr-defined]


def read_original(path: str | Path, *, trust: bool = False) -> Any:
    """The content of an original checkpoint file.

    Without ``trust`` the file is read as data by :class:`ConfigUnpickler`, so no code
    from the file runs and OmegaConf need not be installed. ``trust=True`` unpickles in
    full (UNSAFE), which needs OmegaConf installed.

    Raises:
        FileNotFoundError, CorruptFileError, UntrustedFileError: see
            :func:`~pyg_routing.data.files.read_torch`.
    """
    try:
        return read_torch(path, "checkpoint", trust=trust,
                          opt_in=f"trust=True (command line: {backbones.TRUST_OPTION})",
                          pickle_module=None if trust else CONFIG_PICKLE)
    except (ImportError, AttributeError) as exc:          # trust: a class not installed
        raise CorruptFileError(f"checkpoint {os.fspath(path)} needs {exc} to unpickle "
                               f"in full; leave out {backbones.TRUST_OPTION} to read it "
                               f"as data") from None


def plain(obj: Any) -> Any:
    """An OmegaConf config read by :func:`read_original` (stand-ins holding ``_content``
    (a container) or ``_val`` (a value)) as plain dicts, lists and values; other objects
    unchanged. Interpolations (``"${env_params.problem}"``) stay strings."""
    if isinstance(obj, _Inert):
        state = obj.state if isinstance(obj.state, dict) else {}
        if "_content" in state:
            return plain(state["_content"])
        return plain(state.get("_val"))
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(plain(v) for v in obj)
    return obj


class TensorSource:
    """The original state dict being read: hands out tensors by key, checking each is a
    floating-point tensor of the rank the mapping needs, naming the file and the key
    when one is missing or malformed, and remembers which keys were used.

    Args:
        state: the state dict (``{key: tensor}``).
        what: what it is, for the messages (``"model_state_dict"``).
        name: the file, for the messages.
    """

    def __init__(self, state: Any, what: str, name: str) -> None:
        if not isinstance(state, Mapping) or not all(isinstance(v, Tensor)
                                                     for v in state.values()):
            bad = next((k for k, v in state.items() if not isinstance(v, Tensor)), None) \
                if isinstance(state, Mapping) else None
            detail = f" ({bad!r} is a {type(state[bad]).__name__})" if bad is not None else ""
            raise CorruptFileError(f"{name}: {what} is not a state dict of tensors{detail}")
        self.state, self.what, self.name = state, what, name
        self.used: set[str] = set()
        self.last: str | None = None            # the key read last, for later errors

    def get(self, key: str, ndim: int | None = None) -> Tensor:
        """The tensor ``key`` as float32 on the CPU, of ``ndim`` dimensions when given.

        Raises:
            CorruptFileError: ``key`` missing, not floating point, or of another rank.
        """
        if key not in self.state:
            raise CorruptFileError(f"{self.name}: no {key!r} in the {self.what}")
        self.last, value = key, self.state[key]
        if not value.is_floating_point():
            raise CorruptFileError(f"{self.name}: {key!r} in the {self.what} holds "
                                   f"{value.dtype}, not floating-point weights")
        if ndim is not None and value.dim() != ndim:
            raise CorruptFileError(f"{self.name}: {key!r} in the {self.what} has shape "
                                   f"{tuple(value.shape)}; the original's is {ndim}-d")
        self.used.add(key)
        return value.detach().to("cpu", torch.float32)

    __getitem__ = get

    def check_all_used(self) -> None:
        left = [k for k in self.state if k not in self.used]
        if left:
            raise CorruptFileError(f"{self.name}: unexpected key {left[0]!r} in the "
                                   f"{self.what} (another architecture or normalisation)")
