"""What a benchmark declaration is made of: the :class:`Benchmark` itself and the
:class:`Row` s it feeds into the table at the top of ``benchmarks/RESULTS.md``.

A row's numbers are read from a results JSON by key paths; nothing is typed in. A key
path is a tuple of steps: a dict key (str), a list index (int), or a dict that picks the
one list element whose fields equal it, e.g. ``("rows", {"controller": "learned"},
"mean_speed")``.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

APPS = ("platform", "traffic", "queryopt", "hierarchy")
"""The apps whose results are grouped in ``benchmarks/results/<app>/``, in table order."""

RESULTS_ENV = "RLSUITE_BENCH_RESULTS"
"""Environment variable naming another results root (``--quick`` runs write there)."""

Step = str | int | dict[str, Any]


def repo_root() -> Path:
    """The repository this ``rlsuite`` was imported from (its ``benchmarks/`` folder beside
    the package), else the current directory."""
    here = Path(__file__).resolve().parents[2]
    return here if (here / "benchmarks").is_dir() else Path.cwd()


def results_root() -> Path:
    """``benchmarks/results`` of the repository, or the folder ``$RLSUITE_BENCH_RESULTS``
    names (the runner points it at a scratch folder for ``--quick`` runs)."""
    other = os.environ.get(RESULTS_ENV)
    return Path(other) if other else repo_root() / "benchmarks" / "results"


def results_dir(app: str) -> str:
    """Where ``app``'s benchmarks write their JSON and PNGs: ``benchmarks/results/<app>``
    (created). Scripts call this instead of building the path themselves.

    >>> results_dir("traffic").endswith("traffic")
    True
    """
    if app not in APPS:
        raise ValueError(f"unknown app {app!r}; one of {', '.join(APPS)}")
    path = results_root() / app
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


@dataclass(frozen=True)
class Value:
    """A number in a results JSON, optionally divided by another number in the same file."""

    path: tuple[Step, ...]
    """Key path to the number."""
    over: tuple[Step, ...] | None = None
    """Key path of a divisor in the same file (for ratios such as learned / all-human)."""
    file: str | None = None
    """Results file (in the row's app folder), when not the row's own."""


@dataclass(frozen=True)
class Anchor:
    """What a row's number is compared with: a published number, a target, or a measured baseline."""

    source: str
    """Where it comes from, shown beside it (paper and table, or "measured here: ...")."""
    number: float | None = None
    """A published number or a target, typed here with its source."""
    measured: Value | None = None
    """A baseline measured here, read from a results JSON."""


def pub(source: str, number: float) -> Anchor:
    """A published number (or a target) and where it comes from."""
    return Anchor(source=source, number=number)


def here(source: str, *path: Step, file: str | None = None) -> Anchor:
    """A baseline measured here: ``source`` says what, ``path`` where it is in the JSON."""
    return Anchor(source=f"measured here: {source}", measured=Value(tuple(path), file=file))


@dataclass(frozen=True)
class Row:
    """One line of the results table."""

    app: str
    task: str
    metric: str
    file: str
    """Results JSON, relative to ``benchmarks/results/<app>/``."""
    value: Value
    anchor: Anchor | None
    """None where nothing comparable is published."""
    command: str
    """The one command that reproduces the JSON (from the repository root)."""
    policy: str = "-"
    """The shipped policy or model the number comes from."""
    fmt: str = "{:.2f}"
    lower_is_better: bool = False

    def files(self) -> set[str]:
        """Every results file this row reads (relative to its app folder)."""
        values = (self.value, self.anchor.measured if self.anchor else None)
        return {self.file} | {v.file for v in values if v is not None and v.file}


def command(name: str, args: str = "") -> str:
    """The command line that runs benchmark ``name`` with ``args``, as rows quote it.

    >>> command("traffic_merge", "--episodes 10")
    'rlsuite bench run traffic_merge --episodes 10'
    """
    return f"rlsuite bench run {name}" + (f" {args}" if args else "")


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: what it runs, its settings, its quick form, its anchors and its rows.

    Exactly one of ``run`` and ``script`` is given. ``run(ctx)`` is a function the shared
    runner calls with a :class:`rlsuite.bench.runner.Context` (settings, seeds, resume,
    where to write); ``script`` is a program in ``benchmarks/`` (not yet a function) that the
    runner starts with the flags given on the command line.
    """

    name: str = ""
    """Unique name (``rlsuite bench run NAME``); from the file: ``benchmarks/<app>/<what>.py``
    is ``<app>_<what>``."""
    app: str = ""
    """One of :data:`APPS`, from the file's folder; the JSON goes to ``benchmarks/results/<app>/``."""
    claim: str = ""
    """What it shows, with its pass criterion; from the file's docstring."""
    anchors: str = ""
    """What it is compared with, where its rows do not say it (each row has its anchor)."""
    run: Callable[[Any], Any] | None = None
    """The function the runner calls with its context."""
    script: str | None = None
    """A script in ``benchmarks/`` the runner starts instead (its own flags pass through)."""
    settings: type | None = None
    """For ``run``: a frozen dataclass of settings; each field becomes a ``--flag``."""
    quick: Mapping[str, Any] | tuple[str, ...] = field(default_factory=dict)
    """The ``--quick`` smoke form: a tiny budget that proves the benchmark still runs end to
    end, writing to a scratch folder. Settings values; for a script, flags without their
    dashes (``dict(episodes=1, no_curve=True)``) or its raw arguments as a tuple."""
    seeds: bool = False
    """Whether it takes ``--seeds`` (a script: passed through as ``--seeds A,B``)."""
    resume: bool = False
    """Whether it takes ``--resume`` (keep finished cells of an earlier run)."""
    heavy: bool = True
    """Whether it runs under the shared heavy-job lock (``/tmp/rlsuite-heavy.lock``)."""
    device: bool = False
    """Whether it needs the 16-core GPU machine (``make bench-smoke`` leaves it out)."""
    rows: tuple[Row, ...] = ()
    """The rows of RESULTS' table it feeds."""

    def __post_init__(self) -> None:
        if self.app and self.app not in APPS:
            near = difflib.get_close_matches(self.app, APPS, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise ValueError(f"benchmark {self.name}: unknown app {self.app!r}{hint}")
        if (self.run is None) == (self.script is None):
            raise ValueError(f"benchmark {self.name}: give exactly one of run= and script=")
        if self.settings is not None and self.run is None:
            raise ValueError(f"benchmark {self.name}: settings= needs run=")
        if isinstance(self.quick, tuple) and self.run is not None:
            raise ValueError(f"benchmark {self.name}: a function's quick= is a dict of settings")
        for row in self.rows:
            if self.app and row.app != self.app:
                raise ValueError(f"benchmark {self.name}: row {row.task!r} is not {self.app}")
