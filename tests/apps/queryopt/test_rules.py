"""Golden fixtures for every rewrite rule, each checked for equivalence on the real database."""

from __future__ import annotations

import pytest

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.rewriter import catalog, rewrite
from rlsuite.apps.queryopt.verify import same_rows

TPCDS = "qopt_tpcds_sf0_01"
"""TPC-DS at SF 0.01 (loaded on first use): NOT NULL keys, and NULLs in other columns."""

# (rule, schema, input SQL, expected SQL, expected settings)
FIXTURES = [
    (
        "eager_aggregation",
        "qopt_joins",
        "SELECT R.b, R.c, count(1) FROM R, S, T WHERE R.b = S.b AND R.c = T.c GROUP BY R.b, R.c",
        "SELECT r.b AS b, r.c AS c, CAST(COALESCE(SUM(s.qopt_cnt * t.qopt_cnt), 0) AS BIGINT) AS _col_2 "
        "FROM r AS r, (SELECT s.b AS b, COUNT(*) AS qopt_cnt FROM s AS s GROUP BY s.b) AS s, "
        "(SELECT t.c AS c, COUNT(*) AS qopt_cnt FROM t AS t GROUP BY t.c) AS t "
        "WHERE r.b = s.b AND r.c = t.c GROUP BY r.b, r.c",
        {},
    ),
    (
        "eager_aggregation",
        "qopt_joins",
        "SELECT R.a, sum(R.a), min(R.c) FROM R JOIN S ON R.b = S.b WHERE S.d < 500 AND R.a < 100 GROUP BY R.a",
        "SELECT r.a AS a, CAST(SUM((r.a) * s.qopt_cnt) AS BIGINT) AS _col_1, MIN(r.c) AS _col_2 "
        "FROM r AS r, "
        "(SELECT s.b AS b, COUNT(*) AS qopt_cnt FROM s AS s WHERE s.d < 500 GROUP BY s.b) AS s "
        "WHERE r.a < 100 AND r.b = s.b GROUP BY r.a",
        {},
    ),
    (
        "eager_aggregation",
        "qopt_joins",
        "SELECT count(*) FROM R, S WHERE R.b = S.b AND R.a > 2000",
        "SELECT CAST(COALESCE(SUM(s.qopt_cnt), 0) AS BIGINT) AS _col_0 FROM r AS r, "
        "(SELECT s.b AS b, COUNT(*) AS qopt_cnt FROM s AS s GROUP BY s.b) AS s "
        "WHERE r.a > 2000 AND r.b = s.b",
        {},
    ),
    (
        "filter_after_aggregation",
        "qopt_udf",
        "SELECT count(1) FROM R WHERE udf(R.b) GROUP BY R.b",
        "SELECT qopt_agg._col_0 AS _col_0 FROM (SELECT COUNT(1) AS _col_0, r.b AS qopt_g0 FROM r AS r "
        "GROUP BY r.b OFFSET 0) AS qopt_agg WHERE UDF(qopt_agg.qopt_g0)",
        {},
    ),
    (
        "filter_after_aggregation",
        "qopt_udf",
        "SELECT R.b, sum(R.a) FROM R WHERE R.a <= 500 AND udf(R.b) GROUP BY R.b",
        "SELECT qopt_agg.b AS b, qopt_agg._col_1 AS _col_1 FROM (SELECT r.b AS b, SUM(r.a) AS _col_1 "
        "FROM r AS r WHERE r.a <= 500 GROUP BY r.b OFFSET 0) AS qopt_agg WHERE UDF(qopt_agg.b)",
        {},
    ),
    (
        "join_order_small_first",
        "qopt_joins",
        # R.a < 100: a tenth of the 33M joined rows, so both runs of the check take ~0.4 s
        "SELECT R.b, count(1) FROM T, S, R WHERE R.b = S.b AND R.c = T.c AND R.a < 100 GROUP BY R.b",
        "SELECT r.b AS b, COUNT(1) AS _col_1 FROM r AS r JOIN s AS s ON r.b = s.b "
        "JOIN t AS t ON r.c = t.c WHERE r.a < 100 GROUP BY r.b",
        {"join_collapse_limit": "1"},
    ),
    (
        "join_order_large_first",
        "qopt_joins",
        "SELECT R.b, count(1) FROM R, S, T WHERE R.b = S.b AND R.c = T.c AND R.a < 10 GROUP BY R.b",
        "SELECT r.b AS b, COUNT(1) AS _col_1 FROM s AS s JOIN r AS r ON r.b = s.b "
        "JOIN t AS t ON r.c = t.c WHERE r.a < 10 GROUP BY r.b",
        {"join_collapse_limit": "1"},
    ),
    (
        "unnest_subqueries",
        "qopt_joins",
        "SELECT R.a FROM R WHERE R.b IN (SELECT S.b FROM S WHERE S.d < 10)",
        "SELECT r.a AS a FROM r AS r LEFT JOIN (SELECT s.b AS b FROM s AS s WHERE s.d < 10 GROUP BY s.b) "
        "AS _u_0 ON r.b = _u_0.b WHERE NOT _u_0.b IS NULL",
        {},
    ),
    (
        "unnest_subqueries",
        "qopt_joins",
        "SELECT R.a FROM R WHERE R.a < (SELECT max(S.d) FROM S WHERE S.b = R.b)",
        "SELECT r.a AS a FROM r AS r LEFT JOIN (SELECT MAX(s.d) AS _col_0, s.b AS _u_1 FROM s AS s "
        "WHERE TRUE GROUP BY s.b) AS _u_0 ON _u_0._u_1 = r.b WHERE r.a < _u_0._col_0",
        {},
    ),
    (
        "arm_no_hashjoin",
        "qopt_joins",
        "SELECT R.b, count(1) FROM R, S WHERE R.b = S.b GROUP BY R.b",
        "SELECT r.b AS b, COUNT(1) AS _col_1 FROM r AS r, s AS s WHERE r.b = s.b GROUP BY r.b",
        {"enable_hashjoin": "off"},
    ),
    (
        "arm_no_nestloop",
        "qopt_joins",
        "SELECT R.b, count(1) FROM R, S WHERE R.b = S.b GROUP BY R.b",
        "SELECT r.b AS b, COUNT(1) AS _col_1 FROM r AS r, s AS s WHERE r.b = s.b GROUP BY r.b",
        {"enable_nestloop": "off"},
    ),
    (
        "arm_no_mergejoin",
        "qopt_joins",
        "SELECT R.b, count(1) FROM R, S WHERE R.b = S.b GROUP BY R.b",
        "SELECT r.b AS b, COUNT(1) AS _col_1 FROM r AS r, s AS s WHERE r.b = s.b GROUP BY r.b",
        {"enable_mergejoin": "off"},
    ),
    (
        "decorrelate_exists_inequality",
        "qopt_joins",
        "SELECT R.a, R.c FROM R WHERE R.a < 50 AND "
        "EXISTS (SELECT 1 FROM S WHERE S.b = R.b AND S.d <> R.c AND S.d < 500)",
        "SELECT r.a AS a, r.c AS c FROM r AS r LEFT JOIN (SELECT s.b AS k0, MIN(s.d) AS lo, "
        "MAX(s.d) AS hi FROM s AS s WHERE s.d < 500 GROUP BY s.b) AS _d0 ON _d0.k0 = r.b "
        "WHERE r.a < 50 AND COALESCE(_d0.lo <> r.c OR _d0.hi <> r.c, FALSE)",
        {},
    ),
    (
        "decorrelate_exists_inequality",
        "qopt_joins",
        "SELECT count(*) FROM R, T WHERE R.c = T.c AND "
        "NOT EXISTS (SELECT * FROM S WHERE S.b = R.b AND S.d <> T.e)",
        "SELECT COUNT(*) AS _col_0 FROM r AS r CROSS JOIN t AS t LEFT JOIN (SELECT s.b AS k0, "
        "MIN(s.d) AS lo, MAX(s.d) AS hi FROM s AS s GROUP BY s.b) AS _d0 ON _d0.k0 = r.b "
        "WHERE r.c = t.c AND NOT COALESCE(_d0.lo <> t.e OR _d0.hi <> t.e, FALSE)",
        {},
    ),
    (
        "not_in_to_not_exists",
        TPCDS,
        "SELECT count(*) FROM item WHERE i_item_sk NOT IN "
        "(SELECT ss_item_sk FROM store_sales WHERE ss_quantity > 95)",
        "SELECT COUNT(*) AS _col_0 FROM item AS item WHERE NOT EXISTS(SELECT 1 FROM store_sales "
        "AS store_sales WHERE store_sales.ss_quantity > 95 AND store_sales.ss_item_sk = "
        "item.i_item_sk)",
        {},
    ),
    (
        "cte_not_materialized",
        "qopt_joins",
        "WITH x AS (SELECT S.b, sum(S.d) AS t FROM S GROUP BY S.b) "
        "SELECT x1.b, x2.t FROM x x1, x x2 WHERE x1.b = x2.b + 1 AND x1.t > 5",
        "WITH x AS NOT MATERIALIZED (SELECT s.b AS b, SUM(s.d) AS t FROM s AS s GROUP BY s.b) "
        "SELECT x1.b AS b, x2.t AS t FROM x AS x1, x AS x2 WHERE x1.b = x2.b + 1 AND x1.t > 5",
        {},
    ),
    (
        "cte_materialized",
        "qopt_joins",
        "WITH x AS (SELECT S.b, sum(S.d) AS t FROM S GROUP BY S.b) SELECT x.b FROM x WHERE x.t > 5",
        "WITH x AS MATERIALIZED (SELECT s.b AS b, SUM(s.d) AS t FROM s AS s GROUP BY s.b) "
        "SELECT x.b AS b FROM x AS x WHERE x.t > 5",
        {},
    ),
    (
        "pushdown_predicates",
        "qopt_joins",
        "SELECT y.b, count(*) FROM (SELECT S.b, S.d FROM S) AS y, R "
        "WHERE y.d > 500 AND R.b = y.b GROUP BY y.b",
        "SELECT y.b AS b, COUNT(*) AS _col_1 FROM (SELECT s.b AS b, s.d AS d FROM s AS s "
        "WHERE s.d > 500) AS y JOIN r AS r ON r.b = y.b GROUP BY y.b",
        {},
    ),
    (
        "or_to_union_all",
        "qopt_joins",
        "SELECT R.a, count(*) FROM R, S WHERE R.b = S.b AND (R.c < 5 OR S.d < 100) "
        "GROUP BY R.a ORDER BY R.a",
        "SELECT qopt_or.r_a AS a, COUNT(*) AS _col_1 FROM (SELECT r.a AS r_a FROM r AS r, s AS s "
        "WHERE r.b = s.b AND r.c < 5 UNION ALL SELECT r.a AS r_a FROM r AS r, s AS s "
        "WHERE r.b = s.b AND s.d < 100 AND NOT COALESCE(r.c < 5, FALSE)) AS qopt_or "
        "GROUP BY qopt_or.r_a ORDER BY a",
        {},
    ),
]


