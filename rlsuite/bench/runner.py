"""The shared runner: one benchmark's flags, seeds, ``--quick`` and ``--resume``, the
heavy-job lock, and the JSON (with the machine and the versions), tables and plots it writes.

A function benchmark gets a :class:`Context`; a script benchmark is started as a child
process with the flags it was given (``--quick`` adds the declaration's quick flags and
sends its files to a scratch folder through ``$RLSUITE_BENCH_RESULTS``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlsuite.bench.declare import RESULTS_ENV, Benchmark, command, repo_root, results_root
from rlsuite.bench.settings import add_settings_flags, settings_from
from rlsuite.cli_common import dist_version, json_text, nonneg_int

LOCK = "/tmp/rlsuite-heavy.lock"
"""The lock every heavy job on a shared machine takes (``flock /tmp/rlsuite-heavy.lock CMD``)."""
QUICK_ROOT = Path("runs") / "bench-quick"
"""Where ``--quick`` runs write (under the current directory), never over shipped results."""
VERSIONED = ("rlsuite", "ray", "torch", "gymnasium", "numpy", "eclipse-sumo", "sqlglot", "pybullet")


def machine() -> dict[str, Any]:
    """The machine a result was measured on: CPUs (usable and physical), memory, OS, Python."""
    from rlsuite.platform.machine import cpu_topology

    cpus = cpu_topology()
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return dict(
        cpu=model or platform.processor() or platform.machine(),
        logical_cpus=cpus.logical,
        usable_cpus=cpus.usable,
        physical_cores=cpus.physical_cores,
        memory_gib=round(mem, 1),
        os=platform.platform(),
        python=platform.python_version(),
    )


def versions() -> dict[str, str]:
    """Installed versions of the packages results depend on (missing ones left out)."""
    found = {name: dist_version(name) for name in VERSIONED}
    return {k: v for k, v in found.items() if v}


def _inherited_lock_fd(path: str) -> int | None:
    """A descriptor this process inherited on ``path`` (``flock path CMD`` passes its own)."""
    with contextlib.suppress(OSError):
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/self/fd/{fd}") == path:
                    return int(fd)
    return None


@contextlib.contextmanager
def heavy_lock(path: str = LOCK, say=print) -> Iterator[None]:
    """Hold the shared heavy-job lock; waits (saying so) while another job holds it. Under
    ``flock LOCK rlsuite bench run ...`` (or inside an outer ``heavy_lock`` of this process)
    the lock already held is used, not waited on."""
    fd = _inherited_lock_fd(path)
    if fd is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ours already: succeeds at once
            held = True
        except OSError:
            held = False
        if held:  # the body's own errors pass through (not caught as a failed lock)
            yield
            return
    handle = open(path, "a+")  # noqa: SIM115 - held open for the block
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for {path} (another heavy job holds it)")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        handle.close()


@dataclass
class Context:
    """What a function benchmark's ``run(ctx)`` gets from the runner."""

    bench: Benchmark
    settings: Any
    """The settings dataclass, flags and ``--quick`` applied."""
    seeds: tuple[int, ...] | None
    quick: bool
    resume: bool
    results: Path
    """Where its JSON and PNGs go: ``benchmarks/results/<app>`` (a scratch folder when quick)."""
    argv: list[str]
    started: float = dataclasses.field(default_factory=time.time)

    def say(self, text: str) -> None:
        from rich.console import Console

        Console().print(text)

    def run_dir(self, default: str) -> str:
        """Where a training run goes: the settings' ``run_dir`` when given, else ``default``
        (e.g. ``runs/bench/NAME``), moved under ``runs/bench-quick/`` for a quick run."""
        given = getattr(self.settings, "run_dir", "")
        if given:
            return given
        return str(QUICK_ROOT / Path(default).name) if self.quick else default

    def path(self, stem: str, suffix: str = ".json") -> Path:
        """``<stem><suffix>`` in the results folder (``stem`` may name a subfolder: created)."""
        path = self.results / f"{stem}{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def load(self, stem: str) -> dict[str, Any]:
        """The earlier JSON of ``stem`` under ``--resume`` (to keep its finished cells), else {}."""
        path = self.path(stem)
        if self.resume and path.exists():
            return json.loads(path.read_text())
        return {}

    def save(self, stem: str, data: Mapping[str, Any]) -> Path:
        """Write ``<stem>.json`` with ``data`` and a ``run`` record: the command, settings,
        seeds, machine, versions and wall seconds."""
        run = dict(
            benchmark=self.bench.name,
            command=command(self.bench.name, shlex.join(self.argv)),
            settings=dataclasses.asdict(self.settings) if self.settings is not None else {},
            seeds=list(self.seeds) if self.seeds is not None else None,
            quick=self.quick,
            machine=machine(),
            versions=versions(),
            wall_s=round(time.time() - self.started, 1),
        )
        path = self.path(stem)
        path.write_text(json_text({**data, "run": run}) + "\n")
        self.say(f"wrote {path}")
        return path

    def verdict(self, checks: Mapping[str, bool]) -> int:
        """Say each pass criterion's PASS or FAIL; the exit status (0 when all passed)."""
        for k, ok in checks.items():
            self.say(f"{'PASS' if ok else 'FAIL'}  {k}")
        return 0 if all(checks.values()) else 1

    def save_plot(self, stem: str, fig: Any) -> Path:
        """Save a matplotlib figure as ``<stem>.png`` and close it."""
        import matplotlib.pyplot as plt

        path = self.path(stem, ".png")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path

    def table(self, rows: Iterable[Mapping[str, Any]], title: str = "") -> None:
        """Print rows of equal keys as a table (floats to 3 significant digits)."""
        from rich.console import Console
        from rich.table import Table

        rows = list(rows)
        t = Table(title=title or self.bench.name)
        for key in rows[0] if rows else ():
            t.add_column(str(key))
        for r in rows:
            t.add_row(*(f"{v:.3g}" if isinstance(v, float) else str(v) for v in r.values()))
        Console().print(t)

    def progress(self, items: Iterable[Any], what: str = "") -> Iterator[Any]:
        """``items`` with a progress bar."""
        from rich.progress import track

        yield from track(list(items), description=what or self.bench.name)


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def quick_flags(quick: Mapping[str, Any] | tuple[str, ...]) -> list[str]:
    """A script's quick settings as flags: True -> ``--key``, a list -> the flag repeated
    (a tuple is taken as the arguments themselves).

    >>> quick_flags({"minutes": 0.1, "no_flat": True, "plan_set": ["lr=0.1"]})
    ['--minutes', '0.1', '--no-flat', '--plan-set', 'lr=0.1']
    """
    if isinstance(quick, tuple):
        return list(quick)
    out: list[str] = []
    for key, value in quick.items():
        if value is True:
            out.append(_flag(key))
        elif isinstance(value, list | tuple):
            for v in value:
                out += [_flag(key), str(v)]
        elif value is not False and value is not None:
            out += [_flag(key), str(value)]
    return out


