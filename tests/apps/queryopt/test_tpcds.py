"""The tpcds workload at SF 0.01 on the real PostgreSQL: setup, DuckDB's answers, and the
row check of a rewrite whose original runs past the timeout (compared on the small copy)."""

from __future__ import annotations

import json

import pytest

from rlsuite.apps.queryopt import cli
from rlsuite.apps.queryopt.engines.postgres import admin_execute
from rlsuite.apps.queryopt.rewriter import FixedRules
from rlsuite.apps.queryopt.tpcds_answers import check, classify
from rlsuite.apps.queryopt.verify import check_rewrite
from rlsuite.apps.queryopt.workloads.tpcds import TpcdsWorkload, queries

SMALL = TpcdsWorkload(scale=0.01)
BIG = "qopt_test_tpcds_q1x20"
"""Q1's four tables with 20x the customers and returns: its correlated subquery is 400x the
work there, so Q1 runs past a 1 s timeout that its decorrelated rewrite finishes well within."""


def test_setup_loads_the_tables_with_primary_keys(tpcds, dsn, capsys):
    assert cli.main(["setup", "--workload", "tpcds", "--scale", "0.01", "--dsn", dsn]) == 0
    out = capsys.readouterr().out
    assert "already loaded" in out and "qopt_tpcds_sf0_01" in out and "28810" in out
    keys = admin_execute(
        dsn,
        "SELECT c.conrelid::regclass::text, pg_get_constraintdef(c.oid) FROM pg_constraint c "
        "JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = %s AND c.contype = 'p'",
        (SMALL.schema,),
    )
    assert len(keys) == 24
    assert (
        dict(keys)["qopt_tpcds_sf0_01.store_sales"] == "PRIMARY KEY (ss_item_sk, ss_ticket_number)"
    )


def test_the_99_queries_plan_and_split_in_halves(tpcds):
    qs = queries()
    assert sorted(qs) == list(range(1, 100))
    train, test = SMALL.queries("train", 99), SMALL.queries("test", 99)
    assert len(train) == 50 and len(test) == 49 and not set(train) & set(test)
    for n in (1, 14, 23, 39, 64, 72):
        assert tpcds.explain(qs[n], SMALL.schema)["Plan"]["Total Cost"] > 0


def test_postgres_answers_match_duckdb_on_the_same_data(tpcds):
    rows = check(tpcds, SMALL, [3, 7, 19, 42, 52, 55, 96])
    assert {r.query: r.verdict for r in rows} == dict.fromkeys((3, 7, 19, 42, 52, 55, 96), "same")
    assert all(r.postgres_rows == r.duckdb_rows for r in rows)
    assert any(r.postgres_rows for r in rows)


def test_the_answer_check_names_the_kind_of_difference():
    assert classify([(1, 2.0)], [(1, 2)], ordered=False)[0] == "same"
    assert classify([(1,), (None,)], [(None,), (1,)], ordered=True)[0] == "order"
    assert classify([("a", 1.004)], [("a", 1.0)], ordered=False)[0] == "rounding"
    assert classify([("a", 2)], [("a", 2.75)], ordered=False)[0] == "integer division"
    assert classify([("a", 3)], [("b", 3)], ordered=False)[0] == "differs"


@pytest.fixture(scope="module")
def big_q1(tpcds, dsn):
    s, c = SMALL.schema, 20
    admin_execute(
        dsn,
        f"DROP SCHEMA IF EXISTS {BIG} CASCADE; CREATE SCHEMA {BIG}; "
        f"CREATE TABLE {BIG}.date_dim AS SELECT * FROM {s}.date_dim; "
        f"CREATE TABLE {BIG}.store AS SELECT * FROM {s}.store; "
        f"CREATE TABLE {BIG}.customer AS SELECT (c).*, k FROM {s}.customer c, "
        f"generate_series(0, {c - 1}) k; "
        f"UPDATE {BIG}.customer SET c_customer_sk = c_customer_sk + 100000 * k, "
        "c_customer_id = c_customer_id || k; "
        f"CREATE TABLE {BIG}.store_returns AS SELECT (r).*, k FROM {s}.store_returns r, "
        f"generate_series(0, {c - 1}) k; "
        f"UPDATE {BIG}.store_returns SET sr_customer_sk = sr_customer_sk + 100000 * k; "
        f"ANALYZE {BIG}.date_dim, {BIG}.store, {BIG}.customer, {BIG}.store_returns",
    )
    yield BIG
    admin_execute(dsn, f"DROP SCHEMA IF EXISTS {BIG} CASCADE")


def test_a_rewrite_of_a_query_past_the_timeout_is_checked_on_the_small_copy(tpcds, big_q1):
    q1 = queries()[1]
    rw = FixedRules(tpcds, big_q1, ["unnest_subqueries"], timeout_ms=1000)
    d = rw.rewrite(q1, check=True)  # no small copy to check on: the original stays
    assert not d.applied and "cannot check rows: the original ran past 1000 ms" in d.reasons["*"]
    rw.check_schema = SMALL.schema
    d = rw.rewrite(q1, check=True)
    assert d.applied == ("unnest_subqueries",) and d.rows_match is True, d.reasons
    assert d.checked_on == SMALL.schema
    # a rule that is wrong on the copy's data is caught there
    wrong = d.sql.replace("* 1.2", "* 1.1")
    assert wrong != d.sql
    v = check_rewrite(tpcds, big_q1, q1, wrong, {}, {}, 1000, SMALL.schema)
    assert not v.keep and v.rows_match is False and SMALL.schema in v.reason


def test_rewrite_cli_reports_where_the_rows_were_compared(tpcds, big_q1, dsn, capsys, tmp_path):
    out = tmp_path / "d.json"
    rc = cli.main(
        ["rewrite", queries()[1], "--schema", big_q1, "--rules", "unnest_subqueries", "--check"]
        + ["--timeout-ms", "1000", "--check-schema", SMALL.schema, "--dsn", dsn]
        + ["--json", str(out)]
    )
    assert rc == 0, capsys.readouterr().out
    d = json.loads(out.read_text())
    assert d["rows_match"] is True and d["checked_on"] == SMALL.schema
