"""The backbone registry: what ``--backbone`` offers in ``train``, ``evaluate`` and
``compare``, and how a checkpoint finds its backbone again.

A backbone is a :class:`~pyg_routing.training.base.ImprovementLightning` subclass:
its configuration (``config_class``), environment (``make_env``) and policy
(``build_policy``). Register a new one with :func:`register`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyg_routing.data.problems import Problem

if TYPE_CHECKING:
    from pyg_routing.models import ImprovementPolicy
    from pyg_routing.training.base import ImprovementLightning
    from pyg_routing.training.config import BackboneConfig

#: The built-in backbones: name -> (its configuration, its ``LightningModule``), each as
#: ``"module:attribute"``, imported when first asked for: the command line builds its
#: parsers from the configurations without importing torch or Lightning.
BUILTIN: dict[str, tuple[str, str]] = {
    "dact": ("pyg_routing.training.dact_config:DACTConfig",
             "pyg_routing.training.dact:DACTLightning"),
    "n2s": ("pyg_routing.training.n2s_config:N2SConfig",
            "pyg_routing.training.n2s:N2SLightning"),
    "nds": ("pyg_routing.training.nds_config:NDSConfig",
            "pyg_routing.training.nds:NDSLightning"),
}
#: name -> [configuration, LightningModule], each a class or a path not imported yet
_BACKBONES: dict[str, list[Any]] = {name: list(paths) for name, paths in BUILTIN.items()}


def register(lightning: type[ImprovementLightning]) -> type[ImprovementLightning]:
    """Add a backbone under its configuration's ``backbone`` name."""
    _BACKBONES[lightning.config_class.backbone] = [lightning.config_class, lightning]
    return lightning


def unregister(name: str) -> None:
    """Remove the backbone ``name`` (e.g. one a test registered)."""
    _entry(name)
    del _BACKBONES[name]


def names() -> tuple[str, ...]:
    """The registered backbones' names (imports none of them)."""
    return tuple(_BACKBONES)


def _entry(name: str) -> list[Any]:
    if name not in _BACKBONES:
        raise ValueError(f"unknown backbone {name!r}; choose from {', '.join(_BACKBONES)}")
    return _BACKBONES[name]


def _resolve(name: str, which: int) -> Any:
    entry = _entry(name)
    if isinstance(entry[which], str):
        module, attribute = entry[which].split(":")
        entry[which] = getattr(importlib.import_module(module), attribute)
    return entry[which]


def config_class(name: str) -> type[BackboneConfig]:
    """The configuration class of a backbone, without importing its model (a built-in
    one imports no torch); ``ValueError`` lists the names."""
    return _resolve(name, 0)


def get(name: str) -> type[ImprovementLightning]:
    """The ``LightningModule`` class of a backbone; ``ValueError`` lists the names."""
    return _resolve(name, 1)


def available() -> dict[str, str]:
    """Registered backbone names, each with the problems it supports."""
    return {name: ", ".join(p.value for p in get(name).make_env().problems)
            for name in _BACKBONES}


def init_choices() -> tuple[str, ...]:
    """Every initial-solution rule of the registered backbones' environments."""
    found: dict[str, None] = {}
    for name in _BACKBONES:
        found.update(dict.fromkeys(get(name).make_env().inits))
    return tuple(found)


#: How a command line user passes ``trust=True``
TRUST_OPTION = "--trust_checkpoint"


def read_checkpoint(path: str | Path, map_location: Any = "cpu", *,
                    trust: bool = False) -> dict[str, Any]:
    """A checkpoint of a ``pyg-routing train`` run (refused, naming the file, when it
    is not one).

    The file is read as data (``torch.load(weights_only=True)``): our checkpoints
    hold only tensors, numbers, strings and containers, so no type is allow-listed.
    ``trust=True`` loads with full unpickling, as before: UNSAFE, it runs code from
    the file.

    Raises:
        UntrustedFileError: without ``trust``, the file needs another type (the
            message names the file and the type).
        CorruptFileError: not a readable PyTorch file.
        ValueError: not a training checkpoint of a registered backbone.
    """
    from pyg_routing.data.files import read_torch

    ckpt = read_torch(path, "checkpoint", map_location=map_location, trust=trust,
                      opt_in=f"trust=True (command line: {TRUST_OPTION})")
    hp = ckpt.get("hyper_parameters") if isinstance(ckpt, dict) else None
    if not hp or "backbone" not in hp or "state_dict" not in ckpt:
        raise ValueError(f"{path} is not a pyg_routing training checkpoint (no backbone "
                         f"hyper-parameter or weights)")
    get(hp["backbone"])
    return ckpt


def load_policy(ckpt_path: str | Path, expect_problem: str | Problem | None = None,
                expect_pe: str | None = None, expect_backbone: str | None = None,
                map_location: Any = "cpu", compiled: bool | None = None,
                checkpoint: dict[str, Any] | None = None, *,
                trust: bool = False) -> ImprovementPolicy:
    """The trained policy of a checkpoint (eval mode). ``compiled`` overrides
    whether its search path runs under ``torch.compile`` (default: as trained;
    :func:`~pyg_routing.models.compiled.set_compiled`);
    ``checkpoint`` is the file's content when the caller already read it with
    :func:`read_checkpoint` (it is then not read again); ``trust`` is passed to
    :func:`read_checkpoint` (UNSAFE: runs code from the file).

    Raises:
        UntrustedFileError: see :func:`read_checkpoint`.
        ValueError: the file is not a training checkpoint, or it was trained with
            another backbone, on another problem or with another encoding than
            expected; ``compiled=True`` for a policy without a compiled search path.
    """
    ckpt = (read_checkpoint(ckpt_path, map_location, trust=trust) if checkpoint is None
            else checkpoint)
    hp = ckpt["hyper_parameters"]
    wants = {"backbone": expect_backbone, "pe": expect_pe,
             "problem": None if expect_problem is None else Problem.parse(expect_problem).value}
    for key, want in wants.items():
        if want is not None and hp.get(key) != want:
            raise ValueError(f"checkpoint {ckpt_path} was trained with {key} "
                             f"{hp.get(key)!r}, but {want!r} was expected")
    model = get(hp["backbone"])(**hp)
    try:
        model.load_state_dict(ckpt["state_dict"])
    except RuntimeError as err:
        first = str(err).splitlines()[1].strip() if "\n" in str(err) else str(err)
        raise ValueError(f"checkpoint {ckpt_path} does not fit the {hp['backbone']} model its "
                         f"hyper-parameters build ({first}); it was probably written by an "
                         f"earlier version of pyg_routing") from None
    import torch

    from pyg_routing.models.compiled import set_compiled

    model.to(map_location if isinstance(map_location, str | torch.device) else "cpu")
    if compiled is not None and not set_compiled(model.policy, compiled) and compiled:
        raise ValueError(f"checkpoint {ckpt_path}: the {hp['backbone']} policy "
                         f"{type(model.policy.encoder).__name__} has no compiled search "
                         f"path")
    return model.policy.eval()