def test_every_rule_has_a_fixture():
    assert set(R.RULE_NAMES) == {f[0] for f in FIXTURES}


@pytest.mark.parametrize(
    "rule,schema,sql,expected,settings",
    FIXTURES,
    ids=[f"{f[0]}-{i}" for i, f in enumerate(FIXTURES)],
)
def test_rule_golden_and_equivalent(request, db, rule, schema, sql, expected, settings):
    if schema == TPCDS:
        request.getfixturevalue("tpcds_small")
    q = R.Query.parse(sql, catalog(db, schema))
    out = R.apply(rule, q)
    assert out.sql() == expected
    assert out.settings_dict == settings
    assert out.applied == (rule,)
    base = db.run(sql, schema, timeout_ms=30_000, settings={"qopt.udf_cost": "10"})
    new = db.run(out.sql(), schema, timeout_ms=30_000, settings={**settings, "qopt.udf_cost": "10"})
    assert not base.timed_out and not new.timed_out
    assert same_rows(base.rows, new.rows), f"{rule} changed the rows of {sql}"
    # same column types too (a client, and the pg_qopt plugin, see them)
    assert result_types(db, schema, out.sql()) == result_types(db, schema, sql)


@pytest.fixture(scope="module")
def tpcds_small(db):
    from rlsuite.apps.queryopt.workloads.tpcds import TpcdsWorkload

    w = TpcdsWorkload(scale=0.01)
    assert w.schema == TPCDS
    w.ensure(db)
    return db


