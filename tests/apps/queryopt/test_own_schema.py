"""A user's own database: any schema, read-only, a file of queries, and a reader-only role.

The schema ``shop`` (not an app schema) and the role ``qopt_reader`` (USAGE on the
schema, SELECT on its tables, nothing else) are made by the test itself, as a
user's DBA would; the app only reads them.
"""

from __future__ import annotations

import json

import pytest

from rlsuite.apps.queryopt import cli
from rlsuite.apps.queryopt.engines.base import DatabaseError
from rlsuite.apps.queryopt.engines.postgres import Database, admin_execute
from rlsuite.apps.queryopt.verify import check_rewrite
from rlsuite.apps.queryopt.workloads.own import read_queries_text

# The joins seed's shape (eager aggregation applies) on two tables: ~20 ms instead of the
# seed query's ~4 s, run several times per test by the row checks.
QUERY = "SELECT R.c, count(1) FROM R, T WHERE R.c = T.c GROUP BY R.c"
SLEEPY = "SELECT R.c, count(1) FROM R, T WHERE R.c = T.c AND (SELECT 1 FROM pg_sleep({s})) = 1 GROUP BY R.c"  # noqa: E501


def test_the_reader_role_really_cannot_write(reader_dsn):
    with pytest.raises(Exception, match="permission denied"):
        admin_execute(reader_dsn, "CREATE TABLE shop.x (a int)")
    with pytest.raises(Exception, match="permission denied"):
        admin_execute(reader_dsn, "INSERT INTO shop.r VALUES (1, 2, 3)")


def test_any_schema_is_read_but_only_app_schemas_are_written(reader_dsn):
    with Database(reader_dsn) as rd:
        assert rd.run("SELECT count(*) FROM r", "shop").rows[0][0] > 0
        assert "shop" in rd.visible_schemas() and "qopt_joins" not in rd.visible_schemas()
        with pytest.raises(ValueError, match="app's own schemas"):
            rd.load("shop", ["SELECT 1"])
        with pytest.raises(DatabaseError, match="read-only"):
            rd.run("CREATE TABLE shop.y (a int)", "shop")


def test_rewrite_and_check_as_a_reader(reader_dsn, capsys, tmp_path):
    out = tmp_path / "d.json"
    rc = cli.main(
        ["rewrite", QUERY, "--schema", "shop", "--check", "--dsn", reader_dsn]
        + ["--rules", "eager_aggregation", "--json", str(out)]
    )
    text = capsys.readouterr().out
    assert rc == 0, text
    d = json.loads(out.read_text())
    assert d["rewrites"] == ["eager_aggregation"] and d["rows_match"] is True
    assert d["checked_on"] == "shop"


def test_run_a_query_file_skips_what_is_not_a_select(reader_dsn, capsys, tmp_path):
    qf = tmp_path / "mine.sql"
    qf.write_text(
        f"-- my workload\n{QUERY};\nINSERT INTO r VALUES (1, 2, 3);\n"
        "SELECT R.b, count(1) FROM R GROUP BY R.b;\n"
    )
    out = tmp_path / "r.json"
    rc = cli.main(
        ["run", "--schema", "shop", "--queries", str(qf), "--rules", "eager_aggregation"]
        + ["--dsn", reader_dsn, "--json", str(out)]
    )
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "skipped statement 2" in text and "not a SELECT" in text
    res = json.loads(out.read_text())
    assert [q["sql"] for q in res["queries"]] == [
        QUERY,
        "SELECT R.b, count(1) FROM R GROUP BY R.b",
    ]
    assert res["summary"]["wrong_results"] == 0


def test_bad_schema_and_bad_files_give_clear_errors(reader_dsn, capsys, tmp_path):
    assert cli.main(["rewrite", QUERY, "--schema", "nosuch", "--dsn", reader_dsn]) == 2
    text = capsys.readouterr().out
    assert "'nosuch' does not exist" in text and "shop" in text
    assert (
        cli.main(["run", "--schema", "shop", "--rules", "eager_aggregation", "--dsn", reader_dsn])
        == 2
    )
    assert "needs --queries FILE.sql" in capsys.readouterr().out
    assert cli.main(["setup", "--schema", "shop", "--dsn", reader_dsn]) == 2
    assert "never writes into your schema" in capsys.readouterr().out
    only_ddl = tmp_path / "ddl.sql"
    only_ddl.write_text("DROP TABLE r; CREATE TABLE z (a int)")
    rc = cli.main(
        ["run", "--schema", "shop", "--queries", str(only_ddl), "--rules", "eager_aggregation"]
        + ["--dsn", reader_dsn]
    )
    assert rc == 2 and "has no SELECT query" in " ".join(capsys.readouterr().out.split())


def test_query_file_splitting():
    qs, skipped = read_queries_text(
        "SELECT ';' AS semi; /* c; */ SELECT 2 INTO t2; UPDATE t SET a = 1; SELEC 3; SELECT 4;"
    )
    assert qs == ["SELECT ';' AS semi", "SELECT 4"]
    whys = {n: w for n, _, w in skipped}
    assert "INTO" in whys[2] and "UPDATE" in whys[3] and set(whys) == {2, 3, 4}


def test_a_slower_or_timed_out_rewrite_leaves_the_original(reader_dsn):
    with Database(reader_dsn) as rd:
        slow = check_rewrite(rd, "shop", QUERY, SLEEPY.format(s=0.3), {}, {}, 60_000)
        assert not slow.keep and "ran slower" in slow.reason and slow.rows_match is True
        stuck = check_rewrite(rd, "shop", QUERY, SLEEPY.format(s=5), {}, {}, 500)
        assert not stuck.keep and "ran past 500 ms" in stuck.reason
        fine = check_rewrite(rd, "shop", SLEEPY.format(s=0.3), QUERY, {}, {}, 60_000)
        assert fine.keep and fine.checked_on == "shop"


def test_serve_takes_a_schema_of_your_own(reader_dsn):
    """``serve --schema S --rules R`` serves the workload ``schema:S``: the fixed rules over S."""
    from rlsuite.apps.queryopt.rewriter import FixedRules
    from rlsuite.apps.queryopt.workloads import get

    args = cli.build_parser().parse_args(
        ["serve", "--schema", "shop", "--rules", "eager_aggregation", "--dsn", reader_dsn]
    )
    cli._serve_own_schema(args)
    assert args.workload == "schema:shop"
    w = get(args.workload)
    assert w.schema == "shop"
    with Database(reader_dsn) as rd:
        d = FixedRules(rd, w.schema, ["eager_aggregation"]).rewrite(QUERY, check=True)
        assert d.applied == ("eager_aggregation",) and d.rows_match is True
    no_rules = cli.build_parser().parse_args(["serve", "--schema", "shop", "--learn"])
    with pytest.raises(ValueError, match="goes with --rules"):
        cli._serve_own_schema(no_rules)
