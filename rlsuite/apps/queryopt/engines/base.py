"""What every engine answers: the :class:`Engine` protocol, its :class:`RunResult` and errors.

The rewriter, the row check, the choosers, the benchmark and ``qopt-bench`` talk
to an :class:`Engine`, never to an engine's class: PostgreSQL
(:mod:`~rlsuite.apps.queryopt.engines.postgres`) and Spark SQL
(:mod:`~rlsuite.apps.queryopt.engines.spark`) implement it, each in the one module
that imports its client library. Another engine is one more module with a class
that answers these calls (and a line in ``ENGINES``).

Every engine keeps the same promises:

- measured queries are read-only and run under a timeout; a query past it returns
  ``RunResult(timed_out=True)``, never an error;
- a failure raises :class:`DatabaseError` (or a subclass) whose message says what
  to do;
- writes go only into the app's own schemas (names start with ``qopt_``), checked
  by :func:`check_app_schema`;
- it connects lazily, and :meth:`Engine.close` releases what it holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

APP_SCHEMA_PREFIX = "qopt_"


class DatabaseError(RuntimeError):
    """A query or connection failed; the message says what to do."""


class QueryTimeout(DatabaseError):
    """The statement ran past its timeout."""


@dataclass
class RunResult:
    """One measured execution."""

    rows: list[tuple] | None
    """The result rows (None when timed out, or not fetched)."""
    runtime_s: float
    """Wall time of execute + fetch, seen from the client; the timeout when timed out."""
    timed_out: bool = False
    columns: list[str] = field(default_factory=list)


def check_app_schema(schema: str) -> None:
    """Refuse a write outside the app's own schemas (``qopt_*``, lower-case names)."""
    if not schema.startswith(APP_SCHEMA_PREFIX) or not re.fullmatch(r"[a-z0-9_]+", schema):
        raise ValueError(
            f"schema {schema!r} is not one of the app's own schemas (names start with "
            f"{APP_SCHEMA_PREFIX!r}); the app never writes outside them"
        )


@runtime_checkable
class Engine(Protocol):
    """One session on a SQL engine; connects lazily, :meth:`close` when done."""

    label: str
    """The engine's name in messages and tables (``PostgreSQL``, ``Spark``)."""
    dialect: str
    """sqlglot's name for the engine's SQL dialect (``postgres``, ``spark``)."""

    @property
    def dsn(self) -> str:
        """Names the engine and its data (the key the rewriter caches a catalog under)."""
        ...

    # ------------------------------------------------------------ queries
    def run(
        self,
        sql: str,
        schema: str,
        timeout_ms: int = 60_000,
        settings: Mapping[str, str] | None = None,
        fetch: bool = True,
    ) -> RunResult:
        """Run ``sql`` read-only in ``schema`` with ``settings`` (the rewrite's knobs) and
        time it; past ``timeout_ms`` it is cancelled and ``timed_out`` is True. With
        ``fetch`` the rows come back for the row check."""
        ...

    def explain(
        self,
        sql: str,
        schema: str,
        settings: Mapping[str, str] | None = None,
        analyze: bool = False,
        timeout_ms: int = 60_000,
    ) -> dict:
        """The engine's plan of ``sql`` (its own shape); raises when the engine cannot plan it."""
        ...

    def estimated_cost(self, plan: Mapping[str, Any]) -> float:
        """The optimizer's estimate in a plan from :meth:`explain` (lower is cheaper; NaN
        when the plan has none). Comparable only between plans of the same engine."""
        ...

    def plan_lines(self, plan: Mapping[str, Any]) -> list[str]:
        """A plan from :meth:`explain` as indented text lines, for people."""
        ...

    # ------------------------------------------------------------ catalog
    def columns(self, schema: str) -> dict[str, dict[str, str]]:
        """``{table: {column: type}}`` of ``schema`` (empty when there is none)."""
        ...

    def row_counts(self, schema: str) -> dict[str, float]:
        """Estimated rows per table of ``schema``."""
        ...

    def not_null_columns(self, schema: str) -> dict[str, frozenset[str]]:
        """``{table: columns declared NOT NULL}``; rules that need one refuse without it."""
        ...

    def visible_schemas(self) -> list[str]:
        """The schemas this session may read."""
        ...

    # ------------------------------------------------------------ data
    def ensure_workload(self, workload: Any, seed: int = 0, force: bool = False) -> bool:
        """Load ``workload``'s data unless this very data is there; True when loaded now."""
        ...

    # ------------------------------------------------------------ session
    def ping(self) -> str:
        """The engine and its version, in words (starts the session)."""
        ...

    def close(self) -> None:
        """Release the session (a closed engine reconnects on its next call)."""
        ...