def result_types(db, schema: str, sql: str) -> list[int]:
    """The type OIDs of a query's result columns (planned, not run)."""
    with db.conn.cursor() as cur:
        cur.execute(f"SET LOCAL search_path TO {schema}, public")
        cur.execute(f"SELECT * FROM ({sql}) AS q LIMIT 0")
        types = [d.type_code for d in cur.description]
    db.conn.rollback()
    return types


@pytest.mark.parametrize(
    "rule,sql,reason",
    [
        ("eager_aggregation", "SELECT R.a FROM R, S WHERE R.b = S.b", "no aggregation"),
        (
            "eager_aggregation",
            "SELECT R.a, S.d, count(1) FROM R, S WHERE R.b = S.b GROUP BY R.a, S.d",
            "nothing to pre-aggregate",
        ),
        ("eager_aggregation", "SELECT R.b, avg(R.a) FROM R, S WHERE R.b = S.b GROUP BY R.b", "AVG"),
        (
            "eager_aggregation",
            "SELECT R.b, count(1) FROM R LEFT JOIN S ON R.b = S.b GROUP BY R.b",
            "inner joins",
        ),
        (
            "filter_after_aggregation",
            "SELECT count(1) FROM R WHERE R.b < 3 GROUP BY R.b",
            "no WHERE predicate",
        ),
        (
            "filter_after_aggregation",
            "SELECT count(1) FROM R WHERE udf(R.a) GROUP BY R.b",
            "no WHERE predicate",
        ),
        ("join_order_small_first", "SELECT count(1) FROM R, S WHERE R.b = S.b", "three tables"),
        ("unnest_subqueries", "SELECT count(1) FROM R", "no subqueries"),
        (
            "unnest_subqueries",
            "SELECT R.a FROM R WHERE EXISTS (SELECT 1 FROM S WHERE S.b = R.b AND S.d <> R.a)",
            "not a column equality",
        ),
        ("unnest_subqueries", "SELECT R.a FROM R WHERE R.b IN (1, 2)", "no subquery here"),
        (
            "decorrelate_exists_inequality",
            "SELECT R.a FROM R WHERE EXISTS (SELECT 1 FROM S WHERE S.b = R.b)",
            "exactly one <>",
        ),
        (
            "decorrelate_exists_inequality",
            "SELECT R.a FROM R WHERE EXISTS (SELECT 1 FROM S WHERE S.b = R.b AND S.d < R.c)",
            "not an equality or <>",
        ),
        (
            "not_in_to_not_exists",
            "SELECT R.a FROM R WHERE R.b NOT IN (SELECT S.b FROM S)",
            "unless both columns are NOT NULL",
        ),
        (
            "cte_not_materialized",
            "WITH x AS (SELECT S.b FROM S) SELECT x.b FROM x",
            "no CTE is read more than once",
        ),
        (
            "cte_not_materialized",
            "WITH x AS (SELECT S.b, random() AS r FROM S) SELECT x1.b FROM x x1, x x2 "
            "WHERE x1.r < x2.r",
            "may differ per evaluation",
        ),
        (
            "cte_materialized",
            "WITH x AS (SELECT S.b FROM S) SELECT x1.b FROM x x1, x x2 WHERE x1.b = x2.b",
            "no CTE is read exactly once",
        ),
        ("pushdown_predicates", "SELECT R.a FROM R WHERE R.a < 3", "nothing to push|no derived"),
        (
            "pushdown_predicates",
            "SELECT R.a FROM R, S WHERE R.b = S.b AND S.d < 3",
            "no predicate can be pushed into a derived table or CTE",
        ),
        ("or_to_union_all", "SELECT R.a FROM R WHERE R.a < 3", "no OR among its conjuncts"),
        ("or_to_union_all", "SELECT R.a FROM R WHERE R.a < 3 OR R.c > 7", "one table's columns"),
        (
            "or_to_union_all",
            "SELECT R.a FROM R, S WHERE R.b = S.b AND (R.c < random() OR S.d < 3)",
            "may differ per evaluation",
        ),
        (
            "or_to_union_all",
            "SELECT R.a, (SELECT max(T.c) FROM T WHERE T.c = R.c) FROM R, S "
            "WHERE R.b = S.b AND (R.c < 5 OR S.d < 3)",
            "outside the WHERE clause",
        ),
        (
            "or_to_union_all",
            "SELECT R.a FROM R, S WHERE R.b = S.b AND (R.c < 5 OR S.d < 3) UNION SELECT S.b FROM S",
            "needs a SELECT at the top",
        ),
        (
            "or_to_union_all",
            "SELECT R.a FROM R, S WHERE R.b = S.b AND (R.c < 5 OR S.d < 3) FOR UPDATE",
            "does not handle FOR UPDATE",
        ),
    ],
)
def test_rule_not_applicable_says_why(db, rule, sql, reason):
    q = R.Query.parse(sql, catalog(db, "qopt_joins" if "udf" not in sql else "qopt_udf"))
    with pytest.raises(R.NotApplicable, match=reason):
        R.apply(rule, q)


