"""The embedded server's life cycle and the adapter's errors, on a real PostgreSQL."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import psycopg2
import pytest

from rlsuite.apps.queryopt.engines.base import DatabaseError
from rlsuite.apps.queryopt.engines.postgres import Database
from rlsuite.apps.queryopt.server import EmbeddedServer
from rlsuite.apps.queryopt.workloads.joins import SEED_QUERY


@pytest.mark.slow
def test_embedded_server_starts_is_reused_and_stops():
    root = Path(f"/var/tmp/rlsuite-pg-lifecycle-{os.getpid()}")
    srv = EmbeddedServer(root=root)
    try:
        srv.start()
        assert srv.started_here and srv.running()
        with Database(srv.dsn) as d:
            assert "PostgreSQL" in d.ping()
        # a second handle on the same directory reuses the running server and does not stop it
        again = EmbeddedServer(root=root)
        with again:
            assert not again.started_here
        assert srv.running()
        srv.stop()
        assert not srv.running()
        # restart: the cluster is reused (no initdb), the data directory stays
        pg_version = (srv.data_dir / "PG_VERSION").stat().st_mtime
        with EmbeddedServer(root=root) as third:
            assert third.started_here and third.running()
            with Database(third.dsn) as d:
                assert d.run("SELECT 41 + 1", "qopt_joins").rows == [(42,)]
        assert (srv.data_dir / "PG_VERSION").stat().st_mtime == pg_version
        assert not srv.running()
    finally:
        srv.destroy()
    assert not root.exists()


def test_no_server_gives_a_clear_error(tmp_path):
    d = Database(f"host={tmp_path} port=5999 dbname=rlsuite user=postgres", connect_timeout_s=2)
    with pytest.raises(DatabaseError, match="(?s)cannot connect.*qopt-bench setup"):
        d.ping()


def test_bad_sql_and_unknown_table_give_clear_errors(db):
    with pytest.raises(DatabaseError, match="cannot parse"):
        db.run("SELEC 1", "qopt_joins")
    with pytest.raises(
        DatabaseError, match=r'(?s)relation "nosuch" does not exist.*Known tables: .*qopt_joins.r'
    ):
        db.run("SELECT * FROM nosuch", "qopt_joins")
    # the session is still usable afterwards
    assert db.run("SELECT count(*) FROM r", "qopt_joins").rows == [(1000,)]


def test_statement_timeout_is_honoured(db):
    res = db.run(SEED_QUERY, "qopt_joins", timeout_ms=100)
    assert res.timed_out and res.rows is None and res.runtime_s == pytest.approx(0.1)
    res = db.run("SELECT pg_sleep(2)", "qopt_joins", timeout_ms=150)
    assert res.timed_out


class _CancelOnRollback:
    """The real connection, except that its next ``fails`` rollbacks raise the cancel that a
    statement timeout delivers when it fires just as a statement ends."""

    def __init__(self, conn, fails: int):
        self._conn, self.fails = conn, fails

    def rollback(self):
        if self.fails:
            self.fails -= 1
            raise psycopg2.errors.QueryCanceled("canceling statement due to statement timeout")
        self._conn.rollback()

    def __getattr__(self, name):
        return getattr(self._conn, name)


@pytest.mark.parametrize("fails", [1, 2])
def test_a_cancel_landing_on_the_rollback_does_not_fail_a_finished_query(dsn, fails):
    d = Database(dsn)
    try:
        real = d.conn
        d._conn = _CancelOnRollback(real, fails)
        res = d.run("SELECT 41 + 1", "public")
        assert res.rows == [(42,)] and not res.timed_out
        # one failed rollback is retried on the same connection; two drop it, and the
        # next call reconnects
        assert real.closed == (fails == 2)
        assert d.run("SELECT 7", "public").rows == [(7,)]
    finally:
        d.close()


def test_measured_queries_are_read_only_and_schemas_are_guarded(db):
    with pytest.raises(DatabaseError, match="read-only"):
        db.run("CREATE TABLE qopt_joins.x (a int)", "qopt_joins")
    assert db.run("SELECT 1", "public").rows == [(1,)]  # any schema is read ...
    with pytest.raises(ValueError, match="app's own schemas"):
        db.load("public", ["SELECT 1"])  # ... but only the app's own are written
    with pytest.raises(ValueError, match="bad planner setting"):
        db.run("SELECT 1", "qopt_joins", settings={"enable_hashjoin; DROP": "off"})


def test_psycopg2_is_imported_only_by_the_adapter():
    pkg = Path(__file__).resolve().parents[3] / "rlsuite" / "apps" / "queryopt"
    importers = []
    for f in pkg.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if any(n.split(".")[0] == "psycopg2" for n in names):
                importers.append(f.relative_to(pkg).as_posix())
    assert sorted(set(importers)) == ["engines/postgres.py"]
