"""Guarded reads of the files we write or are handed: checkpoints, dataset caches
and their JSON summaries.

A missing file raises :class:`FileNotFoundError` and a file that exists but
cannot be read (garbage bytes, truncated by an interrupted run, a different kind
of file) raises :class:`~pyg_routing.errors.CorruptFileError`; both name what the
file was meant to be and its path, e.g. ``checkpoint runs/x.ckpt is not a
readable PyTorch file (UnpicklingError: ...)``.
"""

from __future__ import annotations

import errno
import json
import os
from typing import Any

import torch

from pyg_routing.errors import CorruptFileError

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


def read_torch(path: PathLike, what: str, map_location: Any = "cpu") -> Any:
    """``torch.load(path, map_location=map_location, weights_only=False)``, guarded.

    Only load files you trust (as for ``torch.load`` with ``weights_only=False``).

    Args:
        path: the file.
        what: what the file is meant to be (``"checkpoint"``, ``"dataset cache"``),
            used in error messages.
        map_location: passed to ``torch.load`` (default: CPU).

    Raises:
        FileNotFoundError: ``path`` does not exist (other OSErrors keep their type
            and also name ``what`` and the path).
        CorruptFileError: the file exists but is not a readable PyTorch file.
    """
    _check_readable(path, what)
    try:
        return torch.load(path, map_location=map_location, weights_only=False)
    except Exception as exc:  # damage shows up as assorted types, OSError included
        raise CorruptFileError(f"{what} {os.fspath(path)} is not a readable PyTorch file "
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
