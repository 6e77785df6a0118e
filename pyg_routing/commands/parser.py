"""The command line's parser class, below :mod:`pyg_routing.cli` so that a command
(``reproduce``, which runs other commands' argument lists in-process) parses exactly as
the command line does without importing the CLI module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from pyg_routing.training.fit import record_given


class CommandParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line on stderr (exit 2), like
    the commands' own errors; it takes no abbreviated option (``--time`` is not
    ``--time-limit``) and records which options the user typed
    (:func:`~pyg_routing.training.fit.given`), so a command can refuse one that does
    not apply. Its sub-parsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        arg_strings = list(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(arg_strings, namespace)
        record_given(self, arg_strings, namespace)
        return namespace, extras

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:            # named by the command they were given to
            command = getattr(namespace, "command", None)
            prog = f"{self.prog} {command}" if command else self.prog
            self.exit(2, f"{prog}: error: unrecognized arguments: {' '.join(extras)}\n")
        return namespace

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")
