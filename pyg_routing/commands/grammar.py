"""The command line's grammar, on jsonargparse (what LightningCLI stands on).

One rule for every command: an option is ``--name`` or ``--section.name`` (dashes and
underscores are the same: ``--num-customers`` is ``--num_customers``); a recipe's
options come from its dataclasses (:mod:`pyg_routing.training.config`), so their
types, ranges and help are declared once; ``--config FILE_OR_NAME`` reads a recipe
(later options override it; several may be given, later ones win); ``--print_config``
prints the resolved configuration as YAML and exits (read back with ``--config``, it
reproduces the run).

Errors are one line on stderr with exit status 2, naming the option; an option of
another backbone is refused naming the backbones it belongs to.
"""

from __future__ import annotations

import argparse
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from jsonargparse import (
    ActionConfigFile,
    ArgumentParser,
    DefaultHelpFormatter,
    Namespace,
    set_parsing_settings,
)

from pyg_routing import recipes
from pyg_routing.errors import one_line
from pyg_routing.training.sections import Section

# the attribute docstrings of the recipe dataclasses are the options' help
set_parsing_settings(docstring_parse_attribute_docstrings=True)


F = TypeVar("F", bound=Callable[..., Any])


class _HelpFormatter(DefaultHelpFormatter):
    """jsonargparse's help, with our option types (functions) shown by what they accept
    (``integer >= 1``, :func:`accepts`) instead of a function's repr."""

    def _get_type_str(self, action: argparse.Action) -> str | None:
        if isinstance(action.type, types.FunctionType):
            return getattr(action.type, "accepts", None)
        return super()._get_type_str(action)


def accepts(description: str) -> Callable[[F], F]:
    """Name what an option type accepts in the help (``@accepts("i/n")``)."""
    def mark(parse: F) -> F:
        parse.accepts = description  # type: ignore[attr-defined]
        return parse
    return mark


class CommandParser(ArgumentParser):
    """A jsonargparse parser whose usage errors are one line on stderr (exit 2), that
    takes no abbreviated option and whose help is plain text. ``foreign`` maps an
    option that another backbone has (``--train.rollouts``) to the backbones that
    have it, so refusing it can say so."""

    def __init__(self, *args: Any, foreign: dict[str, tuple[str, ...]] | None = None,
                 backbone: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("print_config", None)
        kwargs.setdefault("exit_on_error", True)
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)
        self.foreign, self.backbone = foreign or {}, backbone

    def error(self, message: str, ex: Exception | None = None) -> NoReturn:
        text = choice_message(one_line(message))
        for flag, owners in self.foreign.items():
            if f"unrecognized arguments: {flag}" in text or \
                    f"unrecognized arguments: {flag}=" in text:
                text = (f"{flag} is an option of the {' and '.join(owners)} backbone"
                        f"{'s' if len(owners) > 1 else ''}; the {self.backbone} backbone "
                        f"has no such option")
                break
        self.exit(2, f"{self.prog}: error: {text}\n")


_CHOICE = re.compile(r'Parser key "([\w.]+)":.*?Literal\[([^\]]*)\].*?'
                     r'(?:Given value|Got value): (.*?)$')


def choice_message(text: str) -> str:
    """jsonargparse's refusal of a value outside a ``Literal``'s choices (``Does not
    validate against any of the Union subtypes ...``) as the configuration's own
    message: ``--KEY must be one of a, b; got 'v'``. Other messages are unchanged."""
    found = _CHOICE.search(text)
    if found is None:
        return text
    key, choices, value = found.groups()
    names = [c.strip().strip("'\"") for c in choices.split(",")]
    if "NoneType" in text:
        names.append("null")
    return f"--{key} must be one of {', '.join(names)}; got {value.strip()!r}"


# --------------------------------------------------------------------------- argv

class Argv(list):
    """A normalized argument list that remembers how each option was typed."""

    spelled: dict[str, str]