def anchors(bench: Benchmark) -> str:
    """What the benchmark is compared with: its own words, else its rows' anchors."""
    found = dict.fromkeys(r.anchor.source for r in bench.rows if r.anchor is not None)
    return bench.anchors or "; ".join(found)


def build_parser(bench: Benchmark) -> argparse.ArgumentParser:
    """The flags of ``rlsuite bench run NAME``: the runner's own, then the settings'."""
    p = argparse.ArgumentParser(
        prog=f"rlsuite bench run {bench.name}",
        description=f"{bench.claim}\n\nAnchors: {anchors(bench) or '-'}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=None
        if bench.run
        else f"Other flags go to benchmarks/{bench.script} (its --help lists them).",
    )
    g = p.add_argument_group("runner")
    g.add_argument(
        "--quick", action="store_true", help=f"the smoke form, writing under {QUICK_ROOT}/"
    )
    if bench.seeds:
        g.add_argument("--seeds", type=seeds_arg, help="seeds, e.g. 0,1,2")
    if bench.resume:
        g.add_argument("--resume", action="store_true", help="keep the finished cells")
    g.add_argument("--no-lock", action="store_true", help=f"do not take {LOCK}")
    if bench.settings is not None:
        add_settings_flags(p, bench.settings)
    return p


def seeds_arg(text: str) -> tuple[int, ...]:
    """``0,1,2`` as a tuple of seeds (ints >= 0)."""
    return tuple(nonneg_int(t) for t in text.split(","))


def run(bench: Benchmark, module: Any, argv: list[str]) -> int:
    """Run ``bench`` with the command-line ``argv``; the exit status."""
    parser = build_parser(bench)
    if bench.script:
        args, rest = parser.parse_known_args(argv)
    else:
        args, rest = parser.parse_args(argv), []
    lock = heavy_lock() if bench.heavy and not args.no_lock else contextlib.nullcontext()
    with lock:
        t0 = time.time()
        if bench.script:
            rc = _run_script(bench, args, rest)
        else:
            rc = _run_function(bench, module, args, argv)
        print(f"{bench.name}: {'done' if rc == 0 else f'exit {rc}'} in {time.time() - t0:.0f} s")
        return rc


def _run_script(bench: Benchmark, args: argparse.Namespace, rest: list[str]) -> int:
    script = repo_root() / "benchmarks" / bench.script
    cmd = ["bash", str(script)] if script.suffix == ".sh" else [sys.executable, str(script)]
    env = dict(os.environ)
    if args.quick:
        cmd += quick_flags(bench.quick)
        env[RESULTS_ENV] = str(Path.cwd() / QUICK_ROOT / "results")
        env["OUT"] = env.get("OUT", str(Path.cwd() / QUICK_ROOT / "device"))
    if getattr(args, "seeds", None):
        cmd += ["--seeds", ",".join(map(str, args.seeds))]
    if getattr(args, "resume", False):
        cmd.append("--resume")
    cmd += rest
    print("+ " + shlex.join(cmd), flush=True)
    return subprocess.run(cmd, cwd=repo_root(), env=env).returncode


def _run_function(bench: Benchmark, module: Any, args: argparse.Namespace, argv: list) -> int:
    settings = None
    if bench.settings is not None:
        settings = settings_from(bench.settings, args, bench.quick if args.quick else {})
    results = results_root() / bench.app
    if args.quick:
        results = Path.cwd() / QUICK_ROOT / "results" / bench.app
    with contextlib.suppress(ImportError):  # Ray workers cannot import a declaration by name
        from ray import cloudpickle

        cloudpickle.register_pickle_by_value(module)
    ctx = Context(
        bench=bench,
        settings=settings,
        seeds=getattr(args, "seeds", None),
        quick=args.quick,
        resume=getattr(args, "resume", False),
        results=results,
        argv=list(argv),
    )
    out = bench.run(ctx)
    return out if isinstance(out, int) else 0


def alias(name: str) -> None:
    """Run benchmark ``name`` with this process's arguments and exit: what an old script
    name (``python benchmarks/traffic_merge.py ...``) keeps doing for one release."""
    from rlsuite.bench import registry

    decl = registry.load()
    try:
        rc = run(decl.get(name), decl.modules[name], sys.argv[1:])
    except (ValueError, FileNotFoundError, ConnectionError) as err:
        print(f"rlsuite bench run {name}: error: {err}", file=sys.stderr)
        rc = 2
    sys.exit(rc)
