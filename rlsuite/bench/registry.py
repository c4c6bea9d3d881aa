"""Finding the declarations: every ``benchmarks/<app>/<name>.py`` of the repository, loaded
by its file path (no ``sys.path`` edits, ``benchmarks/`` need not be importable).

A declaration file defines ``BENCHMARK`` (a :class:`~rlsuite.bench.declare.Benchmark`;
its name, app and claim default to the file's: ``benchmarks/traffic/merge.py`` is
``traffic_merge`` of app ``traffic``, its docstring the claim),
``ROWS`` (rows whose command is an app's own CLI rather than a benchmark, e.g.
``traffic-train evaluate``), or both. Files whose names start with ``_`` are skipped.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from rlsuite.bench.declare import APPS, Benchmark, Row, repo_root


@dataclass(frozen=True)
class Declarations:
    """Everything declared under ``benchmarks/``, in table order (app, then file name)."""

    benchmarks: tuple[Benchmark, ...]
    rows: tuple[Row, ...]
    """Every row of the results table, benchmarks' and files' own, in order."""
    modules: dict[str, ModuleType]
    """Each benchmark's declaration module, by benchmark name."""

    def get(self, name: str) -> Benchmark:
        """The benchmark called ``name``; ValueError with the nearest names otherwise."""
        for bench in self.benchmarks:
            if bench.name == name:
                return bench
        names = [b.name for b in self.benchmarks]
        near = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(near)}?" if near else "; `rlsuite bench list` shows them"
        raise ValueError(f"no benchmark called {name!r}{hint}")


def benchmarks_dir() -> Path:
    return repo_root() / "benchmarks"


def _load_file(path: Path, app: str) -> ModuleType:
    name = f"rlsuite_benchmarks.{app}.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        del sys.modules[name]
        raise ValueError(f"{path}: cannot be loaded ({type(err).__name__}: {err})") from err
    return module


def load(root: Path | None = None) -> Declarations:
    """Load every declaration under ``root`` (default: the repository's ``benchmarks/``)."""
    root = root or benchmarks_dir()
    benches: list[Benchmark] = []
    rows: list[Row] = []
    modules: dict[str, ModuleType] = {}
    for app in APPS:
        for path in sorted((root / app).glob("*.py")):
            if path.name.startswith("_"):
                continue
            module = _load_file(path, app)
            bench = getattr(module, "BENCHMARK", None)
            extra = tuple(getattr(module, "ROWS", ()))
            if bench is None and not extra:
                raise ValueError(f"{path}: declares neither BENCHMARK nor ROWS")
            if bench is not None:
                if not isinstance(bench, Benchmark):
                    raise ValueError(f"{path}: BENCHMARK is not a Benchmark")
                if bench.app not in ("", app):
                    raise ValueError(f"{path}: benchmark {bench.name} says app {bench.app!r}")
                bench = dataclasses.replace(
                    bench,
                    name=bench.name or f"{app}_{path.stem}",
                    app=app,
                    claim=bench.claim or " ".join((module.__doc__ or "").split()),
                )
                if bench.name in modules:
                    raise ValueError(f"{path}: a second benchmark called {bench.name}")
                benches.append(bench)
                modules[bench.name] = module
                rows.extend(bench.rows)
            for row in extra:
                if row.app != app:
                    raise ValueError(f"{path}: row {row.task!r} is not {app}")
            rows.extend(extra)
    return Declarations(tuple(benches), tuple(rows), modules)
