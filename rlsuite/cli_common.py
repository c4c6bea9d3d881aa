"""The command-line toolkit every rlsuite CLI is built from.

``rlsuite``, ``traffic-train``, ``qopt-bench`` (with its plugin commands) and
``hier-train`` (with its robot commands) take their shared flags from this
module, so a flag is spelled, parsed and explained the same way everywhere.
This docstring is the one place the grammar is written down; the flags' help
repeats it in short.

Setting fields: ``--set KEY=VALUE`` (and ``--plan-set``, ``--env-set``)
    One field per flag; repeat the flag for more. VALUE is read as JSON when it
    parses as JSON (``lr=1e-3`` is a number, ``hidden=[64,64]`` a list,
    ``normalize_actions=false`` a bool, ``seed=null`` None) and is kept as text
    otherwise (``policies=shared``).

Search spaces: ``--search KEY=SPEC``
    One Ray Tune search-space entry per flag; repeat the flag for more keys.
    SPEC is one of::

        uniform:LO:HI       a float drawn uniformly from [LO, HI]
        loguniform:LO:HI    a float drawn log-uniformly, 0 < LO < HI
        choice:A,B,...      one of the values, drawn at random per trial
        grid:A,B,...        every value, one trial each (grid search)

    The values of ``choice`` and ``grid`` may be written bare or in brackets:
    ``choice:5,10`` and ``choice:[5,10]`` are the same entry. Each value is read
    as JSON when it can be and as text otherwise, so ``choice:relu,tanh`` offers
    two strings and ``choice:[64,64],[128,128]`` two lists (``choice:[[64,64]]``
    offers the single list ``[64,64]``).

Cluster flags: :func:`add_cluster_flags`, :func:`ray_cluster`
    ``--address HOST:PORT`` joins a running Ray cluster instead of starting an
    embedded one, ``--num-cpus N`` sizes the embedded one, ``--workers N`` sets
    how many parallel workers a command uses (0: in this process, without Ray,
    where a command allows it).

Plain options: :func:`add_flags`, :func:`add_command`
    A command's own options as one table, one row per flag (its type, default,
    help), instead of an ``add_argument`` block per flag; a subcommand and the
    function it runs in one call.

Also here: the count types :func:`nonneg_int`, :func:`positive_int` and
:func:`positive_ints` for argparse; :func:`add_json_flag` and :func:`write_json`
for ``--json PATH``; and :class:`Probe`, what an app's ``probes()`` (announced
in the ``rlsuite.probes`` entry-point group) reports to ``rlsuite info``.

Bad input raises ``ValueError`` (``argparse.ArgumentTypeError`` inside argparse
types) whose message names the flag, the input, and a correct example. Every CLI's
``main`` turns :data:`USER_ERRORS` into one line on standard error and exit status 2,
with no traceback.

Example::

    >>> parse_sets(["lr=1e-3", "hidden=[64,64]", "policies=shared"])
    {'lr': 0.001, 'hidden': [64, 64], 'policies': 'shared'}
    >>> search_spec("choice:5,10") == search_spec("choice:[5,10]")
    True
    >>> search_spec("loguniform:1e-4:1e-2")
    SearchSpec(kind='loguniform', values=(0.0001, 0.01))

This module imports no app, and nothing outside the standard library at import
time (Ray Tune only to build a search space, the platform's cluster only to start
one).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

PROBES_GROUP = "rlsuite.probes"
"""Entry-point group through which each app announces its ``probes()`` function."""

SET_HELP = (
    "as KEY=VALUE, VALUE read as JSON when it can be (lr=1e-3, hidden=[64,64]) "
    "and as text otherwise; repeatable"
)
SEARCH_KINDS = ("uniform", "loguniform", "choice", "grid")
SEARCH_HELP = (
    "a search-space entry KEY=SPEC, SPEC one of uniform:LO:HI, loguniform:LO:HI, "
    "choice:A,B,... or grid:A,B,... (brackets optional: choice:[5,10] = choice:5,10); "
    "repeatable"
)
_SEARCH_EXAMPLE = "lr=loguniform:1e-4:1e-2"
_SEARCH_USAGE = (
    "write KEY=SPEC with SPEC one of uniform:LO:HI, loguniform:LO:HI, choice:A,B,... or "
    "grid:A,B,... (e.g. lr=loguniform:1e-5:1e-3, num_epochs=choice:5,10)"
)


# --------------------------------------------------------------------------- --set


USER_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    FileNotFoundError,
    FileExistsError,
    ConnectionError,
)
"""What a user's input or setup can cause (a bad flag, a missing or taken path, a Ray
cluster that does not answer or refuses the token): each message says what was wrong and
what to do, so a CLI prints it as one line instead of a traceback."""


def parse_value(text: str) -> Any:
    """``"1e-3"`` -> ``0.001``, ``"[64,64]"`` -> ``[64, 64]``, ``"shared"`` -> ``"shared"``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _split(item: str, form: str, example: str) -> tuple[str, str]:
    """``"key=rest"`` -> ``("key", "rest")``; ``form`` and ``example`` go into the error."""
    key, eq, rest = item.partition("=")
    key = key.strip()
    if not eq:
        raise ValueError(f"expected {form} (e.g. {example}), got {item!r}")
    if not key:
        raise ValueError(f"expected {form} with a key before '=' (e.g. {example}), got {item!r}")
    return key, rest


