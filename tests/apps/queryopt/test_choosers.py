"""The default chooser on the real PostgreSQL: it measures and verifies, where the cost-greedy
chooser trusts an estimate that is wrong; it keeps the original when the budget is too small
or nothing verified is faster; a rewrite of a query too slow to finish is verified on a
small copy, by ``rewrite`` and by the server's decider alike."""

from __future__ import annotations

import pytest

from rlsuite.apps.queryopt.choosers import MeasuredChooser, check_chooser
from rlsuite.apps.queryopt.engines.postgres import admin_execute
from rlsuite.apps.queryopt.plugin.decider import Decider
from rlsuite.apps.queryopt.rewriter import FixedRules, GreedyByCost

BIG, SMALL = "qopt_test_chooser", "qopt_test_chooser_small"
QUERY = "SELECT o.id FROM o WHERE o.v > (SELECT avg(i.v) FROM i WHERE i.k = o.k)"
"""Correlated on ``i.k``, which has 40 values; its statistics are told 100000
(``n_distinct``), so PostgreSQL prices the SubPlan's index scan at about a row per outer
row where it reads 2500: the original looks cheaper than its decorrelated rewrite and runs
about ten times slower."""


def _make(dsn: str, schema: str, outer: int, inner: int) -> None:
    admin_execute(
        dsn,
        f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}; "
        f"CREATE TABLE {schema}.o AS SELECT g AS id, (g % 40) + 1 AS k, (g * 7919) % 1000 AS v "
        f"FROM generate_series(1, {outer}) g; "
        f"CREATE TABLE {schema}.i AS SELECT (g % 40) + 1 AS k, (g::bigint * 104729) % 1000 AS v "
        f"FROM generate_series(1, {inner}) g; "
        f"CREATE INDEX ON {schema}.i (k); "
        f"ALTER TABLE {schema}.i ALTER COLUMN k SET (n_distinct = 100000); "
        f"ANALYZE {schema}.o, {schema}.i",
    )


@pytest.fixture(scope="module")
def crafted(db, dsn):
    _make(dsn, BIG, 1000, 100_000)
    _make(dsn, SMALL, 200, 4000)
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
    assert "unnest_subqueries" in d.applied, d.reasons
    assert d.rows_match is True and d.checked_on == BIG
    assert "chose" in d.reasons["measured"]
    assert sorted(db.run(d.sql, BIG, 30_000, d.settings).rows) == sorted(
        db.run(QUERY, BIG, 30_000).rows
    )


def test_a_budget_too_small_keeps_the_original_and_says_so(crafted):
    d = MeasuredChooser(crafted, BIG, budget_s=0.005).rewrite(QUERY)
    assert d.applied == () and d.sql == QUERY
    assert "budget of 0.005 s ran out" in d.reasons["*"] and "kept the original" in d.reasons["*"]


def test_nothing_faster_keeps_the_original(crafted):
    d = MeasuredChooser(crafted, BIG, budget_s=10).rewrite("SELECT count(*) FROM o")
    assert d.applied == () and "*" in d.reasons


def test_a_too_slow_original_is_verified_on_the_small_copy(crafted):
    # the original runs past 150 ms; the rewrite finishes, and its rows are compared on SMALL
    d = MeasuredChooser(crafted, BIG, timeout_ms=150, budget_s=20, check_schema=SMALL).rewrite(
        QUERY
    )
    assert "unnest_subqueries" in d.applied, d.reasons
    assert d.rows_match is True and d.checked_on == SMALL
    assert "original past 0.150 s" in d.reasons["measured"]
    # without a small copy nothing can vouch for it: the original stays, with the reason
    d = MeasuredChooser(crafted, BIG, timeout_ms=150, budget_s=20).rewrite(QUERY)
    assert d.applied == () and "--check-schema" in d.reasons["*"]


def test_the_servers_check_of_a_too_slow_statement_uses_the_small_copy(crafted):
    db = crafted
    dec = Decider(FixedRules(db, BIG, ["unnest_subqueries"]), db, {}, check_schema=SMALL)
    d = dec.validated(QUERY, ("unnest_subqueries",), None, 20_000)
    assert not isinstance(d, str) and d.applied == ("unnest_subqueries",)
    bare = Decider(FixedRules(db, BIG, ["unnest_subqueries"]), db, {})
    assert "--check-schema" in bare.validated(QUERY, ("unnest_subqueries",), None, 20_000)


def test_unknown_chooser_names_the_choosers():
    with pytest.raises(ValueError, match="choosers: measured, cost, rules, model"):
        check_chooser("fastest")


def test_the_server_serves_the_measured_decision_without_checking_it_again(crafted):
    db = crafted
    dec = Decider(MeasuredChooser(db, BIG, budget_s=30), db, {})
    served = dec.decide(QUERY)
    assert "unnest_subqueries" in served.applied
    again = dec.verified(QUERY, served.applied)
    assert again is not None and again.sql == served.sql
    assert dec.verified(QUERY, served.applied) is None  # handed over once
