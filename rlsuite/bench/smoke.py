"""``rlsuite bench smoke``: benchmarks' ``--quick`` forms, run one after another into one table.

With ``--rows`` (what ``make bench-smoke`` runs) it re-runs every distinct command of
RESULTS' table in its quick form, so each row's own code path is exercised, and each
benchmark without a row in its plain ``--quick`` form. A row's command becomes its quick
form by these rules (:func:`quick_form`):

- ``--quick`` is added. The flags that choose what runs stay (:data:`CHOICES`: the part,
  tasks, plans, maps, workloads, ...), as does every flag the quick form does not set.
- A flag the quick form sets and that is not a choice is dropped, so the quick value stays:
  budgets (episodes, minutes, wall seconds, scale, queries) and the inputs the quick forms
  hand on to each other (``--originals``, ``--out-name``).
- ``--seeds A,B,C`` keeps its first seed; ``--resume`` and ``--no-lock`` are dropped.
- Flags that write outside the scratch folder are dropped (:data:`WRITES_OUT`: ``--json``
  to a shipped results path, ``--ship`` over a shipped policy), and a run directory under
  ``runs/bench/`` moves to ``runs/bench-quick/``, where the quick forms write theirs.
- ``A && B`` is two commands. An app's own CLI (``traffic-train evaluate ...``) has no quick
  form: it runs as written with ``--episodes 1``.

Quick forms that come out the same are run once. Every benchmark comes first once (its first
row's command, or its plain quick form), then the other row commands, so a run cut short
still covers every benchmark.
"""

from __future__ import annotations

import contextlib
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlsuite.bench.declare import Benchmark

CHOICES = frozenset(
    {"part", "tasks", "impls", "plans", "plan", "envs", "sections", "variant", "versions",
     "maps", "map", "sumo", "controllers", "networks", "workloads", "splits", "no_flat"}
)  # fmt: skip
"""Settings that choose what a command runs: a row's value wins over its quick form's."""
WRITES_OUT = frozenset({"json", "ship"})
"""Settings that would write outside the scratch folder: dropped from a quick form."""
RUNS = "runs/bench/"
"""Where full runs keep their run directories; quick forms use ``runs/bench-quick/``."""


@dataclass(frozen=True)
class SmokeCommand:
    """One command of a smoke run."""

    name: str
    """The benchmark, or the app's CLI program (``traffic-train``)."""
    argv: tuple[str, ...]
    """A benchmark's flags (``--quick`` included), or the CLI program's full command line."""
    row: str = ""
    """The RESULTS command it is the quick form of ("" for a plain ``--quick``)."""
    benchmark: bool = True
    """False for an app's own CLI."""

    def shown(self) -> str:
        """The command line, as a user would type it."""
        if self.benchmark:
            return shlex.join(["rlsuite", "bench", "run", self.name, *self.argv])
        return shlex.join(self.argv)


def quick_form(bench: Benchmark, argv: Sequence[str]) -> tuple[str, ...]:
    """A benchmark's flags from a RESULTS command made into its quick form (module docstring).

    >>> from rlsuite.bench.declare import Benchmark
    >>> b = Benchmark(name="x", app="platform", run=print, seeds=True, resume=True)
    >>> quick_form(b, ["--seeds", "0,1,2", "--resume"])
    ('--quick', '--seeds', '0')
    """
    from rlsuite.bench.runner import build_parser

    parser = build_parser(bench)
    quick = dict(bench.quick) if not isinstance(bench.quick, tuple) else {}
    actions = parser._actions  # noqa: SLF001 - argparse keeps no public list
    out: list[str] = ["--quick"]
    i = 0
    while i < len(argv):
        token = argv[i]
        action = next((a for a in actions if token in a.option_strings), None)
        if action is None:
            raise ValueError(f"{bench.name}: {token!r} in a RESULTS command is not its flag")
        takes = action.nargs != 0  # store_true and --x/--no-x take no value
        values: list[str] = []
        i += 1
        while takes and i < len(argv) and not argv[i].startswith("--"):
            values.append(argv[i])
            i += 1
            if action.nargs is None:
                break
        key = action.dest
        if key in ("quick", "resume", "no_lock") or key in WRITES_OUT:
            continue
        if key == "seeds" and bench.seeds:
            values = [values[0].split(",")[0]]
        elif key in quick and key not in CHOICES:
            continue
        out += [token, *(v.replace(RUNS, "runs/bench-quick/", 1) for v in values)]
    return tuple(out)


