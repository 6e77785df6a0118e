"""The ``pyg-routing`` command line: one grammar (:mod:`pyg_routing.commands.grammar`)
for ``generate``, ``solve``, ``info``, ``probe``, ``train``, ``evaluate``, ``compare``,
``search``, ``reproduce``, ``import-checkpoint`` and ``recipes``.

Each command's module is imported when the command runs, so ``pyg-routing --help``
imports none of torch, PyG or Lightning.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

#: command -> (module under pyg_routing.commands, one-line summary)
COMMANDS: dict[str, tuple[str, str]] = {
    "generate": ("dataset", "generate a seeded dataset of instances"),
    "solve": ("dataset", "reference solutions of a generated dataset or of an instance file"),
    "info": ("dataset", "describe a dataset folder, cache file or instance"),
    "probe": ("probe", "the paper's probes (Tab. 1, hierarchy entropy, Tab. 3)"),
    "train": ("train", "train an improvement policy as a recipe says"),
    "evaluate": ("evaluate", "search instances with a trained policy or a baseline"),
    "compare": ("compare", "train one model per encoding and compare them (paper Tab. 2)"),
    "search": ("search", "NDS's augmented simulated annealing on instances or CVRPLib X"),
    "reproduce": ("reproduce", "reproduce one of the paper's tables (tab1 ... tab10)"),
    "import-checkpoint": ("import_checkpoint", "an original DACT, N2S or NDS checkpoint "
                                               "as ours"),
    "recipes": ("recipes", "list the shipped recipes, or print one"),
}


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: pyg-routing COMMAND [options]   (pyg-routing COMMAND --help: its options)",
             "", "Routing-aware positional encodings and improvement-based neural VRP "
             "solvers.", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {summary}" for name, (_, summary) in COMMANDS.items()]
    lines += ["", "Options are --name VALUE or --section.name VALUE (dashes and underscores "
              "are the same); --config reads a recipe, --print_config prints one."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"pyg-routing: error: unknown command {name!r}; choose from "
              f"{', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    import warnings

    # a deprecation inside Lightning's own helpers (torch 2.13), not ours to act on
    warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is "
                                              r"deprecated")
    from pyg_routing.commands.grammar import normalize
    from pyg_routing.errors import RunInterrupted, one_line
    from pyg_routing.memory import apply_memory_policy
    from pyg_routing.threads import THREADS_ENV, apply_threads

    module = importlib.import_module(f"pyg_routing.commands.{COMMANDS[name][0]}")
    try:
        try:
            parsed = module.parse(normalize(rest), name) if _takes_name(module) \
                else module.parse(normalize(rest))
        except SystemExit as exc:          # --help, or a usage error already printed
            return exc.code if isinstance(exc.code, int) else 2
        # PYG_ROUTING_THREADS (an integer, or auto: the cores free when the command
        # starts) sets torch's and numba's threads; unset, torch's default stands, so a
        # seeded run repeats its numbers whatever the machine's load
        if os.environ.get(THREADS_ENV):
            apply_threads()
        # freed memory stays in the process (PYG_ROUTING_MALLOC=glibc: glibc's defaults),
        # so a step's temporaries do not come back as fresh, faulted pages every step
        apply_memory_policy()
        if getattr(parsed.options, "print_config", False):
            print(module.print_config(parsed), end="")
            return 0
        wants_json = bool(getattr(parsed.options, "json", False))
        # With --json, stdout carries the JSON alone: whatever the command or a library
        # prints on the way goes to stderr.
        quiet = contextlib.redirect_stdout(sys.stderr) if wants_json \
            else contextlib.nullcontext()
        with quiet:
            result = module.run(parsed)
    except RunInterrupted as exc:       # told to stop: a resumable checkpoint, non-zero
        print(f"pyg-routing {name}: {one_line(exc)}", file=sys.stderr)
        return exc.exit_status
    except Exception as exc:
        if not isinstance(exc, _refused()):
            raise
        print(f"pyg-routing {name}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    if result is None:                    # a worker rank of a distributed command
        return 0
    if wants_json:
        print(json.dumps(result, indent=2))
    elif hasattr(module, "render"):
        print(module.render(result))
    else:
        _print_text(result)
    return 0


def run() -> int:
    """The ``pyg-routing`` script: :func:`main`, whose status it returns for the exit.

    Before it exits, the interpreter collects the reference cycles among the objects of
    every module it tears down; with torch, PyG and Lightning loaded that took 1.2-1.5 s
    on the 2-core development machine, after the command's work was done. Frozen
    (``gc.freeze``), the objects alive at the end are left to reference counting, which
    frees what the exit must free; ``atexit`` handlers and ``weakref.finalize`` still
    run. Only the script does this: :func:`main` called in a process that goes on
    (tests, notebooks) leaves the collector alone.
    """
    code = main()
    gc.freeze()
    return code


def _takes_name(module: Any) -> bool:
    return getattr(module, "TAKES_COMMAND_NAME", False)


def _refused() -> tuple[type[BaseException], ...]:
    """What a command refuses in one line: our errors, bad values, files that cannot be
    read, and Lightning's ``MisconfigurationException`` (a Trainer option that Lightning
    refuses after the commands' own check)."""
    from pyg_routing.errors import RoutingError

    kinds: tuple[type[BaseException], ...] = (RoutingError, ValueError, OSError,
                                              NotImplementedError)
    # Lightning's, only where Lightning was imported (so --help and a refused option
    # value stay free of it: nothing else can have raised its exception)
    lightning = sys.modules.get("lightning.fabric.utilities.exceptions")
    return kinds if lightning is None else (*kinds, lightning.MisconfigurationException)


def _print_text(obj: Any, indent: int = 0) -> None:
    pad = "  " * indent
    if isinstance(obj, dict):
        for key, value in obj.items():
            if isinstance(value, dict | list):
                print(f"{pad}{key}:")
                _print_text(value, indent + 1)
            else:
                shown = f"{value:.6g}" if isinstance(value, float) else value
                print(f"{pad}{key}: {shown}")
    elif isinstance(obj, list):
        for item in obj:
            _print_text(item, indent)
            print()
    else:
        print(f"{pad}{obj}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run())
