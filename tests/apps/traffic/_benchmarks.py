"""Load a script of ``benchmarks/`` (not a package) as a module, for the tests of its own
logic."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


def load(script: str) -> ModuleType:
    """``benchmarks/<script>`` as the module ``rlsuite_bench_<stem>``, registered in
    ``sys.modules`` (pickling by value looks it up there), with ``benchmarks/`` on the path
    for a script that imports a sibling script (as ``python benchmarks/x.py`` has)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    name = f"rlsuite_bench_{Path(script).stem}"
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