def commands(
    benchmarks: Iterable[Benchmark], row_commands: Iterable[str], cli_rows: bool = True
) -> list[SmokeCommand]:
    """The quick forms of ``row_commands`` for ``benchmarks`` (and of the apps' CLI commands
    with ``cli_rows``): each benchmark's first, then the rest (module docstring)."""
    benches = {b.name: b for b in benchmarks}
    by_name: dict[str, list[SmokeCommand]] = {name: [] for name in benches}
    for line in dict.fromkeys(row_commands):
        for part in line.split("&&"):
            words = shlex.split(part)
            if words[:3] == ["rlsuite", "bench", "run"]:
                if words[3] not in benches:
                    continue
                cmd = SmokeCommand(words[3], quick_form(benches[words[3]], words[4:]), line)
            elif cli_rows:
                cmd = SmokeCommand(words[0], _one_episode(words), line, benchmark=False)
            else:
                continue
            found = by_name.setdefault(cmd.name, [])
            if all(c.argv != cmd.argv for c in found):
                found.append(cmd)
    for name, found in by_name.items():
        if not found and name in benches:
            found.append(SmokeCommand(name, ("--quick",)))
    firsts = [found[0] for found in by_name.values()]
    return firsts + [c for found in by_name.values() for c in found[1:]]


def _one_episode(words: list[str]) -> tuple[str, ...]:
    out, i = [], 0
    while i < len(words):
        if words[i] == "--episodes":
            i += 2
            continue
        out.append(words[i])
        i += 1
    return (*out, "--episodes", "1")


def run_all(decl: Any, chosen: list[SmokeCommand], title: str) -> int:
    """Run ``chosen`` in turn and print one table; 1 when any failed. A command passes when it
    ran end to end: exit 0, or exit 1 with a results JSON written (a pass criterion that a tiny
    budget does not meet exits 1 but is no breakage); an error (shown as exit -1), another
    exit status, or exit 1 without a JSON fails it. Each result is also
    a line as it comes, and Ctrl-C stops the run with the table of what ran."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for col in ("benchmark", "command", "exit", "JSON written", "seconds", "verdict"):
        t.add_column(col)
    failed, done, t_all = 0, 0, time.time()
    try:
        for n, c in enumerate(chosen, 1):
            print(f"== smoke {n}/{len(chosen)}: {c.shown()}", flush=True)
            t0 = time.time()
            rc, wrote = _run_one(decl, c, t0)
            ok = rc == 0 or (rc == 1 and c.benchmark and bool(wrote))
            failed, done = failed + (not ok), n
            row = (c.name, " ".join(c.argv if c.benchmark else c.argv[1:]), str(rc),
                   ", ".join(wrote) or "-", f"{time.time() - t0:.0f}", "ran" if ok else "FAILED")  # fmt: skip
            print("== smoke result: " + " | ".join(row), flush=True)
            t.add_row(*row)
    except KeyboardInterrupt:
        print(f"== smoke stopped after {done} of {len(chosen)} commands", flush=True)
    Console(width=200).print(t)
    print(f"{done} of {len(chosen)} commands run, {failed} failed, {time.time() - t_all:.0f} s "
          "(seconds include waits for the heavy-job lock)")  # fmt: skip
    return 1 if failed or done < len(chosen) else 0


def _run_one(decl: Any, c: SmokeCommand, t0: float) -> tuple[int, list[str]]:
    """One command's exit status and the results JSON it wrote (names)."""
    from rlsuite.bench import runner

    try:
        if c.benchmark:
            rc = runner.run(decl.get(c.name), decl.modules[c.name], list(c.argv))
        else:
            with runner.heavy_lock():
                exe = Path(sys.executable).parent / c.argv[0]
                rc = subprocess.run([str(exe), *c.argv[1:]]).returncode
    except Exception as err:  # noqa: BLE001 - one broken command must not hide the rest
        print(f"{c.name}: {type(err).__name__}: {err}", file=sys.stderr)
        rc = -1  # an error, not a missed pass criterion (exit 1): failed even with a JSON
    wrote: list[str] = []
    with contextlib.suppress(OSError):
        wrote = [p.name for p in (runner.QUICK_ROOT / "results").rglob("*.json")
                 if p.stat().st_mtime >= t0]  # fmt: skip
    return rc, wrote