def normalize(argv: Sequence[str]) -> Argv:
    """``argv`` with every option's name spelt with underscores (``--num-customers`` ->
    ``--num_customers``; values are untouched) and shipped recipe names after
    ``--config`` resolved to their files. The result remembers the spelling the user
    typed (:func:`typed`)."""
    out = Argv()
    out.spelled = typed(argv)
    after_config = False
    for token in argv:
        if after_config:
            out.append(str(recipes.path(token)) if recipes.is_name(token) else token)
            after_config = False
            continue
        if token == "--":
            out.append(token)
            continue
        if token.startswith("--") and len(token) > 2:
            name, sep, value = token[2:].partition("=")
            name = name.replace("-", "_")
            if name == "config" and sep:
                value = str(recipes.path(value)) if recipes.is_name(value) else value
            after_config = name == "config" and not sep
            token = f"--{name}{sep}{value}"
        out.append(token)
    return out


def typed(argv: Sequence[str]) -> dict[str, str]:
    """The options typed on the command line: ``{key: flag as typed}`` (``key`` is
    the dotted destination, ``train.batch_size``), up to ``--``."""
    if isinstance(argv, Argv):
        return dict(argv.spelled)
    out: dict[str, str] = {}
    for token in argv:
        if token == "--":
            break
        if token.startswith("--") and len(token) > 2:
            flag = token.split("=", 1)[0]
            out.setdefault(flag[2:].replace("-", "_"), flag)
    return out


def value_after(argv: Sequence[str], flag: str) -> str | None:
    """The last value given to ``flag`` (``--flag v`` or ``--flag=v``) in ``argv``."""
    found = None
    for i, token in enumerate(argv):
        if token == flag and i + 1 < len(argv):
            found = argv[i + 1]
        elif token.startswith(flag + "="):
            found = token.split("=", 1)[1]
    return found


def values_after(argv: Sequence[str], flag: str) -> list[str]:
    """Every value given to ``flag``, in order."""
    out = []
    for i, token in enumerate(argv):
        if token == flag and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif token.startswith(flag + "="):
            out.append(token.split("=", 1)[1])
    return out


def refuse_typed(given: dict[str, str], keys: Iterable[str], why: str,
                 values: Namespace | dict[str, Any] | None = None) -> None:
    """``ValueError`` ``"<flag> [value] <why>"`` for the first of ``keys`` typed on the
    command line (an option that does not apply to what the other options ask for)."""
    for key in keys:
        if key in given:
            value = _lookup(values, key) if values is not None else None
            shown = "" if isinstance(value, bool) or value is None else f" {value}"
            raise ValueError(f"{given[key]}{shown} {why}")


def _lookup(values: Namespace | dict[str, Any], key: str) -> Any:
    current: Any = values
    for part in key.split("."):
        current = current.get(part) if isinstance(current, dict) else getattr(current, part,
                                                                                None)
        if current is None:
            return None
    return current


# --------------------------------------------------------------------------- recipes

def option_keys(config_class: type[Section], prefix: str = "") -> list[str]:
    """Every option of a configuration class, dotted (``train.batch_size``)."""
    hints = typing.get_type_hints(config_class)
    out = []
    for f in fields(config_class):
        kind = hints[f.name]
        if isinstance(kind, type) and issubclass(kind, Section):
            out += option_keys(kind, f"{prefix}{f.name}.")
        else:
            out.append(f"{prefix}{f.name}")
    return out


def add_config_options(parser: CommandParser, what: str = "recipe") -> None:
    """``--config`` and ``--print_config``."""
    parser.add_argument("--config", action=ActionConfigFile,
                        help=f"a {what}: a YAML file or a shipped recipe's name (pyg-routing "
                             f"recipes lists them); the options after it override it; "
                             f"repeat it to layer an overlay (e.g. --config dact/cvrp20 "
                             f"--config cpu/dact)")
    parser.add_argument("--print_config", action="store_true",
                        help="print the resolved configuration as YAML and exit (read back "
                             "with --config, it reproduces the run)")


def add_recipe(parser: CommandParser, config_class: type[Section],
               backbones: Sequence[str]) -> None:
    """The options of ``config_class`` (a backbone's recipe) on ``parser``, with
    ``--backbone``, ``--config`` and ``--print_config``."""
    add_config_options(parser)
    parser.add_argument("--backbone", choices=tuple(backbones),
                        default=getattr(config_class, "backbone", None),
                        help="improvement backbone (its options are listed by "
                             "--backbone NAME --help)")
    parser.add_class_arguments(config_class, nested_key=None, fail_untyped=True,
                               sub_configs=False)


