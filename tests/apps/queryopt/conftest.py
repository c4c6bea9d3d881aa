"""A real embedded PostgreSQL for the queryopt tests, in its own directory, stopped afterwards."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

TEST_PG_DIR = Path(
    os.environ.get("RLSUITE_TEST_PG_DIR", f"/var/tmp/rlsuite-pg-test-{os.geteuid()}")
)


@pytest.fixture(scope="session")
def pg_server():
    """The test cluster (created once, reused across runs); stopped at the end if started here."""
    from rlsuite.apps.queryopt.server import EmbeddedServer

    srv = EmbeddedServer(root=TEST_PG_DIR)
    srv.start()
    try:
        yield srv
    finally:
        if srv.started_here:
            srv.stop()


@pytest.fixture(scope="session")
def dsn(pg_server) -> str:
    return pg_server.dsn


@pytest.fixture(scope="session")
def db(dsn):
    """One session with the joins and udf workloads loaded."""
    from rlsuite.apps.queryopt.engines.postgres import Database
    from rlsuite.apps.queryopt.workloads import get

    d = Database(dsn)
    get("joins").ensure(d)
    get("udf").ensure(d)
    try:
        yield d
    finally:
        d.close()


@pytest.fixture(scope="session")
def tpcds(db):
    """``db`` with TPC-DS at scale 0.01 loaded too (schema ``qopt_tpcds_sf0_01``)."""
    from rlsuite.apps.queryopt.workloads.tpcds import TpcdsWorkload

    TpcdsWorkload(scale=0.01).ensure(db)
    return db


@pytest.fixture(scope="session")
def reader_dsn(db, dsn) -> str:
    """A user's own database, made as a DBA would; the app only reads it.

    ``shop``: a copy of the joins tables; ``qopt_reader``: may only read it."""
    from rlsuite.apps.queryopt.engines.postgres import admin_execute

    admin_execute(
        dsn,
        "DROP SCHEMA IF EXISTS shop CASCADE; CREATE SCHEMA shop; "
        "CREATE TABLE shop.r AS SELECT * FROM qopt_joins.r; "
        "CREATE TABLE shop.s AS SELECT * FROM qopt_joins.s; "
        "CREATE TABLE shop.t AS SELECT * FROM qopt_joins.t; ANALYZE shop.r, shop.s, shop.t; "
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'qopt_reader') "
        "THEN CREATE ROLE qopt_reader LOGIN; END IF; END $$; "
        "GRANT USAGE ON SCHEMA shop TO qopt_reader; "
        "GRANT SELECT ON ALL TABLES IN SCHEMA shop TO qopt_reader",
    )
    return re.sub(r"user=\S+", "user=qopt_reader", dsn)
