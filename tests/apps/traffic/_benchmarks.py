"""A benchmark declaration of ``benchmarks/<app>/`` as a module, for the tests of its own logic
(loaded by the bench tool's registry, as ``rlsuite bench run`` loads it)."""

from __future__ import annotations

from types import ModuleType


def load(name: str) -> ModuleType:
    """The declaration module of benchmark ``name`` (e.g. ``traffic_resco_beyond``)."""
    from rlsuite.bench import registry

    return registry.load().modules[name]