def key_value(text: str) -> tuple[str, Any]:
    """argparse type of ``--set``-like flags: ``"lr=1e-3"`` -> ``("lr", 0.001)``."""
    try:
        key, value = _split(text, "key=value", "lr=3e-4")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return key, parse_value(value)


def parse_sets(items: Iterable[str | tuple[str, Any]] | None) -> dict[str, Any]:
    """``--set`` entries (``"key=value"`` text or ``(key, value)`` pairs from
    :func:`key_value`) -> ``{key: value}``; a later entry for a key wins."""
    out: dict[str, Any] = {}
    for item in items or []:
        if isinstance(item, str):
            try:
                key, value = _split(item, "key=value", "lr=3e-4")
            except ValueError as e:
                raise ValueError(f"bad --set entry: {e}") from None
            out[key] = parse_value(value)
        else:
            key, value = item
            out[key] = value
    return out


def add_set_flag(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    flag: str = "--set",
    *,
    what: str = "a plan field",
    example: str = "lr=3e-4",
) -> None:
    """Add a repeatable ``KEY=VALUE`` flag; its value is a list of ``(key, value)`` pairs."""
    parser.add_argument(
        flag,
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"{what} {SET_HELP}, e.g. {flag} {example}",
    )


# --------------------------------------------------------------------------- --search


@dataclass(frozen=True)
class SearchSpec:
    """One parsed ``--search`` SPEC: a distribution kind and its arguments."""

    kind: str
    """One of :data:`SEARCH_KINDS`."""
    values: tuple[Any, ...]
    """``(LO, HI)`` for uniform and loguniform; the candidate values for choice and grid."""

    def to_tune(self) -> Any:
        """The Ray Tune domain (``tune.loguniform(...)``, ``tune.grid_search([...])``...)."""
        from ray import tune

        if self.kind in ("uniform", "loguniform"):
            return getattr(tune, self.kind)(*self.values)
        if self.kind == "choice":
            return tune.choice(list(self.values))
        return tune.grid_search(list(self.values))


def _candidates(args: str) -> list[Any]:
    """``5,10`` / ``[5,10]`` / ``relu,tanh`` / ``[64,64],[128,128]`` -> the values."""
    text = args.strip()
    for candidate in (text, f"[{text}]"):
        try:
            values = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(values, list):
            return values
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return [parse_value(v.strip()) for v in text.split(",") if v.strip()]


def search_spec(spec: str, key: str = "KEY") -> SearchSpec:
    """Parse one SPEC (the part after ``KEY=``); see the module docstring for the grammar."""
    entry = f"{key}={spec}"
    kind, _, args = str(spec).partition(":")
    kind = kind.strip()
    if kind not in SEARCH_KINDS:
        raise ValueError(
            f"bad --search entry {entry!r}: unknown search kind {kind!r}; {_SEARCH_USAGE}"
        )
    if kind in ("uniform", "loguniform"):
        example = f"e.g. {key}={kind}:1e-4:1e-2"
        try:
            lo, hi = (float(x) for x in args.split(":"))
        except ValueError:
            raise ValueError(
                f"bad --search entry {entry!r}: {kind} takes two numbers LO:HI, {example}"
            ) from None
        if not lo < hi or (kind == "loguniform" and lo <= 0):
            need = "0 < LO < HI" if kind == "loguniform" else "LO < HI"
            raise ValueError(
                f"bad --search entry {entry!r}: {kind} needs {need}, got LO={lo:g} and "
                f"HI={hi:g}; {example}"
            )
        return SearchSpec(kind, (lo, hi))
    values = _candidates(args)
    if not values:
        raise ValueError(
            f"bad --search entry {entry!r}: {kind} needs at least one value, e.g. {key}={kind}:5,10"
        )
    return SearchSpec(kind, tuple(values))


