"""A real embedded PostgreSQL for the queryopt tests, in its own directory, stopped afterwards."""

from __future__ import annotations

import os
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
