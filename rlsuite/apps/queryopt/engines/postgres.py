"""PostgreSQL as an :class:`~rlsuite.apps.queryopt.engines.base.Engine`: the only module of
rlsuite that imports psycopg2.

A :class:`Database` is one session. Measured queries run in a ``READ ONLY``
transaction with ``SET LOCAL statement_timeout`` and the query's planner
settings, and are rolled back, so nothing a query does (or a setting it needs)
outlives it. They may read any schema (a user's own database included), and a
user with only ``USAGE`` and ``SELECT`` rights can run them. Writes happen only
in :meth:`Database.load`, and only inside the app's own schemas (``qopt_*``).

Example::

    >>> db = Database("host=/var/tmp/rlsuite-pg-0/sock dbname=rlsuite user=postgres")  # doctest: +SKIP
    >>> db.run("SELECT 1", schema="qopt_joins").rows                                   # doctest: +SKIP
    [(1,)]
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import psycopg2
import psycopg2.errors
import psycopg2.extensions

from rlsuite.apps.queryopt.engines.base import (
    DatabaseError,
    QueryTimeout,
    RunResult,
    check_app_schema,
)

_SETTING_RE = re.compile(r"^[a-z_][a-z0-9_.]*$")


def admin_execute(
    dsn: str, sql: str, params: Sequence | None = None, autocommit: bool = False
) -> list:
    """Run one administrative statement on ``dsn`` and return its rows (used to create the database)."""
    conn = psycopg2.connect(dsn, connect_timeout=5)
    try:
        conn.autocommit = autocommit
        with conn.cursor() as cur:
            cur.execute(sql, params)
            rows = cur.fetchall() if cur.description else []
        if not autocommit:
            conn.commit()
        return rows
    finally:
        conn.close()


def quote_schema(schema: str) -> str:
    """``schema`` as a quoted SQL identifier (any name a user's schema may have)."""
    if not isinstance(schema, str) or not schema or "\x00" in schema:
        raise ValueError(f"bad schema name {schema!r}")
    return '"' + schema.replace('"', '""') + '"'


def _check_settings(settings: Mapping[str, str]) -> None:
    for k, v in settings.items():
        if not _SETTING_RE.match(k):
            raise ValueError(f"bad planner setting name {k!r}")
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", str(v)):
            raise ValueError(f"bad value {v!r} for setting {k!r}")


class Database:
    """One PostgreSQL session (connect lazily, :meth:`close` when done)."""

    label = "PostgreSQL"
    dialect = "postgres"

    def __init__(self, dsn: str, connect_timeout_s: int = 5):
        self.dsn = dsn
        self.connect_timeout_s = connect_timeout_s
        self._conn: Any = None

    # ------------------------------------------------------------ connection
    @property
    def conn(self) -> Any:
        if self._conn is None or self._conn.closed:
            try:
                self._conn = psycopg2.connect(self.dsn, connect_timeout=self.connect_timeout_s)
            except psycopg2.OperationalError as e:
                raise DatabaseError(
                    f"cannot connect to PostgreSQL at {self.dsn!r}: {str(e).strip()}. Is the server "
                    "running? `qopt-bench setup` starts the embedded one; or pass --dsn of a "
                    "running server."
                ) from e
        return self._conn

    def close(self) -> None:
        if self._conn is not None and not self._conn.closed:
            self._conn.close()
        self._conn = None

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def ping(self) -> str:
        """The server's version string."""
        return self._read("SELECT version()")[0][0]

    def _read(self, sql: str, params: Sequence | None = None) -> list[tuple]:
        """The rows of a catalog query, its transaction rolled back at once."""
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            rows = cur.fetchall()
        self.conn.rollback()
        return rows

    # ------------------------------------------------------------- queries
    def _begin(
        self,
        cur: Any,
        schema: str,
        timeout_ms: int,
        settings: Mapping[str, str],
        read_only: bool = True,
    ) -> None:
        _check_settings(settings)
        # one round trip for the whole set-up (it is paid by every run)
        parts = [
            "BEGIN READ ONLY" if read_only else "BEGIN",
            f"SET LOCAL search_path TO {quote_schema(schema)}, public",
            f"SET LOCAL statement_timeout = {int(timeout_ms)}",
        ]
        for k, v in settings.items():
            parts.append(cur.mogrify(f"SET LOCAL {k} = %s", (str(v),)).decode())
        cur.execute("; ".join(parts))

    def _translate(self, e: Exception, sql: str) -> DatabaseError:
        msg = str(getattr(e, "pgerror", None) or e).strip()
        if isinstance(e, psycopg2.errors.UndefinedTable):
            return DatabaseError(
                f"{msg}. Known tables: {', '.join(self._known_tables()) or 'none'}; "
                "run `qopt-bench setup --workload W` to load a workload."
            )
        if isinstance(e, psycopg2.errors.SyntaxError):
            return DatabaseError(f"PostgreSQL cannot parse the query: {msg}\nquery: {sql}")
        return DatabaseError(f"query failed: {msg}\nquery: {sql}")

    def _known_tables(self) -> list[str]:
        try:
            self.conn.rollback()
            rows = self._read(
                "SELECT table_schema || '.' || table_name FROM information_schema.tables "
                "WHERE table_schema LIKE 'qopt\\_%' ORDER BY 1"
            )
            return [r[0] for r in rows]
        except Exception:  # noqa: BLE001 - only for the message
            return []

    @contextlib.contextmanager
    def _transaction(
        self, sql: str, schema: str, timeout_ms: int, settings: Mapping[str, str] | None
    ) -> Iterator[Any]:
        """A cursor in a read-only transaction set up for ``sql`` (schema, timeout, settings),
        always rolled back; PostgreSQL's errors become :class:`DatabaseError`."""
        conn = self.conn
        cur = conn.cursor()
        try:
            self._begin(cur, schema, timeout_ms, dict(settings or {}))
            yield cur
        except psycopg2.Error as e:
            conn.rollback()
            raise self._translate(e, sql) from e
        finally:
            self._end(conn, cur)

    @staticmethod
    def _end(conn: Any, cur: Any) -> None:
        """Roll back and close ``cur``. A statement-timeout cancel that lands just as a
        statement ends is delivered to the next command, the rollback; it must not turn a
        finished query into an error, so the rollback is retried once and, failing that,
        the connection is dropped (the next call reconnects)."""
        try:
            if not conn.closed:
                try:
                    conn.rollback()
                except psycopg2.Error:
                    try:
                        conn.rollback()
                    except psycopg2.Error:
                        conn.close()
        finally:
            if not cur.closed:
                cur.close()

    def run(
        self,
        sql: str,
        schema: str,
        timeout_ms: int = 60_000,
        settings: Mapping[str, str] | None = None,
        fetch: bool = True,
    ) -> RunResult:
        """Run ``sql`` read-only and time it; a timeout returns ``timed_out=True``, not an error."""
        with self._transaction(sql, schema, timeout_ms, settings) as cur:
            t0 = time.perf_counter()
            try:
                cur.execute(sql)
                rows = cur.fetchall() if (fetch and cur.description) else None
            except psycopg2.errors.QueryCanceled:
                cur.connection.rollback()
                return RunResult(None, timeout_ms / 1000.0, True)
            dt = time.perf_counter() - t0
            cols = [d[0] for d in cur.description] if cur.description else []
            return RunResult(rows, dt, False, cols)

    def explain(
        self,
        sql: str,
        schema: str,
        settings: Mapping[str, str] | None = None,
        analyze: bool = False,
        timeout_ms: int = 60_000,
    ) -> dict:
        """``EXPLAIN (FORMAT JSON)`` of ``sql``: the top plan dict (with ``Plan`` inside)."""
        with self._transaction(sql, schema, timeout_ms, settings) as cur:
            opts = "ANALYZE, TIMING OFF, " if analyze else ""
            try:
                cur.execute(f"EXPLAIN ({opts}FORMAT JSON) {sql}")
            except psycopg2.errors.QueryCanceled as e:
                raise QueryTimeout(f"EXPLAIN ran past {timeout_ms} ms: {sql}") from e
            plan = cur.fetchone()[0]
            if isinstance(plan, str):
                plan = json.loads(plan)
            return plan[0]

    def estimated_cost(self, plan: Mapping[str, Any]) -> float:
        """The planner's ``Total Cost`` of the top node."""
        node = plan.get("Plan", plan)
        return float(node.get("Total Cost", math.nan))

    def plan_lines(self, plan: Mapping[str, Any], indent: int = 0) -> list[str]:
        """One line per plan node: type, cost and estimated rows, children indented."""
        node = plan.get("Plan", plan)
        out = [
            "  " * indent
            + f"{node.get('Node Type')}  (cost {node.get('Total Cost')}, rows {node.get('Plan Rows')})"
        ]
        for c in node.get("Plans", []) or []:
            out += self.plan_lines(c, indent + 1)
        return out

    # ----------------------------------------------------------- catalog
    def visible_schemas(self) -> list[str]:
        """The schemas this user may read (``USAGE``), without PostgreSQL's own."""
        rows = self._read(
            "SELECT nspname FROM pg_namespace WHERE has_schema_privilege(oid, 'USAGE') "
            "AND nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema' ORDER BY 1"
        )
        return [r[0] for r in rows]

    def schema_exists(self, schema: str) -> bool:
        sql = "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s"
        return bool(self._read(sql, (schema,)))

    def schema_comment(self, schema: str) -> str | None:
        """The schema's comment (the app stores its data's identity there)."""
        rows = self._read(
            "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = %s",
            (schema,),
        )
        return rows[0][0] if rows else None

    def columns(self, schema: str) -> dict[str, dict[str, str]]:
        """``{table: {column: type}}`` of a schema (for sqlglot's qualify)."""
        rows = self._read(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = %s ORDER BY table_name, ordinal_position",
            (schema,),
        )
        out: dict[str, dict[str, str]] = {}
        for t, c, ty in rows:
            out.setdefault(t, {})[c] = ty
        return out

    def not_null_columns(self, schema: str) -> dict[str, frozenset[str]]:
        """``{table: columns declared NOT NULL}`` of a schema (primary keys included)."""
        rows = self._read(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = %s AND is_nullable = 'NO'",
            (schema,),
        )
        out: dict[str, set[str]] = {}
        for t, c in rows:
            out.setdefault(t, set()).add(c)
        return {t: frozenset(cs) for t, cs in out.items()}

    def row_counts(self, schema: str) -> dict[str, float]:
        """Estimated rows per table (``pg_class.reltuples``)."""
        rows = self._read(
            "SELECT c.relname, greatest(c.reltuples, 0) FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (schema,),
        )
        return {r[0]: float(r[1]) for r in rows}

    # ------------------------------------------------------------- writes
    def ensure_workload(self, workload: Any, seed: int = 0, force: bool = False) -> bool:
        """Load ``workload`` (its schema, and a small copy where it has one) unless this very
        data is there; True when loaded now. A schema of the user's own is only checked."""
        loaded = force or not workload.is_loaded(self, seed)
        if force:
            workload.setup(self, seed)
        workload.ensure(self, seed)  # loads what is not there yet (or checks a user's schema)
        return loaded

    def load(
        self,
        schema: str,
        statements: Iterable[str | tuple[str, Any]],
        copy: Mapping[str, Any] | None = None,
        replace: bool = True,
        copy_options: str = "",
        comment: str | None = None,
        after: Iterable[str] = (),
    ) -> None:
        """Create ``schema`` (an app schema) and run ``statements`` in it, in one transaction.

        ``copy`` maps ``table`` to a file-like object of rows for ``COPY`` (tab-separated text,
        or what ``copy_options`` says, e.g. ``(FORMAT csv, DELIMITER '|')``). ``comment`` becomes
        the schema's comment, written in the same transaction (so it marks complete data only).
        ``after`` runs once the data is in (primary keys are faster to build then).
        """
        check_app_schema(schema)
        conn = self.conn
        try:
            with conn.cursor() as cur:
                if replace:
                    cur.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
                cur.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
                cur.execute(f"SET LOCAL search_path TO {schema}, public")
                for st in statements:
                    if isinstance(st, tuple):
                        cur.execute(st[0], st[1])
                    else:
                        cur.execute(st)
                for table, fobj in (copy or {}).items():
                    cur.copy_expert(f"COPY {schema}.{table} FROM STDIN {copy_options}", fobj)
                for st in after:
                    cur.execute(st)
                if comment is not None:
                    cur.execute(f"COMMENT ON SCHEMA {schema} IS %s", (comment,))
            conn.commit()
        except psycopg2.Error as e:
            conn.rollback()
            raise DatabaseError(f"loading schema {schema} failed: {str(e).strip()}") from e
        with_ac = conn.autocommit
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))
                for (table,) in cur.fetchall():
                    cur.execute(f'ANALYZE {schema}."{table}"')
        finally:
            conn.autocommit = with_ac
