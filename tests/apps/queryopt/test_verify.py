"""The row check of a rewrite whose original runs past the timeout, when the small copy
cannot decide and a reference (the original's answer computed another way on the same
data) does: on the real PostgreSQL, and DuckDB as the TPC-DS reference."""

from __future__ import annotations

import pytest

from rlsuite.apps.queryopt.engines.postgres import admin_execute
from rlsuite.apps.queryopt.verify import ENGINES_DIFFER, check_rewrite, reference_rows_match
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
    # the reference answers each query as its engine would: the rewrite's rows differ there too
    v = _check(
        schemas,
        REWRITE + " WHERE x > 1",
        reference=lambda sql: RIGHT if sql == ORIGINAL else RIGHT[1:],
    )
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


# An exact tie that the two engines round apart: for k = 1 the true 1.2 * avg(48, 48, 49) is 58;
# PostgreSQL's numeric gives 57.99999999999999996 (58 > it holds), DuckDB's double 58.0 (it does
# not). The original's correlated SubPlan scans u once per row of t (4,000 x 40,000 rows), past
# the timeout on PostgreSQL; DuckDB decorrelates it. The copy holds no tie.
TIE, TIE_COPY = "qopt_test_tie", "qopt_test_tie_copy"
TIE_ORIGINAL = "SELECT t.k, t.q FROM t WHERE t.q > (SELECT 1.2 * avg(u.q2) FROM u WHERE u.k = t.k)"
TIE_REWRITE = (
    "SELECT t.k, t.q FROM t JOIN (SELECT u.k, 1.2 * avg(u.q2) AS a FROM u GROUP BY u.k) s "
    "ON s.k = t.k WHERE t.q > s.a"
)
TIE_WRONG = TIE_REWRITE.replace("t.q > s.a", "t.q >= s.a")  # includes the tie in both engines
TIE_MS = 500


def _tie_tables(schema: str, n: int, tie: bool) -> str:
    tie_rows = "INSERT INTO u VALUES (1, 48), (1, 48), (1, 49); " if tie else ""
    first = 2 if tie else 1
    return (
        f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}; SET search_path = {schema}; "
        "CREATE TABLE t (k int, q int); CREATE TABLE u (k int, q2 int); "
        f"INSERT INTO t SELECT k, CASE WHEN k = 1 THEN 58 ELSE (k * 7) % 60 END "
        f"FROM generate_series(1, {n}) k; {tie_rows}"
        f"INSERT INTO u SELECT {first} + i % {n - first + 1}, i % 50 FROM generate_series(1, {10 * n}) i; "
        "ANALYZE t, u; RESET search_path"
    )


@pytest.fixture(scope="module")
def tie(db, dsn):
    from rlsuite.apps.queryopt.duckref import duckdb_on_postgres

    admin_execute(
        dsn, _tie_tables(TIE, 4000, tie=True) + "; " + _tie_tables(TIE_COPY, 20, tie=False)
    )
    with duckdb_on_postgres(dsn, timeout_s=60) as run:
        yield db, (lambda sql: run(sql, TIE))
    admin_execute(dsn, f"DROP SCHEMA {TIE} CASCADE; DROP SCHEMA {TIE_COPY} CASCADE")


def _tie_check(db, reference, new_sql=TIE_REWRITE, copy=TIE_COPY):
    return check_rewrite(
        db, TIE, TIE_ORIGINAL, new_sql, {}, {}, TIE_MS, copy, reference, "DuckDB",
        reference_first=True,
    )  # fmt: skip


def test_the_engines_round_an_exact_tie_apart(tie):
    db, duck = tie
    assert db.run(TIE_ORIGINAL, TIE, TIE_MS).timed_out
    pg = db.run(TIE_REWRITE, TIE, 60_000).rows
    assert (1, 58) in pg and (1, 58) not in duck(TIE_REWRITE)
    assert sorted(duck(TIE_ORIGINAL)) == sorted(duck(TIE_REWRITE)) == sorted(set(pg) - {(1, 58)})


def test_a_difference_of_the_engines_leaves_the_decision_to_the_copy(tie):
    db, duck = tie
    asked = []
    v = _tie_check(db, lambda sql: asked.append(sql) or duck(sql))
    assert asked == [TIE_ORIGINAL, TIE_REWRITE]  # the rewrite too, once the rows differed
    assert v.keep and v.rows_match is True and v.checked_on == TIE_COPY
    # without a copy that can vouch, the original stays, and the reason says why
    v = _tie_check(db, duck, copy=None)
    assert not v.keep and v.rows_match is None
    assert ENGINES_DIFFER.format(label="DuckDB") in v.reason and "--check-schema" in v.reason


def test_a_rewrite_that_differs_in_the_reference_too_is_refused(tie):
    db, duck = tie
    v = _tie_check(db, duck, new_sql=TIE_WRONG)
    assert not v.keep and v.rows_match is False and v.checked_on == "DuckDB"
    assert "differ from the original's by the reference (DuckDB)" in v.reason
