"""The app's decorrelation rules: golden fixtures, refusals with reasons, and rows equal to
the original's on PostgreSQL (TPC-DS SF 0.01) and on DuckDB reading the same tables; NOT IN
on data with NULLs on either side."""

from __future__ import annotations

import pytest

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.engines.postgres import admin_execute
from rlsuite.apps.queryopt.rewriter import FixedRules
from rlsuite.apps.queryopt.verify import same_rows
from rlsuite.apps.queryopt.workloads.tpcds import TpcdsWorkload

CAT = R.Catalog(
    {
        "o": {"id": "int", "k": "int", "v": "int", "g": "int"},
        "i": {"k": "int", "v": "int", "j": "int"},
        "j": {"j": "int", "w": "int"},
    }
)

GOLDEN = [
    (
        "decorrelate_scalar",
        "SELECT o.id FROM o WHERE o.v > (SELECT avg(i.v) FROM i WHERE i.k = o.k)",
        "SELECT o.id AS id FROM o AS o LEFT JOIN (SELECT i.k AS k0, AVG(i.v) AS v FROM i AS i "
        "GROUP BY i.k) AS _qd0 ON _qd0.k0 = o.k WHERE o.v > (_qd0.v)",
    ),
    (  # SELECT list; count is 0 on no rows, so an outer row without a group gets 0
        "decorrelate_scalar",
        "SELECT o.id, (SELECT count(*) FROM i WHERE i.k = o.k) AS n FROM o",
        "SELECT o.id AS id, (CASE WHEN _qd0.k0 IS NULL THEN 0 ELSE _qd0.v END) AS n FROM o AS o "
        "LEFT JOIN (SELECT i.k AS k0, COUNT(*) AS v FROM i AS i GROUP BY i.k) AS _qd0 "
        "ON _qd0.k0 = o.k",
    ),
    (  # HAVING, correlated on the GROUP BY key, through a join inside the subquery
        "decorrelate_scalar",
        "SELECT o.k, sum(o.v) FROM o GROUP BY o.k HAVING sum(o.v) > "
        "(SELECT sum(i.v) FROM i JOIN j ON i.j = j.j WHERE j.w > 3 AND i.k = o.k)",
        "SELECT o.k AS k, SUM(o.v) AS _col_1 FROM o AS o LEFT JOIN (SELECT i.k AS k0, "
        "SUM(i.v) AS v FROM i AS i JOIN j AS j ON i.j = j.j WHERE j.w > 3 GROUP BY i.k) AS _qd0 "
        "ON _qd0.k0 = o.k GROUP BY o.k, _qd0.v HAVING SUM(o.v) > (_qd0.v)",
    ),
    (  # two correlated columns on two tables of the subquery; COALESCE's value on no rows
        "decorrelate_scalar",
        "SELECT o.id FROM o WHERE o.v > (SELECT coalesce(sum(i.v), 0) FROM i, j "
        "WHERE i.j = j.j AND i.k = o.k AND j.w = o.g)",
        "SELECT o.id AS id FROM o AS o LEFT JOIN (SELECT i.k AS k0, j.w AS k1, "
        "COALESCE(SUM(i.v), 0) AS v FROM i AS i, j AS j WHERE i.j = j.j GROUP BY i.k, j.w) "
        "AS _qd0 ON _qd0.k0 = o.k AND _qd0.k1 = o.g WHERE o.v > "
        "(CASE WHEN _qd0.k0 IS NULL THEN COALESCE(NULL, 0) ELSE _qd0.v END)",
    ),
    (  # two levels deep: the middle query equates o.k with i.k, so the inner one reads i.k
        "decorrelate_scalar",
        "SELECT o.id FROM o WHERE o.v > (SELECT sum(i.v) FROM i WHERE i.k = o.k AND "
        "i.j > (SELECT avg(j.w) FROM j WHERE j.j = o.k))",
        "SELECT o.id AS id FROM o AS o LEFT JOIN (SELECT i.k AS k0, SUM(i.v) AS v FROM i AS i "
        "LEFT JOIN (SELECT j.j AS k0, AVG(j.w) AS v FROM j AS j GROUP BY j.j) AS _qd0 "
        "ON _qd0.k0 = i.k WHERE i.j > (_qd0.v) GROUP BY i.k) AS _qd1 ON _qd1.k0 = o.k "
        "WHERE o.v > (_qd1.v)",
    ),
    (  # correlated by an equality and a <: grouped over the outer table's distinct values
        "decorrelate_scalar",
        "SELECT o.id FROM o WHERE o.v > (SELECT max(i.v) FROM i WHERE i.k = o.k AND i.j < o.g)",
        "SELECT o.id AS id FROM o AS o LEFT JOIN (SELECT o.g AS k0, o.k AS k1, MAX(i.v) AS v "
        "FROM i AS i CROSS JOIN (SELECT DISTINCT o.g, o.k FROM o AS o) AS o WHERE i.k = o.k "
        "AND i.j < o.g GROUP BY o.g, o.k) AS _qd0 ON _qd0.k0 = o.g AND _qd0.k1 = o.k "
        "WHERE o.v > (_qd0.v)",
    ),
    (
        "not_in_exact",
        "SELECT o.id FROM o WHERE o.v NOT IN (SELECT i.v FROM i WHERE i.k = 3)",
        "SELECT o.id AS id FROM o AS o WHERE NOT EXISTS(SELECT 1 FROM (SELECT i.v AS y FROM i "
        "AS i WHERE i.k = 3) AS _qn0a WHERE _qn0a.y = o.v) AND NOT EXISTS(SELECT 1 FROM "
        "(SELECT i.v AS y FROM i AS i WHERE i.k = 3) AS _qn0b WHERE _qn0b.y IS NULL) AND "
        "(NOT o.v IS NULL OR NOT EXISTS(SELECT 1 FROM (SELECT i.v AS y FROM i AS i "
        "WHERE i.k = 3) AS _qn0c))",
    ),
]


