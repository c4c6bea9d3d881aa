"""The default chooser on the real PostgreSQL: it measures and verifies, where the cost-greedy
chooser trusts an estimate that is wrong; it keeps the original when the budget is too small
or nothing verified is faster; a rewrite of a query too slow to finish is verified on a
small copy, by ``rewrite`` and by the server's decider alike."""

from __future__ import annotations

import pytest

from rlsuite.apps.queryopt import cli
from rlsuite.apps.queryopt.choosers import (
    FULL_DATA,
    FullDataReference,
    MeasuredChooser,
    check_chooser,
)
from rlsuite.apps.queryopt.engines.postgres import admin_execute
from rlsuite.apps.queryopt.plugin.decider import Decider
from rlsuite.apps.queryopt.rewriter import FixedRules, GreedyByCost
from rlsuite.apps.queryopt.verify import guarantee

BIG, SMALL = "qopt_test_chooser", "qopt_test_chooser_small"
SLOW = "qopt_test_chooser_slow"
"""BIG without the index and with twice the inner rows: the original scans them per outer
row (100M rows, seconds even on an idle machine) and its rewrite once (a tenth of a second
on a busy one), so a 1.5 s timeout stops the one and not the other."""
PAST_MS = 1500
DECORRELATING = {"unnest_subqueries", "decorrelate_scalar"}
QUERY = "SELECT o.id FROM o WHERE o.v > (SELECT avg(i.v) FROM i WHERE i.k = o.k)"
"""Correlated on ``i.k``, which has 40 values; its statistics are told 100000
(``n_distinct``), so PostgreSQL prices the SubPlan's index scan at about a row per outer
row where it reads 2500: the original looks cheaper than its decorrelated rewrite and runs
about ten times slower (about 0.3 s against 0.03 s)."""


def _make(dsn: str, schema: str, outer: int, inner: int, index: bool = True) -> None:
    admin_execute(
        dsn,
        f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}; "
        f"CREATE TABLE {schema}.o AS SELECT g AS id, (g % 40) + 1 AS k, (g * 7919) % 1000 AS v "
        f"FROM generate_series(1, {outer}) g; "
        f"CREATE TABLE {schema}.i AS SELECT (g % 40) + 1 AS k, (g::bigint * 104729) % 1000 AS v "
        f"FROM generate_series(1, {inner}) g; "
        + (f"CREATE INDEX ON {schema}.i (k); " if index else "")
        + f"ALTER TABLE {schema}.i ALTER COLUMN k SET (n_distinct = 100000); "
        f"ANALYZE {schema}.o, {schema}.i",
    )


@pytest.fixture(scope="module")
def crafted(db, dsn):
    _make(dsn, BIG, 500, 100_000)
    _make(dsn, SMALL, 200, 4000)
    _make(dsn, SLOW, 500, 200_000, index=False)
    return db


def test_measured_picks_the_verified_faster_rewrite_the_estimate_calls_dearer(crafted):
    db = crafted
    unnested = FixedRules(db, BIG, ["unnest_subqueries"]).rewrite(QUERY)
    assert unnested.applied == ("unnest_subqueries",)
    # PostgreSQL's estimate is wrong: the original looks cheaper, so cost-greedy keeps it
    cost = db.estimated_cost(db.explain(QUERY, BIG))
    assert cost < db.estimated_cost(db.explain(unnested.sql, BIG))
    assert GreedyByCost(db, BIG).choose(QUERY) == []
    d = MeasuredChooser(db, BIG, budget_s=30).rewrite(QUERY)
    assert DECORRELATING & set(d.applied), d.reasons
    assert d.rows_match is True and d.checked_on == BIG
    assert "chose" in d.reasons["measured"]


def test_a_budget_too_small_keeps_the_original_and_says_so(crafted):
    d = MeasuredChooser(crafted, BIG, budget_s=0.005).rewrite(QUERY)
    assert d.applied == () and d.sql == QUERY
    assert "budget of 0.005 s ran out" in d.reasons["*"] and "kept the original" in d.reasons["*"]


def test_nothing_faster_keeps_the_original(crafted):
    d = MeasuredChooser(crafted, BIG, budget_s=10).rewrite("SELECT count(*) FROM o")
    assert d.applied == () and "*" in d.reasons