def test_rule_applied_twice_is_refused(db):
    q = R.Query.parse(
        "SELECT R.b, count(1) FROM R, S WHERE R.b = S.b GROUP BY R.b", catalog(db, "qopt_joins")
    )
    q = R.apply("arm_no_hashjoin", q)
    with pytest.raises(R.NotApplicable, match="already applied"):
        R.apply("arm_no_hashjoin", q)


def test_generated_joins_queries_stay_equivalent(db):
    from rlsuite.apps.queryopt.workloads import get

    for sql in get("joins").queries("test", 3, seed=5):
        res = rewrite(
            db,
            "qopt_joins",
            sql,
            ["join_order_small_first", "eager_aggregation"],
            check=True,
            timeout_ms=60_000,
        )
        assert res.rows_match is True, (sql, res.reasons)
        assert "eager_aggregation" in res.applied


def test_unhandled_sql_passes_through_with_reason(db):
    sql = "SELECT R.a FROM R ORDER BY R.a LIMIT 3"
    res = rewrite(db, "qopt_joins", sql, list(R.RULE_NAMES[:5]))
    assert res.sql == sql and not res.changed
    assert "no aggregation" in res.reasons["eager_aggregation"]
    bad = rewrite(db, "qopt_joins", "SELEC R.a FROM R", ["eager_aggregation"])
    assert bad.sql == "SELEC R.a FROM R" and not bad.changed and "parse" in bad.reasons["*"]
    unknown = rewrite(db, "qopt_joins", "SELECT x.a FROM nosuch AS x", ["eager_aggregation"])
    assert not unknown.changed and "unknown table(s) nosuch" in unknown.reasons["*"]