@pytest.mark.parametrize(("rule", "sql", "expected"), GOLDEN)
def test_golden(rule, sql, expected):
    assert R.apply(rule, R.Query.parse(sql, CAT)).sql() == expected


REFUSED = [
    ("SELECT o.id FROM o WHERE o.v > (SELECT avg(i.v) FROM i WHERE i.k = o.k LIMIT 1)", "LIMIT"),
    ("SELECT o.id FROM o WHERE o.v > (SELECT avg(i.v) * random() FROM i WHERE i.k = o.k)", "RANDOM()"),
    ("SELECT o.id FROM o WHERE o.v > (SELECT count(*) FROM i WHERE i.k = o.k AND i.v < nextval('s'))", "NEXTVAL"),
    ("SELECT o.id FROM o WHERE o.g > (SELECT count(*) FROM i WHERE i.k = o.k AND i.j < extract(day FROM now()))", "CURRENT_TIMESTAMP"),
    ("SELECT o.id FROM o WHERE o.v > (SELECT avg(i.v) FROM i WHERE i.k < coalesce(o.k, 0))", "may hold for a NULL"),
    ("SELECT o.id FROM o WHERE o.v > (SELECT avg(i.v) FROM i WHERE i.k < 10 / o.k)", "may hold for a NULL"),
    ("SELECT o.id FROM o, j WHERE o.v > (SELECT avg(i.v) FROM i WHERE i.k < o.k AND i.j = j.w)", "come from one table"),
    ("SELECT o.id FROM o WHERE o.v > (SELECT i.v FROM i WHERE i.k = o.k)", "not an aggregate"),
    ("SELECT o.id FROM o WHERE o.v > (SELECT max(i.v) FROM i WHERE i.k = o.k GROUP BY i.j)", "GROUP BY"),
    ("SELECT o.g, sum(o.v) FROM o GROUP BY o.g HAVING sum(o.v) > (SELECT sum(i.v) FROM i WHERE i.k = o.k)", "not in the outer GROUP BY"),
    ("SELECT o.id FROM o WHERE o.v > (SELECT avg(i.v) FROM i WHERE i.k = 1)", "not correlated"),
    ("SELECT o.id FROM o WHERE o.v > (SELECT sum(i.v) FROM i WHERE i.k > 3 AND i.j > (SELECT avg(j.w) FROM j WHERE j.j = o.k))", "two levels out"),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "why"), REFUSED)
