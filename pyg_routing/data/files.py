"""Guarded reads of the files we write or are handed: checkpoints, dataset caches
and their JSON summaries.

A missing file raises :class:`FileNotFoundError` and a file that exists but
cannot be read (garbage bytes, truncated by an interrupted run, a different kind
of file) raises :class:`~pyg_routing.errors.CorruptFileError`; both name what the
file was meant to be and its path, e.g. ``checkpoint runs/x.ckpt is not a
readable PyTorch file (UnpicklingError: ...)``.

Files from elsewhere are data, not code: PyTorch files are read with
``torch.load(weights_only=True)``, which unpickles only tensors, numbers, strings,
containers and the types allow-listed with ``torch.serialization.add_safe_globals``
(:class:`~pyg_routing.data.RoutingData`). A file that needs any other type is refused
with :class:`~pyg_routing.errors.UntrustedFileError` naming the file and the type;
``trust=True`` loads it as before (full unpickling, which runs code from the file).
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import re
from typing import Any

import torch

from pyg_routing.errors import CorruptFileError, UntrustedFileError

PathLike = str | os.PathLike


def _reason(exc: BaseException) -> str:
    """``"Type: first line of the message"`` (torch's messages run to pages)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def _os_error(exc: OSError, path: PathLike, what: str) -> OSError:
    """The same kind of OSError, naming ``what`` and the path."""
    name = os.fspath(path)
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundError(errno.ENOENT, f"{what} not found", name)
    return type(exc)(exc.errno, f"cannot read {what}: {exc.strerror}", name)


def _check_readable(path: PathLike, what: str) -> None:
    """Raise the filesystem's own error (missing file, a folder, no permission),
    naming ``what``, before any parser sees the file."""
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise _os_error(exc, path, what) from exc


#: The global a weights-only load refused, in torch's message ("Unsupported global:
#: GLOBAL io.open was not an allowed global", "unsupported GLOBAL posix.system whose
#: module posix is blocked").
_REFUSED_GLOBAL = re.compile(r"GLOBAL ([\w.]+)")


def _weights_only_reason(exc: pickle.UnpicklingError) -> str:
    """The line of torch's weights-only error that says what failed (its message opens
    with paragraphs of advice)."""
    text = str(exc).split("Check the documentation of torch.load")[0]
    text = text.split("WeightsUnpickler error:")[-1]
    lines = [s for line in text.splitlines() if (s := line.strip())]
    return f"UnpicklingError: {lines[-1]}" if lines else "UnpicklingError"


def read_torch(path: PathLike, what: str, map_location: Any = "cpu", *, trust: bool = False,
               opt_in: str | None = "trust=True", pickle_module: Any = None) -> Any:
    """``torch.load(path, map_location=map_location, weights_only=not trust)``, guarded.

    Args:
        path: the file.
        what: what the file is meant to be (``"checkpoint"``, ``"dataset cache"``),
            used in error messages.
        map_location: passed to ``torch.load`` (default: CPU).
        trust: load with full unpickling (``weights_only=False``), as before: UNSAFE,
            it runs code from the file; only for files you made or trust.
        opt_in: how the caller's user passes ``trust`` (named in the refusal;
            ``None``: the caller offers no opt-in, e.g. a cache it rebuilds).
        pickle_module: without ``trust``, a restricted unpickler of the caller's to read
            the file with instead of torch's weights-only one (a module with
            ``Unpickler`` and ``load``, whose ``find_class`` refuses a global with an
            ``UnpicklingError`` naming ``GLOBAL <name>``), e.g. for files that hold
            another library's config objects as data.

    Raises:
        FileNotFoundError: ``path`` does not exist (other OSErrors keep their type
            and also name ``what`` and the path).
        UntrustedFileError: without ``trust``, the file holds a type a weights-only
            load refuses (the message names the file and the type).
        CorruptFileError: the file exists but is not a readable PyTorch file (empty,
            truncated, garbage bytes, another kind of file).
    """
    _check_readable(path, what)
    name = os.fspath(path)
    if os.path.getsize(path) == 0:
        raise CorruptFileError(f"{what} {name} is not a readable PyTorch file (the file "
                               f"is empty)")
    try:
        if pickle_module is not None and not trust:
            return torch.load(path, map_location=map_location, weights_only=False,
                              pickle_module=pickle_module)
        return torch.load(path, map_location=map_location, weights_only=not trust)
    except pickle.UnpicklingError as exc:
        refused = None if trust else _REFUSED_GLOBAL.search(str(exc))
        if refused is not None:
            hint = "" if opt_in is None else (f"; pass {opt_in} only if you trust where "
                                              f"the file came from")
            raise UntrustedFileError(
                f"{what} {name} needs {refused.group(1)} (a class or function), which is "
                f"refused without trust (only tensors, numbers, strings and containers "
                f"are read): loading it would run code from the file{hint}") from None
        reason = _reason(exc) if trust else _weights_only_reason(exc)
        raise CorruptFileError(f"{what} {name} is not a readable PyTorch file "
                               f"({reason})") from exc
    except Exception as exc:  # damage shows up as assorted types, OSError included
        raise CorruptFileError(f"{what} {name} is not a readable PyTorch file "
                               f"({_reason(exc)})") from exc


def read_json(path: PathLike, what: str) -> Any:
    """``json.load`` of a UTF-8 file, guarded like :func:`read_torch`.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        CorruptFileError: the file exists but is not valid JSON.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except OSError as exc:
        raise _os_error(exc, path, what) from exc
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
        raise CorruptFileError(f"{what} {os.fspath(path)} is not a readable JSON file "
                               f"({_reason(exc)})") from exc


__all__ = ["read_json", "read_torch"]