def test_rewrite_with_different_rows_is_dropped(db, monkeypatch):
    """A (deliberately broken) rule that changes rows is caught by the check and not returned."""
    from sqlglot import exp

    broken = R.Rule("arm_no_mergejoin", lambda e, c: e.limit(1), "drops rows")
    monkeypatch.setattr(
        R, "RULES", tuple(broken if r.name == "arm_no_mergejoin" else r for r in R.RULES)
    )
    sql = "SELECT R.b, count(1) FROM R GROUP BY R.b"
    res = rewrite(db, "qopt_joins", sql, ["arm_no_mergejoin"], check=True)
    assert res.sql == sql and not res.changed and res.rows_match is False
    assert "different rows" in res.reasons["*"]
    assert exp  # sqlglot stays importable alongside


def test_not_in_on_a_nullable_column_is_refused_because_not_exists_differs(tpcds_small):
    """ss_customer_sk has NULLs: NOT IN keeps no row, the NOT EXISTS it would become keeps some."""
    db = tpcds_small
    sql = (
        "SELECT count(*) FROM item WHERE i_item_sk NOT IN (SELECT ss_customer_sk FROM store_sales)"
    )
    with pytest.raises(R.NotApplicable, match="NULL makes NOT IN never true"):
        R.apply("not_in_to_not_exists", R.Query.parse(sql, catalog(db, TPCDS)))
    as_exists = (
        "SELECT count(*) FROM item WHERE NOT EXISTS "
        "(SELECT 1 FROM store_sales WHERE ss_customer_sk = i_item_sk)"
    )
    a, b = db.run(sql, TPCDS, 30_000), db.run(as_exists, TPCDS, 30_000)
    assert a.rows == [(0,)] and b.rows[0][0] > 0