def key_spec(text: str) -> tuple[str, str]:
    """argparse type of ``--search``: ``"lr=loguniform:1e-4:1e-2"`` -> ``("lr", "loguniform:...")``.

    Only the ``KEY=`` split happens here; the SPEC is checked by :func:`parse_search`
    when the command runs, so a bad SPEC is the command's error (exit status 2).
    """
    try:
        return _split(text, "key=spec", _SEARCH_EXAMPLE)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def parse_search(items: Iterable[str | tuple[str, Any]]) -> dict[str, Any]:
    """``--search`` entries (``"key=spec"`` text or ``(key, spec)`` pairs from
    :func:`key_spec`) -> Ray Tune's param space, e.g. ``["lr=loguniform:1e-4:1e-2"]``
    -> ``{"lr": tune.loguniform(1e-4, 1e-2)}``; a later entry for a key wins."""
    specs: dict[str, SearchSpec] = {}
    for item in items:
        if isinstance(item, str):
            try:
                key, spec = _split(item, "key=spec", _SEARCH_EXAMPLE)
            except ValueError:
                raise ValueError(f"bad --search entry {item!r}: {_SEARCH_USAGE}") from None
        else:
            key, spec = item
        specs[key] = search_spec(str(spec), key)
    return {k: s.to_tune() for k, s in specs.items()}


def add_search_flag(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    *,
    required: bool = False,
    default_text: str = "",
) -> None:
    """Add the repeatable ``--search KEY=SPEC``; its value is a list of ``(key, spec)`` pairs.
    ``default_text`` says what the command searches when the flag is not given."""
    parser.add_argument(
        "--search",
        type=key_spec,
        action="append",
        default=[],
        required=required,
        metavar="KEY=SPEC",
        help=SEARCH_HELP + (f" (default: {default_text})" if default_text else ""),
    )


def tune_options(args: argparse.Namespace) -> dict[str, Any]:
    """:func:`rlsuite.platform.tuning.tune`'s keywords from a tune command's ``--scheduler``,
    ``--samples`` and ``--iterations``."""
    return {"scheduler": args.scheduler, "num_samples": args.samples, "iterations": args.iterations}


# --------------------------------------------------------------------------- counts


