"""Lazy re-exports for a package's ``__init__`` (PEP 562), so that importing one
light submodule (``pyg_routing.data.problems``) does not import the whole package and
torch with it: the command line's help and option checks need only such modules."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any


class _LazyPackage(ModuleType):
    """A package whose public names come from its submodules on first use."""

    def __setattr__(self, name: str, value: Any) -> None:
        # Importing the submodule ``pkg.route_quantities`` binds it on the package, which
        # would hide the function ``route_quantities`` the package exports under the same
        # name (an eager ``__init__`` rebinds it to the function): the export wins.
        if isinstance(value, ModuleType) and name in self.__dict__.get("_EXPORTS", {}):
            return
        super().__setattr__(name, value)


def lazy_exports(package: str, exports: dict[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` whose public ``name`` lives in
    its submodule ``exports[name]``, imported on first access (``package`` must keep
    ``exports`` as its ``_EXPORTS``)."""
    sys.modules[package].__class__ = _LazyPackage

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