@pytest.mark.parametrize(
    "n,rule",
    [
        (94, "decorrelate_exists_inequality"),
        (95, "cte_not_materialized"),
        (13, "or_to_union_all"),
        (35, "or_to_union_all"),
        (45, "or_to_union_all"),
    ],
)
def test_new_rules_keep_the_rows_of_the_tpcds_queries_they_target(tpcds_small, n, rule):
    from rlsuite.apps.queryopt.workloads.tpcds import queries

    sql = queries()[n]
    out = R.apply(rule, R.Query.parse(sql, catalog(tpcds_small, TPCDS)))
    a = tpcds_small.run(sql, TPCDS, 30_000)
    b = tpcds_small.run(out.sql(), TPCDS, 30_000, out.settings_dict)
    assert a.rows and same_rows(a.rows, b.rows)


def test_greedy_by_cost_skips_a_rewrite_postgres_rejects(db, monkeypatch):
    """One candidate PostgreSQL cannot plan (TPC-DS Q70's unnesting) leaves the others."""
    from rlsuite.apps.queryopt.rewriter import GreedyByCost

    broken = R.Rule("arm_no_mergejoin", lambda e, c: e.where("no_such_column > 0"), "invalid")
    monkeypatch.setattr(
        R, "RULES", tuple(broken if r.name == "arm_no_mergejoin" else r for r in R.RULES)
    )
    sql = "SELECT R.b, count(1) FROM R, S WHERE R.b = S.b GROUP BY R.b"
    assert isinstance(
        R.applicable(R.Query.parse(sql, catalog(db, "qopt_joins")))["arm_no_mergejoin"], R.Query
    )
    assert "arm_no_mergejoin" not in GreedyByCost(db, "qopt_joins").choose(sql)


def test_or_to_union_all_counts_a_row_once_when_an_earlier_branch_is_null(tpcds_small):
    """``c_birth_year`` is NULL for some customers: there ``c_birth_year < 1950`` is NULL, and
    the row must come through the second branch exactly once. Without the ``NOT COALESCE``
    guard the rows where both branches hold would come twice."""
    sql = (
        "SELECT count(*) FROM customer, customer_address WHERE c_current_addr_sk = "
        "ca_address_sk AND (c_birth_year < 1950 OR ca_gmt_offset < -6)"
    )
    out = R.apply("or_to_union_all", R.Query.parse(sql, catalog(tpcds_small, TPCDS)))
    both = (
        "SELECT count(*) FROM customer, customer_address WHERE c_current_addr_sk = "
        "ca_address_sk AND ca_gmt_offset < -6 AND {}"
    )
    null_first = tpcds_small.run(both.format("c_birth_year IS NULL"), TPCDS, 30_000)
    true_both = tpcds_small.run(both.format("c_birth_year < 1950"), TPCDS, 30_000)
    assert null_first.rows[0][0] > 0 and true_both.rows[0][0] > 0  # both cases occur
    a = tpcds_small.run(sql, TPCDS, 30_000)
    b = tpcds_small.run(out.sql(), TPCDS, 30_000)
    assert a.rows == b.rows
    unguarded = out.sql().replace(" AND NOT COALESCE(customer.c_birth_year < 1950, FALSE)", "")
    assert unguarded != out.sql()
    doubled = tpcds_small.run(unguarded, TPCDS, 30_000)
    assert doubled.rows[0][0] == a.rows[0][0] + true_both.rows[0][0]