def test_refusals_say_why(sql, why):
    with pytest.raises(R.NotApplicable, match=why.replace("(", r"\(").replace(")", r"\)")):
        R.apply("decorrelate_scalar", R.Query.parse(sql, CAT))


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("SELECT o.id FROM o WHERE o.v NOT IN (SELECT i.v FROM i) OR o.k = 1", "unknown answer"),
        ("SELECT o.id FROM o WHERE o.v NOT IN (SELECT i.v FROM i LIMIT 3)", "LIMIT"),
        ("SELECT o.id FROM o WHERE o.v NOT IN (SELECT i.v FROM i WHERE i.k > random())", "RANDOM"),
    ],
)
def test_not_in_refusals_say_why(sql, why):
    with pytest.raises(R.NotApplicable, match=why):
        R.apply("not_in_exact", R.Query.parse(sql, CAT))


VOLATILE = [
    ("unnest_subqueries", "SELECT o.id FROM o WHERE o.v > (SELECT avg(i.v) FROM i WHERE i.k = o.k AND i.v < 10 * random())", "RANDOM()"),
    ("unnest_subqueries", "SELECT o.id FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k = o.k AND i.j < nextval('s'))", "NEXTVAL"),
    ("unnest_subqueries", "SELECT o.id, (SELECT max(i.v) FROM i WHERE i.k = o.k AND i.j < extract(day FROM now())) FROM o", "CURRENT_TIMESTAMP"),
    ("decorrelate_exists_inequality", "SELECT o.id FROM o WHERE NOT EXISTS (SELECT 1 FROM i WHERE i.k = o.k AND i.v <> o.v AND i.j > random())", "RANDOM()"),
    ("not_in_to_not_exists", "SELECT o.id FROM o WHERE o.v NOT IN (SELECT i.v FROM i WHERE i.j > random())", "RANDOM()"),
    ("not_in_exact", "SELECT o.id FROM o WHERE o.v NOT IN (SELECT i.v FROM i WHERE i.k = o.k AND i.j < nextval('s'))", "NEXTVAL"),
    ("decorrelate_scalar", "SELECT o.id FROM o WHERE o.v > (SELECT avg(i.v) FROM i WHERE i.k = o.k AND i.j > random())", "RANDOM()"),
]  # fmt: skip


@pytest.mark.parametrize(("rule", "sql", "call"), VOLATILE)
def test_every_subquery_rule_refuses_a_volatile_subquery_saying_why(rule, sql, call):
    # evaluated once per outer row in the original, once per group (or once) in a rewrite
    with pytest.raises(R.NotApplicable, match="may give another value per evaluation") as e:
        R.apply(rule, R.Query.parse(sql, CAT))
    assert call in str(e.value)


SMALL = TpcdsWorkload(scale=0.01)
TPCDS = {
    # correlated through a join inside the subquery, with a date filter there
    "where_join": "SELECT i.i_item_id, i.i_current_price FROM item i WHERE "
    "i.i_current_price * 100 < (SELECT sum(ss.ss_net_paid) FROM store_sales ss JOIN date_dim d "
    "ON ss.ss_sold_date_sk = d.d_date_sk WHERE d.d_year = 2000 AND ss.ss_item_sk = i.i_item_sk)",
    # an aggregate subquery correlated on the GROUP BY key, in HAVING
    "having_group_key": "SELECT ss.ss_item_sk, sum(ss.ss_net_paid) AS paid FROM store_sales ss "
    "GROUP BY ss.ss_item_sk HAVING sum(ss.ss_net_paid) > (SELECT 10 * sum(sr.sr_return_amt) "
    "FROM store_returns sr WHERE sr.sr_item_sk = ss.ss_item_sk)",
    "select_count": "SELECT i.i_item_id, (SELECT count(*) FROM store_sales ss WHERE "
    "ss.ss_item_sk = i.i_item_sk AND ss.ss_quantity > 95) AS n FROM item i "
    "WHERE i.i_category = 'Books'",
    "two_keys_coalesce": "SELECT c.c_customer_id FROM customer c WHERE c.c_birth_year > "
    "(SELECT coalesce(min(c2.c_birth_year), 0) + 5 FROM customer c2 JOIN customer_address ca "
    "ON c2.c_current_addr_sk = ca.ca_address_sk WHERE c2.c_birth_month = c.c_birth_month "
    "AND ca.ca_state = 'TX' AND c2.c_preferred_cust_flag = c.c_preferred_cust_flag)",
    "two_levels": "SELECT i.i_item_id FROM item i WHERE i.i_category = 'Books' AND "
    "i.i_current_price * 50 < (SELECT sum(ss.ss_net_paid) FROM store_sales ss WHERE "
    "ss.ss_item_sk = i.i_item_sk AND ss.ss_quantity > (SELECT avg(ss2.ss_quantity) FROM "
    "store_sales ss2 WHERE ss2.ss_item_sk = i.i_item_sk))",
    # correlated by an inequality: the customers' distinct birth years
    "inequality": "SELECT c.c_customer_id FROM customer c WHERE c.c_birth_month = 3 AND "
    "c.c_birth_day > (SELECT avg(c2.c_birth_day) FROM customer c2 WHERE c2.c_birth_year < "
    "c.c_birth_year AND c2.c_birth_month = c.c_birth_month)",
    "where_or": "SELECT i.i_item_sk FROM item i WHERE i.i_current_price > "
    "(SELECT 1.5 * avg(i2.i_current_price) FROM item i2 WHERE i2.i_category = i.i_category) "
    "OR i.i_brand_id = 1001001",
}