def foreign_options(mine: type[Section], others: dict[str, type[Section]]
                    ) -> dict[str, tuple[str, ...]]:
    """``--key -> backbones`` for the options other backbones have and ``mine`` lacks."""
    own = set(option_keys(mine))
    out: dict[str, list[str]] = {}
    for name, cls in others.items():
        for key in option_keys(cls):
            if key not in own:
                out.setdefault(f"--{key}", []).append(name)
    return {k: tuple(v) for k, v in out.items()}


def config_values(namespace: Namespace, config_class: type[Section]) -> dict[str, Any]:
    """The recipe's values of a parsed namespace (nested dicts, the config's fields
    only)."""
    data = namespace.as_dict()
    return {f.name: data[f.name] for f in fields(config_class) if f.name in data}


def backbone_of(argv: Sequence[str], default: str) -> tuple[str, str | None]:
    """The backbone a command line asks for (``--backbone``, else the last full recipe
    of ``--config``, else ``default``) and the full recipe it names (or ``None``).

    Raises:
        ValueError: ``--backbone`` and a recipe's ``backbone`` disagree.
    """
    named = value_after(argv, "--backbone")
    full = None
    for source in values_after(argv, "--config"):
        data = recipes.read(source)
        if "backbone" in data:
            full = (source, str(data["backbone"]))
    if full and named and full[1] != named:
        raise ValueError(f"--backbone {named} conflicts with --config {full[0]}, a "
                         f"{full[1]} recipe")
    return named or (full[1] if full else default), None if full is None else full[0]


def default_recipe(backbone: str, argv: Sequence[str], config_class: type[Section]
                   ) -> str | None:
    """The shipped recipe a command line without a full ``--config`` starts from
    (:func:`pyg_routing.recipes.default_for`), for its ``--problem`` and
    ``--num_customers`` (else the backbone's defaults)."""
    # the fields' declared defaults: building the configuration would check them
    # against the environments, which imports torch
    defaults = {f.name: f.default for f in fields(config_class)}
    problem = value_after(argv, "--problem") or defaults["problem"]
    try:
        n = int(value_after(argv, "--num_customers") or defaults["num_customers"])
    except ValueError:
        return None                   # the parser refuses the value, naming it
    return recipes.default_for(backbone, str(problem).lower(), n)


def notice(message: str) -> None:
    """A one-line notice of ours on stderr."""
    print(f"pyg-routing: {message}", file=sys.stderr)


def dump_yaml(data: dict[str, Any], header: str = "") -> str:
    """``data`` as YAML in its own key order, under comment lines ``header``."""
    import yaml

    head = "".join(f"# {line}\n" for line in header.splitlines())
    return head + yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def path_option(value: str | Path | None) -> Path | None:
    return None if value is None else Path(value)


# --------------------------------------------------------------------------- types

def count(low: int, high: int | None = None) -> Any:
    """An option type: an integer ``>= low`` (and ``<= high``)."""
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {value!r}") from None
        if high is not None and not low <= number <= high:
            raise argparse.ArgumentTypeError(f"must be an integer in {low}..{high}, "
                                             f"got {number}")
        if number < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {number}")
        return number
    return accepts(f"integer >= {low}" if high is None else f"integer in {low}..{high}")(parse)


#: an option type: the seed of generated instances, of a solver or of a search
seed_value = count(0)


@accepts("number > 0")
def positive(value: str) -> float:
    """An option type: a finite number ``> 0``."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {value!r}") from None
    if not 0 < number < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {value!r}")
    return number


@accepts("comma-separated integers")
def training_seeds(value: str | list[int]) -> list[int]:
    """An option type: comma-separated distinct training seeds (``compare --seeds``)."""
    from pyg_routing.training.config import MAX_SEED

    if isinstance(value, list):               # jsonargparse checks a parsed value again
        value = ",".join(map(str, value))
    try:
        seeds = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated integers, "
                                         f"got {value!r}") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"needs distinct integers, got {value!r}")
    if not all(0 <= s <= MAX_SEED for s in seeds):
        raise argparse.ArgumentTypeError(f"must be integers in 0..{MAX_SEED}, got {value!r}")
    return seeds
