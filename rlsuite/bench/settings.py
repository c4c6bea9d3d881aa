"""A function benchmark's settings: a frozen dataclass whose fields become its flags.

Each field ``some_name: T = default`` with a docstring below it becomes ``--some-name``
with that help: ``bool`` -> ``--some-name/--no-some-name``, ``tuple[X, ...]`` -> a
repeatable flag taking one or more values, other types their own parser. ``--quick`` replaces defaults with the
declaration's quick values; a flag given on the command line wins over both.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import inspect
import textwrap
import typing
from collections.abc import Mapping
from typing import Any


def field_docs(cls: type) -> dict[str, str]:
    """Each field's docstring (the string literal under it in the class body), base classes'
    included."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__[:-1]):
        docs.update(_own_docs(klass))
    return docs


def _own_docs(cls: type) -> dict[str, str]:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs = {}
    for node, after in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def add_settings_flags(parser: argparse.ArgumentParser, cls: type) -> None:
    """One flag per field of ``cls`` in a "settings" group; unset flags stay ``None``."""
    g = parser.add_argument_group("settings")
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        kind = hints[f.name]
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        shown = "" if default in ("", ()) else f" (default: {default!r})"
        text = f"{docs.get(f.name, '')}{shown}".strip()
        if kind is bool:
            g.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=text)
        elif typing.get_origin(kind) is tuple:
            item = typing.get_args(kind)[0]
            g.add_argument(flag, type=item, action="extend", nargs="+", default=None, help=text)
        else:
            g.add_argument(flag, type=kind, default=None, metavar=f.name.upper(), help=text)


def settings_from(cls: type, args: argparse.Namespace, quick: Mapping[str, Any]) -> Any:
    """The settings: the dataclass's defaults, then ``quick``, then the flags given."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(quick) - names
    if unknown:
        raise ValueError(f"quick settings {sorted(unknown)} are not fields of {cls.__name__}")
    values = dict(quick)
    for name in names:
        given = getattr(args, name, None)
        if given is not None:
            values[name] = tuple(given) if isinstance(given, list) else given
    return cls(**values)


def picked(text: str, known: list[str], what: str) -> list[str]:
    """The comma-separated names in ``text`` (all of ``known`` when none), each checked: an
    unknown one is a one-line error naming the nearest known one."""
    given = [x for x in text.split(",") if x] or known
    for x in given:
        if x not in known:
            near = difflib.get_close_matches(x, known, n=1)
            raise ValueError(
                f"unknown {what} {x!r}" + (f"; did you mean {near[0]!r}?" if near else "")
            )
    return given