@pytest.fixture(scope="module")
def duck(db, dsn):
    """DuckDB reading the test server's tables (its postgres scanner, read-only)."""
    from rlsuite.apps.queryopt.duckref import duckdb_on_postgres

    SMALL.ensure(db)
    admin_execute(
        dsn,
        "DROP SCHEMA IF EXISTS qopt_test_nulls CASCADE; CREATE SCHEMA qopt_test_nulls; "
        "CREATE TABLE qopt_test_nulls.t (id int, x int); "
        "INSERT INTO qopt_test_nulls.t VALUES (1, 1), (2, 2), (3, NULL), (4, 4); "
        "CREATE TABLE qopt_test_nulls.s (grp int, y int); "
        "INSERT INTO qopt_test_nulls.s VALUES (1, 1), (1, 3), (2, 1), (2, NULL), (4, 5); "
        "ANALYZE qopt_test_nulls.t, qopt_test_nulls.s",
    )
    with duckdb_on_postgres(dsn) as run:
        yield run


def _both(db, duck, schema, sql, new_sql, settings=None):
    pg_a = db.run(sql, schema, 30_000).rows
    pg_b = db.run(new_sql, schema, 30_000, settings or {}).rows
    d_a, d_b = duck(sql, schema), duck(new_sql, schema)
    return pg_a, pg_b, d_a, d_b


@pytest.mark.parametrize("name", sorted(TPCDS))
def test_rows_on_postgres_and_duckdb(duck, db, name):
    sql = TPCDS[name]
    d = FixedRules(db, SMALL.schema, ["decorrelate_scalar"]).rewrite(sql)
    assert d.applied == ("decorrelate_scalar",), d.reasons
    pg_a, pg_b, d_a, d_b = _both(db, duck, SMALL.schema, sql, d.sql, d.settings)
    assert pg_a, "a check on no rows would prove nothing"
    assert same_rows(pg_a, pg_b)
    assert same_rows(d_a, d_b) and same_rows(pg_a, d_a)


@pytest.mark.parametrize(
    ("where", "ids"),
    [
        ("s.grp = 1", [2, 4]),  # x NULL: NOT IN is unknown, the row goes
        ("s.grp = 2", []),  # a NULL y: NOT IN is never true
        ("s.grp = 3", [1, 2, 3, 4]),  # no rows: true, even for a NULL x
        ("s.grp = t.id", [3, 4]),  # correlated: per row
    ],
)
def test_not_in_keeps_its_null_semantics(duck, db, where, ids):
    schema = "qopt_test_nulls"
    sql = f"SELECT t.id FROM t WHERE t.x NOT IN (SELECT s.y FROM s WHERE {where})"
    assert "NOT NULL" in FixedRules(db, schema, ["not_in_to_not_exists"]).rewrite(sql).reason
    d = FixedRules(db, schema, ["not_in_exact"]).rewrite(sql)
    assert d.applied == ("not_in_exact",), d.reasons
    pg_a, pg_b, d_a, d_b = _both(db, duck, schema, sql, d.sql)
    assert sorted(r[0] for r in pg_a) == ids
    assert same_rows(pg_a, pg_b) and same_rows(d_a, d_b) and same_rows(pg_a, d_a)