def test_a_too_slow_original_is_verified_on_the_full_data_by_duckdb(crafted, dsn):
    # the original runs past PAST_MS; DuckDB reads SLOW's own tables and answers it, and the
    # rewrite's rows from PostgreSQL are compared with that: equality on the full data
    full = FullDataReference(dsn, SLOW, timeout_s=60)
    ch = MeasuredChooser(
        crafted,
        SLOW,
        timeout_ms=PAST_MS,
        budget_s=20,
        check_schema=SMALL,
        reference=full,
        reference_label=FULL_DATA,
    )
    try:
        d = ch.rewrite(QUERY)
    finally:
        ch.close()
    assert DECORRELATING & set(d.applied), d.reasons
    assert d.rows_match is True and d.checked_on == FULL_DATA
    assert "original past 1.500 s" in d.reasons["measured"]
    assert "equal on the full data" in guarantee(d.checked_on, SLOW)


def test_no_rows_on_the_full_data_are_equal_rows_there(crafted, dsn):
    # on the small copy no rows prove nothing; DuckDB reads the query's own tables
    from rlsuite.apps.queryopt.engines.base import RunResult
    from rlsuite.apps.queryopt.verify import check_rewrite

    sql = "SELECT o.id FROM o WHERE o.v > (SELECT 100 * avg(i.v) FROM i WHERE i.k = o.k)"
    new = FixedRules(crafted, SLOW, ["decorrelate_scalar"]).rewrite(sql)
    got = crafted.run(new.sql, SLOW, 30_000, new.settings)
    past = RunResult(None, PAST_MS / 1000, timed_out=True)
    full = FullDataReference(dsn, SLOW, timeout_s=60)
    try:
        v = check_rewrite(
            crafted, SLOW, sql, new.sql, {}, new.settings, PAST_MS, SMALL, full, FULL_DATA,
            measured=(past, got), reference_first=True,
        )  # fmt: skip
    finally:
        full.close()
    assert got.rows == [] and v.keep and v.checked_on == FULL_DATA


def test_without_duckdb_a_too_slow_original_is_verified_on_the_small_copy(crafted):
    # DuckDB cannot reach the server: the small copy decides, and says what that proves
    gone = FullDataReference("host=/nonexistent dbname=x", SLOW, timeout_s=5)
    d = MeasuredChooser(
        crafted, SLOW, timeout_ms=PAST_MS, budget_s=20, check_schema=SMALL, reference=gone
    ).rewrite(QUERY)
    assert DECORRELATING & set(d.applied), d.reasons
    assert d.rows_match is True and d.checked_on == SMALL
    assert "not proven on the full data" in guarantee(d.checked_on, SLOW)


def test_the_servers_check_of_a_too_slow_statement_uses_the_small_copy(crafted):
    db = crafted
    dec = Decider(FixedRules(db, SLOW, ["unnest_subqueries"]), db, {}, check_schema=SMALL)
    d = dec.validated(QUERY, ("unnest_subqueries",), None, PAST_MS)
    assert not isinstance(d, str) and d.applied == ("unnest_subqueries",)
    bare = Decider(FixedRules(db, SLOW, ["unnest_subqueries"]), db, {})
    assert "--check-schema" in bare.validated(QUERY, ("unnest_subqueries",), None, PAST_MS)


def test_unknown_chooser_names_the_choosers():
    with pytest.raises(ValueError, match="choosers: measured, cost, rules, model"):
        check_chooser("fastest")


def test_rewrite_cli_measures_by_default_and_keeps_cost_greedy_by_name(crafted, dsn, capsys):
    argv = ["rewrite", QUERY, "--schema", BIG, "--dsn", dsn]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert DECORRELATING & set(out.split("rewrites:")[1].splitlines()[0].strip().split(", "))
    assert "measured: original" in out and "the query's own data" in out
    assert cli.main([*argv, "--chooser", "cost"]) == 0
    assert "rewrites: none" in capsys.readouterr().out
    assert cli.main([*argv, "--budget-s", "0.005"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "rewrites: none" in out and "budget of 0.005 s ran out" in out
    assert cli.main([*argv, "--chooser", "model"]) == 2
    assert "--chooser model needs --model PATH" in capsys.readouterr().out


def test_a_volatile_correlated_subquery_is_not_rewritten_and_the_output_says_why(
    crafted, dsn, capsys
):
    # (a planner arm alone is a candidate too; random() gives it other rows, never verified)
    sql = (
        "SELECT o.id FROM o WHERE o.v > "
        "(SELECT avg(i.v) FROM i WHERE i.k = o.k AND i.v < 1000 * random())"
    )
    assert cli.main(["rewrite", sql, "--schema", BIG, "--dsn", dsn, "--budget-s", "5"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "rewrites: none" in out, out
    for rule in ("unnest_subqueries", "decorrelate_scalar"):
        assert f"{rule}: " in out and "calls RANDOM(), which may give another value" in out, out
