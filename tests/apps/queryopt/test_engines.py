"""The engine seam: PostgreSQL and Spark answer one protocol, and the rewriter and the row
check need nothing else (a third engine, SQLite in 40 lines here, plugs in as it is)."""

from __future__ import annotations

import inspect
import math
import sqlite3
import time
from collections.abc import Mapping
from typing import Any

import pytest

from rlsuite.apps.queryopt.engines import ENGINE_NAMES, Engine, engine_class, open_engine
from rlsuite.apps.queryopt.engines.base import RunResult
from rlsuite.apps.queryopt.engines.spark import parse_explain
from rlsuite.apps.queryopt.rewriter import FixedRules

METHODS = [n for n, v in vars(Engine).items() if not n.startswith("_") and inspect.isfunction(v)]
OPTIONS = {"postgres": {"dsn": "dbname=none"}, "spark": {"master": "local[1]"}}


def test_protocol_lists_the_calls_the_app_makes():
    assert {"run", "explain", "estimated_cost", "plan_lines", "columns", "row_counts"} <= set(
        METHODS
    )
    assert {"not_null_columns", "visible_schemas", "ensure_workload", "close"} <= set(METHODS)


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_every_engine_answers_the_protocol_with_its_signatures(name):
    eng = open_engine(name, **OPTIONS[name])  # lazy: nothing connects or starts
    assert isinstance(eng, Engine)
    assert eng.label and eng.dialect in ("postgres", "spark") and eng.dsn
    cls = engine_class(name)
    for m in METHODS:
        want = list(inspect.signature(getattr(Engine, m)).parameters.values())
        got = list(inspect.signature(getattr(cls, m)).parameters.values())
        # the same parameters, in order, with the same defaults; extra ones only optional
        assert [(p.name, p.default) for p in got[: len(want)]] == [
            (p.name, p.default) for p in want
        ], f"{cls.__name__}.{m}"
        assert all(p.default is not inspect.Parameter.empty for p in got[len(want) :])
    eng.close()


def test_unknown_engine_lists_the_known_ones():
    with pytest.raises(ValueError, match="engines: postgres, spark"):
        open_engine("duckdb")


def test_plans_become_a_cost_and_lines_on_both_engines():
    pg = open_engine("postgres", **OPTIONS["postgres"])
    plan = {
        "Plan": {
            "Node Type": "Hash Join",
            "Total Cost": 42.5,
            "Plan Rows": 7,
            "Plans": [{"Node Type": "Seq Scan", "Total Cost": 1.0, "Plan Rows": 3}],
        }
    }
    assert pg.estimated_cost(plan) == 42.5
    assert pg.plan_lines(plan) == [
        "Hash Join  (cost 42.5, rows 7)",
        "  Seq Scan  (cost 1.0, rows 3)",
    ]
    spark = open_engine("spark", **OPTIONS["spark"])
    text = (
        "== Optimized Logical Plan ==\nAggregate [b], Statistics(sizeInBytes=2.0 KiB, rowCount=10)\n"
        "== Physical Plan ==\n*(2) HashAggregate(keys=[b])\n+- Exchange hashpartitioning(b, 4)\n"
    )
    sp = parse_explain(text)
    assert spark.estimated_cost(sp) == 2048.0
    assert spark.plan_lines(sp) == [
        "*(2) HashAggregate(keys=[b])",
        "+- Exchange hashpartitioning(b, 4)",
    ]
    assert math.isnan(spark.estimated_cost({}))


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_no_engine_writes_outside_the_apps_schemas(name, tmp_path):
    opts = dict(OPTIONS[name], **({"home": tmp_path} if name == "spark" else {}))
    eng = open_engine(name, **opts)
    with pytest.raises(ValueError, match="app's own schemas"):
        if name == "spark":
            eng.load("public", {"t": {"a": [1]}}, key="k")
        else:
            eng.load("public", ["CREATE TABLE t (a int)"])


class SqliteEngine:
    """A third engine, written against the protocol only (in memory, one schema: ``main``)."""

    label, dialect = "SQLite", "sqlite"

    def __init__(self, ddl: str):
        self.con = sqlite3.connect(":memory:")
        self.con.executescript(ddl)
        self.dsn = "sqlite::memory:"

    def run(self, sql, schema, timeout_ms=60_000, settings=None, fetch=True) -> RunResult:
        t0 = time.perf_counter()
        cur = self.con.execute(sql)
        rows = cur.fetchall()
        return RunResult(rows if fetch else None, time.perf_counter() - t0)

    def explain(self, sql, schema, settings=None, analyze=False, timeout_ms=60_000) -> dict:
        return {"steps": self.con.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()}

    def estimated_cost(self, plan: Mapping[str, Any]) -> float:
        return float(len(plan["steps"]))

    def plan_lines(self, plan: Mapping[str, Any]) -> list[str]:
        return [str(s[-1]) for s in plan["steps"]]

    def columns(self, schema):
        tables = [
            r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        return {
            t: {r[1]: r[2].lower() for r in self.con.execute(f"PRAGMA table_info({t})")}
            for t in tables
        }

    def row_counts(self, schema):
        return {
            t: float(self.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
            for t in self.columns(schema)
        }

    def not_null_columns(self, schema):
        return {}

    def visible_schemas(self):
        return ["main"]

    def ensure_workload(self, workload, seed=0, force=False):
        return False

    def ping(self):
        return sqlite3.sqlite_version

    def close(self):
        self.con.close()


def test_a_new_engine_gets_row_checked_rewrites_without_touching_the_rewriter():
    eng = SqliteEngine(
        "CREATE TABLE r (a integer, b integer); CREATE TABLE s (b integer, d integer);"
        "INSERT INTO r VALUES (1, 1), (2, 1), (3, 2), (4, 3);"
        "INSERT INTO s VALUES (1, 10), (1, 11), (2, 12), (5, 13);"
    )
    assert isinstance(eng, Engine)
    sql = "SELECT r.b, count(1) FROM r JOIN s ON r.b = s.b GROUP BY r.b"
    d = FixedRules(eng, "main", ["eager_aggregation"]).rewrite(sql, check=True)
    assert d.applied == ("eager_aggregation",) and d.rows_match is True and d.sql != sql
    assert sorted(eng.run(d.sql, "main").rows) == [(1, 4), (2, 1)]
    # a rewrite the engine cannot plan keeps the original, with the engine's name in the reason
    eng.explain = lambda *a, **k: (_ for _ in ()).throw(sqlite3.OperationalError("no"))
    d = FixedRules(eng, "main", ["eager_aggregation"]).rewrite(sql, check=True)
    assert d.sql == sql and not d.applied and d.reasons["*"].startswith("SQLite rejects")
    eng.close()
