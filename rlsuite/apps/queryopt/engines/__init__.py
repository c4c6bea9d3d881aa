"""The engines the app rewrites SQL for, behind one :class:`~.base.Engine` protocol.

``ENGINES`` maps an engine's name to the module and class that implement it; a
module is imported only when its engine is opened (so pyspark is not imported
for PostgreSQL, nor psycopg2 for Spark). Adding an engine is one module and one
line here.

Example::

    >>> eng = open_engine("postgres", dsn="host=/var/tmp/rlsuite-pg-0/sock dbname=rlsuite")  # doctest: +SKIP
    >>> eng.run("SELECT 1", "public").rows                                                 # doctest: +SKIP
    [(1,)]
    >>> eng.close()                                                                         # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

from rlsuite.apps.queryopt.engines.base import (
    APP_SCHEMA_PREFIX,
    DatabaseError,
    Engine,
    QueryTimeout,
    RunResult,
)

ENGINES: dict[str, tuple[str, str]] = {
    "postgres": ("rlsuite.apps.queryopt.engines.postgres", "Database"),
    "spark": ("rlsuite.apps.queryopt.engines.spark", "SparkEngine"),
}
"""``name -> (module, class)``; the class's constructor takes the engine's own options."""
ENGINE_NAMES: tuple[str, ...] = tuple(ENGINES)


def engine_class(name: str) -> type:
    """The class implementing engine ``name`` (its module is imported now)."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; engines: {', '.join(ENGINE_NAMES)}")
    module, cls = ENGINES[name]
    return getattr(importlib.import_module(module), cls)


def open_engine(name: str, **options: Any) -> Engine:
    """A new session on engine ``name`` (it connects on first use; close it when done).

    ``options`` are the engine's own: ``dsn`` for PostgreSQL; ``master``, ``home`` for Spark.
    """
    return engine_class(name)(**options)


__all__ = [
    "APP_SCHEMA_PREFIX",
    "ENGINES",
    "ENGINE_NAMES",
    "DatabaseError",
    "Engine",
    "QueryTimeout",
    "RunResult",
    "engine_class",
    "open_engine",
]