def nonneg_int(text: str) -> int:
    """argparse type: a whole number >= 0 (a count, a seed, 0 workers)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(
            f"expected a whole number >= 0, got {v} (a count cannot be negative)"
        )
    return v


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive whole number, got {text!r}"
        ) from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {v}")
    return v


def positive_ints(text: str) -> tuple[int, ...]:
    """argparse type: comma-separated positive whole numbers, ``"10,100"`` -> ``(10, 100)``."""
    parts = [p for p in text.replace(" ", "").split(",") if p]
    if not parts:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated positive whole numbers, e.g. 5,10,20; got {text!r}"
        )
    return tuple(positive_int(p) for p in parts)


# --------------------------------------------------------------------------- plain options


def add_command(
    subparsers: Any, name: str, func: Any, help: str, description: str | None = None
) -> argparse.ArgumentParser:
    """A subcommand ``name`` of ``subparsers`` that runs ``func(args)`` (set as ``func``),
    its ``description`` laid out as written (``--help`` reads like a man page)."""
    p = subparsers.add_parser(
        name,
        help=help,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(func=func)
    return p


REQUIRED = object()
"""The default of an :func:`add_flags` row whose flag must be given."""


def add_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *rows: tuple) -> None:
    """Add a command's plain options from a table, one row per flag:
    ``(flag, kind, default, help)`` or ``(flag, kind, default, help, metavar)``.

    ``kind`` is the value's type (``int``, :func:`positive_int`, ...), ``bool`` for a
    switch (``store_true``), a tuple for ``choices``, or ``None`` for text; ``default``
    :data:`REQUIRED` makes the flag required.

    Example::

        >>> p = argparse.ArgumentParser()
        >>> add_flags(p, ("--episodes", positive_int, 4, "episodes"), ("--gui", bool, False, "show"))
        >>> p.parse_args(["--episodes", "2"])
        Namespace(episodes=2, gui=False)
    """
    for flag, kind, default, help_text, *metavar in rows:
        kw: dict[str, Any] = {"help": help_text}
        if default is REQUIRED:
            kw["required"] = True
        else:
            kw["default"] = default
        if kind is bool:
            kw["action"] = "store_true"
        elif isinstance(kind, tuple):
            kw["choices"] = kind
        elif kind is not None:
            kw["type"] = kind
        if metavar:
            kw["metavar"] = metavar[0]
        parser.add_argument(flag, **kw)


# --------------------------------------------------------------------------- cluster


def add_cluster_flags(
    parser: argparse.ArgumentParser,
    *,
    num_cpus: bool = True,
    workers: str | None = None,
    workers_default: int | None = None,
) -> argparse._ArgumentGroup:
    """Add the cluster flags in a "cluster" group: ``--address`` always, ``--num-cpus``
    unless ``num_cpus`` is false, and ``--workers`` (a count >= 0, default
    ``workers_default``) when ``workers`` gives its help text."""
    g = parser.add_argument_group("cluster")
    g.add_argument(
        "--address",
        default=None,
        metavar="HOST:PORT",
        help="join a running Ray cluster (host:port or 'auto', started with `ray start "
        "--head`) instead of starting an embedded local Ray",
    )
    if num_cpus:
        g.add_argument(
            "--num-cpus",
            type=positive_int,
            default=None,
            metavar="N",
            help="CPUs of the embedded local Ray (default: all)",
        )
    if workers is not None:
        g.add_argument(
            "--workers", type=nonneg_int, default=workers_default, metavar="N", help=workers
        )
    return g


def ray_cluster(args: argparse.Namespace) -> contextlib.AbstractContextManager:
    """The Ray the cluster flags ask for, as a context manager: none at all with
    ``--workers 0`` (the work runs in this process), else the cluster at ``--address``
    or an embedded local Ray of ``--num-cpus`` CPUs, shut down on exit if this call
    started it."""
    if getattr(args, "workers", None) == 0:
        return contextlib.nullcontext()
    from rlsuite.platform import cluster

    return cluster.local_cluster(
        num_cpus=getattr(args, "num_cpus", None), address=getattr(args, "address", None)
    )


# --------------------------------------------------------------------------- JSON


def _json_default(o: Any) -> Any:
    if hasattr(o, "tolist"):  # NumPy numbers and arrays, without importing NumPy
        return o.tolist()
    return str(o)


def json_text(data: Any, indent: int | None = 2) -> str:
    """``data`` as JSON text; NumPy values become plain numbers and lists, other objects text."""
    return json.dumps(data, indent=indent, default=_json_default)


def write_json(path: str, data: Any) -> str:
    """Write ``data`` to ``path`` as indented JSON (parent folders created); returns ``path``."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(json_text(data) + "\n")
    return path


def add_json_flag(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    what: str = "the results",
    default_text: str = "",
) -> None:
    """Add ``--json PATH`` (value ``None`` when not given), for :func:`write_json`;
    ``default_text`` says where the command writes them when the flag is not given."""
    parser.add_argument(
        "--json",
        default=None,
        metavar="PATH",
        help=f"write {what} to PATH as JSON"
        + (f" (default: {default_text})" if default_text else ""),
    )


# --------------------------------------------------------------------------- probes


@dataclass(frozen=True)
class Probe:
    """One external component an app needs, as ``rlsuite info`` shows it."""

    component: str
    """What it is, e.g. ``"SUMO binary (eclipse-sumo)"``."""
    found: str | None
    """What was found (a version, a path); ``None`` when it is missing."""
    how: str
    """How to get it when it is missing."""


def dist_version(dist: str) -> str | None:
    """The installed version of the distribution ``dist``, or ``None``."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
