"""The row check of a rewrite whose original runs past the timeout, when the small copy
cannot decide and a reference (the original's answer computed another way on the same
data) does: on the real PostgreSQL, and DuckDB as the TPC-DS reference."""

from __future__ import annotations

import pytest

from rlsuite.apps.queryopt.engines.postgres import admin_execute
from rlsuite.apps.queryopt.verify import check_rewrite, reference_rows_match
from rlsuite.apps.queryopt.workloads.tpcds import TpcdsWorkload, duckdb_reference, queries

BIG, COPY = "qopt_test_verify", "qopt_test_verify_copy"
# The original sleeps 0.5 s per row (2.5 s on 5 rows, past the 300 ms timeout; nothing on the
# empty copy); the rewrite does not sleep.
ORIGINAL = "SELECT x, x * 2 FROM t WHERE (SELECT 1 FROM pg_sleep(0.5) WHERE t.x > 0) = 1"
REWRITE = "SELECT x, x * 2 FROM t"
RIGHT = [(i, 2 * i) for i in range(1, 6)]


@pytest.fixture(scope="module")
def schemas(db, dsn):
    admin_execute(
        dsn,
        f"DROP SCHEMA IF EXISTS {BIG} CASCADE; DROP SCHEMA IF EXISTS {COPY} CASCADE; "
        f"CREATE SCHEMA {BIG}; CREATE TABLE {BIG}.t AS SELECT generate_series(1, 5) AS x; "
        f"CREATE SCHEMA {COPY}; CREATE TABLE {COPY}.t (x int)",  # the copy returns no rows
    )
    yield db
    admin_execute(dsn, f"DROP SCHEMA IF EXISTS {BIG} CASCADE; DROP SCHEMA {COPY} CASCADE")


def _check(db, new_sql=REWRITE, reference=None):
    return check_rewrite(db, BIG, ORIGINAL, new_sql, {}, {}, 300, COPY, reference, "test reference")


def test_an_empty_copy_cannot_vouch_and_a_reference_decides(schemas):
    v = _check(schemas)
    assert not v.keep and "returns no rows" in v.reason and v.rows_match is None
    seen = []
    v = _check(schemas, reference=lambda sql: seen.append(sql) or RIGHT)
    assert v.keep and v.rows_match is True and v.checked_on == "test reference"
    assert seen == [ORIGINAL]  # the reference answers the original, not the rewrite


def test_a_rewrite_with_other_rows_than_the_reference_is_refused(schemas):
    v = _check(schemas, REWRITE + " WHERE x > 1", reference=lambda sql: RIGHT)
    assert (
        not v.keep
        and v.rows_match is False
        and "differ from the original's by the reference (test reference)" in v.reason
    )


def test_an_empty_reference_proves_nothing(schemas):
    v = _check(schemas, REWRITE + " WHERE x > 9", reference=lambda sql: [])
    assert not v.keep and v.rows_match is None and "no rows either" in v.reason
    assert reference_rows_match([], [], ordered=False) is None
    assert reference_rows_match([(1, 2.0)], [(1, 2)], ordered=True) is True


def test_duckdb_answers_tpcds_as_postgres_does_on_the_same_data(db):
    small = TpcdsWorkload(scale=0.01)
    small.ensure(db)
    q = queries()[7]  # 54 rows at SF 0.01
    pg = db.run(q, small.schema, 60_000).rows
    with duckdb_reference(0.01) as reference:
        assert pg and reference_rows_match(pg, reference(q), ordered=True) is True
        assert reference_rows_match(pg[1:], reference(q), ordered=True) is False
