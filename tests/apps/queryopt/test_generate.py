"""The query-shape generator on TPC-DS SF 0.01: its queries parse and plan, the same seed
gives the same queries, ``qopt-bench generate`` writes a file ``run`` reads; and, as a
property test, the decorrelation rules keep each generated query's rows (PostgreSQL's
rewrite against DuckDB's answer to the original on the same tables)."""

from __future__ import annotations

import sqlglot

from rlsuite.apps.queryopt import cli
from rlsuite.apps.queryopt.rewriter import FixedRules
from rlsuite.apps.queryopt.verify import has_order_by, same_rows
from rlsuite.apps.queryopt.workloads.own import read_queries
from rlsuite.apps.queryopt.workloads.shapes import SHAPES, generate
from rlsuite.apps.queryopt.workloads.tpcds import TpcdsWorkload

SMALL = TpcdsWorkload(scale=0.01)


def test_queries_parse_plan_and_repeat_per_seed(tpcds):
    rejected = []

    def plans(sql):
        try:
            tpcds.explain(sql, SMALL.schema)
        except Exception as e:  # noqa: BLE001
            rejected.append(e)
            return False
        return True

    qs = generate(len(SHAPES), seed=11, accept=plans)
    assert [s for s, _ in qs] == list(SHAPES) and not rejected
    for _, sql in qs:
        sqlglot.parse_one(sql, read="postgres")
    assert generate(len(SHAPES), seed=11) == qs
    assert generate(len(SHAPES), seed=12) != qs


def test_generate_cli_writes_what_run_reads(tpcds, dsn, tmp_path, capsys):
    out = tmp_path / "g.sql"
    argv = ["generate", "--n", "4", "--seed", "3", "--shapes", "not_in,scalar_having"]
    assert cli.main([*argv, "--out", str(out), "--dsn", dsn]) == 0
    assert "wrote 4 queries" in " ".join(capsys.readouterr().out.split())
    queries, skipped = read_queries(str(out))
    assert len(queries) == 4 and not skipped and "NOT IN" in queries[0]
    assert cli.main([*argv, "--dsn", dsn]) == 0  # to stdout: the same queries
    assert capsys.readouterr().out.count(";") == 4
    assert cli.main(["generate", "--shapes", "lateral", "--dsn", dsn]) == 2
    assert "unknown shape 'lateral'" in capsys.readouterr().out


def test_the_rules_keep_the_rows_of_generated_queries(tpcds, dsn):
    from rlsuite.apps.queryopt.duckref import duckdb_on_postgres

    applied = 0
    with duckdb_on_postgres(dsn, timeout_s=60) as duck:
        for shape, sql in generate(len(SHAPES), seed=7):
            for rule in ("decorrelate_scalar", "not_in_exact"):
                d = FixedRules(tpcds, SMALL.schema, [rule]).rewrite(sql)
                if not d.applied:
                    continue
                applied += 1
                got = tpcds.run(d.sql, SMALL.schema, 30_000, d.settings)
                assert not got.timed_out, (shape, rule)
                want = duck(sql, SMALL.schema)
                assert same_rows(want, got.rows, ordered=has_order_by(sql)), (shape, rule, sql)
    assert applied >= 5


def test_a_query_postgres_rejects_is_never_written():
    # the acceptance test stands in for EXPLAIN: every NOT IN draw is "rejected"
    qs = generate(4, seed=1, shapes=["in", "not_in"], accept=lambda sql: "NOT IN" not in sql)
    assert [s for s, _ in qs] == ["in", "in"]
    assert not any("NOT IN" in sql for _, sql in qs)


def test_the_shipped_tpcds_model_is_found_in_a_source_checkout():
    from rlsuite.apps.queryopt.workloads import get

    path = SMALL.shipped_model
    assert path is not None and path.endswith("queryopt_tpcds_odd_dqn")
    assert get("joins").shipped_model is None
