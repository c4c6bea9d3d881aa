"""DuckDB reading PostgreSQL's own tables: the original's answer on the full data when
PostgreSQL's plan cannot finish it.

DuckDB's postgres scanner (PyPI ``duckdb-extension-postgres-scanner``, loaded from the
wheel with autoinstall off, as the tpcds extension is) attaches the server read-only and
runs the query in DuckDB's engine over the tables as they are. DuckDB decorrelates
subqueries itself, so a query whose PostgreSQL plan runs for minutes often takes seconds
there. :func:`duckdb_on_postgres` yields ``run(sql, schema) -> rows``; the verifier
(:func:`~rlsuite.apps.queryopt.verify.check_rewrite`) compares them with the rewrite's rows
from PostgreSQL, on the same data: on the user's own database too.

Limits, stated: the rows are compared as the app's row check compares them (multisets,
lists under ``ORDER BY``, numbers to 9 significant digits), so floating-point sums that
differ in the last digits match; DuckDB's ``/`` on integers returns a double where
PostgreSQL truncates, its default collation orders strings by byte, and its ``double``
can round an exact tie of a comparison the other way from PostgreSQL's ``numeric``. A
query whose answer depends on one of these is never wrongly matched: when DuckDB's own
runs of the original and the rewrite agree while PostgreSQL's rows differ, the engines
differ and DuckDB cannot decide (:func:`~rlsuite.apps.queryopt.verify.engines_differ`), and
the small copy decides, as it does for a query DuckDB cannot parse or run (that raises).

Example::

    >>> with duckdb_on_postgres(dsn) as run:                       # doctest: +SKIP
    ...     run("SELECT count(*) FROM store_sales", "qopt_tpcds_sf1")
    [(2880404,)]
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

HOW_TO_INSTALL = (
    "DuckDB's postgres scanner checks slow queries on the full data: "
    "pip install 'duckdb==1.5.*' 'duckdb-extension-postgres-scanner==1.5.*'"
)
LABEL = "the full data, by DuckDB (postgres scanner)"
"""``checked_on`` of a rewrite whose rows were compared with DuckDB's answer on the full data."""


def available() -> bool:
    """Whether the scanner's wheel is installed."""
    import importlib.util

    return importlib.util.find_spec("duckdb_extension_postgres_scanner") is not None


@contextlib.contextmanager
def duckdb_on_postgres(
    dsn: str, timeout_s: float | None = None
) -> Iterator[Callable[[str, str], list[tuple]]]:
    """``run(sql, schema)``: ``sql`` (PostgreSQL's dialect) run by DuckDB on ``schema``'s
    tables of the server at ``dsn``, read-only; interrupted after ``timeout_s``."""
    import sqlglot

    from rlsuite.apps.queryopt.workloads.tpch import duckdb_with_extension

    with duckdb_with_extension("postgres_scanner", HOW_TO_INSTALL) as con:
        con.execute(
            f"ATTACH '{dsn.replace(chr(39), chr(39) * 2)}' AS pg (TYPE postgres, READ_ONLY)"
        )

        def run(sql: str, schema: str) -> list[tuple]:
            con.execute(f'USE pg."{schema}"')
            timer = None
            if timeout_s is not None:
                timer = threading.Timer(timeout_s, con.interrupt)
                timer.start()
            try:
                try:
                    return _fetch(con, sql)
                except Exception:  # noqa: BLE001 - PostgreSQL's spelling DuckDB lacks: transpile
                    return _fetch(con, sqlglot.transpile(sql, read="postgres", write="duckdb")[0])
            finally:
                if timer is not None:
                    timer.cancel()

        yield run


def _fetch(con: Any, sql: str) -> list[tuple]:
    return con.execute(sql).fetchall()
