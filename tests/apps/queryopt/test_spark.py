"""Spark SQL as the second engine, on a real local Spark session (one for the module)."""

from __future__ import annotations

import json
import re
import time

import pytest

pytest.importorskip("pyspark")

from rlsuite.apps.queryopt import rules as R  # noqa: E402
from rlsuite.apps.queryopt import spark_rules as S  # noqa: E402
from rlsuite.apps.queryopt.workloads import get  # noqa: E402
from rlsuite.apps.queryopt.workloads.joins import SEED_QUERY  # noqa: E402
from rlsuite.apps.queryopt.workloads.udf import SEED_QUERY as UDF_QUERY  # noqa: E402

MASTER = "local[2]"


@pytest.fixture(scope="module")
def spark_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("spark")


@pytest.fixture(scope="module")
def engine(spark_dir):
    """One Spark session with the joins and udf workloads loaded as Parquet."""
    from rlsuite.apps.queryopt.engines.spark import SparkEngine, ensure_workload, java_problem

    if java_problem():  # make test installs Java; without it these tests must fail, not skip
        pytest.fail(java_problem())
    eng = SparkEngine(master=MASTER, home=spark_dir)
    ensure_workload(eng, get("joins"))
    ensure_workload(eng, get("udf", udf_cost=100))
    try:
        yield eng
    finally:
        eng.close()


def test_tables_load_the_same_data_as_postgres(engine, db):
    assert engine.row_counts("qopt_joins") == {"r": 1000.0, "s": 10000.0, "t": 10000.0}
    assert engine.columns("qopt_joins")["s"] == {"b": "int", "d": "int"}
    q = "SELECT count(*), sum(b), sum(d), min(d), max(b) FROM s"
    assert engine.run(q, "qopt_joins").rows == [
        tuple(int(v) for v in db.run(q, "qopt_joins").rows[0])
    ]
    # loaded data is reused: the same key is not written again
    from rlsuite.apps.queryopt.engines.spark import ensure_workload

    assert ensure_workload(engine, get("joins")) is False


def test_tpcds_loads_into_spark_and_answers_as_duckdb(engine):
    """The tpcds workload's dsdgen tables as Parquet; Q15, as the app writes it for Spark,
    returns DuckDB's rows on the same data."""
    from rlsuite.apps.queryopt.engines.spark import ensure_workload
    from rlsuite.apps.queryopt.spark_rules import from_postgres
    from rlsuite.apps.queryopt.tpcds_answers import classify
    from rlsuite.apps.queryopt.workloads.tpcds import TABLES, TpcdsWorkload, duckdb_tpcds, queries

    w = TpcdsWorkload(scale=0.01)
    ensure_workload(engine, w)
    counts = engine.row_counts(w.schema)
    assert sorted(counts) == sorted(TABLES) and counts["store_sales"] == 28810
    assert engine.columns(w.schema)["store_sales"]["ss_net_paid"] == "decimal(7,2)"
    sql = queries()[15]
    spark = engine.run(from_postgres(sql), w.schema).rows
    with duckdb_tpcds(0.01) as con:
        duck = con.execute(sql).fetchall()
    assert len(spark) == 7 and classify(spark, duck, ordered=True) == ("same", "")


def test_eager_aggregation_round_trips_through_the_spark_dialect(engine):
    d = S.rewrite(engine, "qopt_joins", SEED_QUERY, ["eager_aggregation", "hint_broadcast_1"])
    assert d.applied == ("eager_aggregation", "hint_broadcast_1")
    assert d.rows_match is True
    assert "/*+ BROADCAST(s) */" in d.sql and "qopt_cnt" in d.sql


def test_a_join_hint_changes_the_physical_plan(engine):
    q = S.parse(SEED_QUERY, S.spark_catalog(engine, "qopt_joins"))
    before = engine.explain(S.spark_sql(q), "qopt_joins")["operators"]
    merged = S.apply("hint_merge_1", q)
    after = engine.explain(S.spark_sql(merged), "qopt_joins")["operators"]
    assert "SortMergeJoin" not in before and before.get("BroadcastHashJoin") == 2
    assert after.get("SortMergeJoin") == 1 and after.get("BroadcastHashJoin") == 1


def test_filter_after_aggregation_uses_sparks_fence_not_offset(engine):
    settings = get("udf", udf_cost=100).settings()
    d = S.rewrite(engine, "qopt_udf", UDF_QUERY, ["filter_after_aggregation"], 60_000, settings)
    assert d.applied == ("filter_after_aggregation",) and d.rows_match is True
    assert "OFFSET" not in d.sql.upper()
    assert d.settings[S.FENCE[0]] == S.FENCE[1]

    def order(sql, s):  # the UDF runs above the aggregate when its line comes first
        lines = engine.explain(sql, "qopt_udf", s)["physical"].splitlines()
        ops = [m.group(1) for m in (re.match(r"[\s:+\-]*([A-Z][A-Za-z]+)", x) for x in lines) if m]
        return ops.index("BatchEvalPython") < ops.index("HashAggregate")

    assert order(d.sql, d.settings) is True
    assert order(UDF_QUERY, settings) is False  # Spark's own plan pushes it below


def test_a_postgres_arm_is_refused_with_its_reason(engine):
    d = S.rewrite(engine, "qopt_joins", SEED_QUERY, ["arm_no_nestloop"])
    assert not d.applied and d.sql == SEED_QUERY
    assert "PostgreSQL planner switch" in d.reasons["arm_no_nestloop"]
    with pytest.raises(ValueError, match="unknown Spark rewrite"):
        S.rewrite(engine, "qopt_joins", SEED_QUERY, ["no_such_rule"])


def test_a_wrong_rewrite_is_caught(engine):
    q = S.parse(SEED_QUERY, S.spark_catalog(engine, "qopt_joins"))
    wrong = R.Query(q.expression.copy().where("r.a < 500"), (), ("eager_aggregation",), q.catalog)
    d = S.validate(engine, "qopt_joins", SEED_QUERY, wrong, {}, 60_000, {})
    assert d.rows_match is False and d.sql == SEED_QUERY and not d.applied
    assert "different rows" in d.reasons["*"]


def test_the_check_weighs_the_noise_of_repeated_runs(engine):
    class Counting:  # the real engine, its runs counted
        def __init__(self):
            self.runs = 0

        def __getattr__(self, name):
            return getattr(engine, name)

        def run(self, *args, **kwargs):
            self.runs += 1
            return engine.run(*args, **kwargs)

    settings = dict(get("udf", udf_cost=10_000).settings())
    q = S.parse(UDF_QUERY, S.spark_catalog(engine, "qopt_udf"))
    fenced = S.apply("filter_after_aggregation", q)  # 100 UDF calls instead of 1000s
    counting = Counting()
    d = S.validate(counting, "qopt_udf", UDF_QUERY, fenced, {}, 60_000, settings, 1.0, 2)
    assert d.applied == ("filter_after_aggregation",) and counting.runs == 4
    # a hint Catalyst already follows is the same plan: no gain beyond the noise
    j = S.parse(SEED_QUERY, S.spark_catalog(engine, "qopt_joins"))
    same = S.apply("hint_broadcast_1", j)
    d = S.validate(engine, "qopt_joins", SEED_QUERY, same, {}, 60_000, {}, 0.5, 2)
    assert not d.applied and d.sql == SEED_QUERY and d.rows_match is True
    assert "was not faster, in all 2 runs, than Spark's own plan" in d.reasons["*"]
    with pytest.raises(ValueError, match="check_runs"):
        S.validate(engine, "qopt_joins", SEED_QUERY, same, {}, 60_000, {}, 1.0, 0)


def test_a_query_past_its_timeout_is_cancelled(engine):
    res = engine.run(SEED_QUERY, "qopt_joins", timeout_ms=150)
    assert res.timed_out and res.rows is None
    assert engine.run("SELECT count(*) FROM r", "qopt_joins").rows == [(1000,)]


def test_a_job_killed_mid_run_is_a_clear_error(engine):
    import threading

    from rlsuite.apps.queryopt.engines.spark import SparkError

    sc = engine.spark.sparkContext

    def kill() -> None:  # once the job runs: a UDF call of 10^9 iterations cannot finish first
        while not sc.statusTracker().getActiveJobsIds():
            time.sleep(0.05)
        time.sleep(0.3)
        sc.cancelAllJobs()

    threading.Thread(target=kill, daemon=True).start()
    with pytest.raises(SparkError, match="cancelled or killed mid-run"):
        engine.run(UDF_QUERY, "qopt_udf", 30_000, {"qopt.udf_cost": "1000000000"})


def test_the_env_passes_gymnasiums_checks(engine, spark_dir):
    from gymnasium.utils.env_checker import check_env

    from rlsuite.apps.queryopt.envs.rewrite import QueryRewriteEnv

    env = QueryRewriteEnv(
        engine="spark",
        master=MASTER,
        spark_dir=str(spark_dir),
        workload="udf",
        workload_config={"udf_cost": 10},
        num_queries=2,
        max_steps=1,
        repeat=1,
    )
    try:
        check_env(env, skip_render_check=True)
        env.reset(options={"sql": UDF_QUERY})
        a = S.ACTION_NAMES.index("filter_after_aggregation")
        _, reward, terminated, _, info = env.step(a)
        assert terminated and reward < 0 and info["rows_match"] == 1.0
    finally:
        env.close()


def test_bad_queries_get_sparks_error(engine):
    from rlsuite.apps.queryopt.engines.spark import SparkError

    with pytest.raises(SparkError, match=r"Known tables: .*qopt_joins\.r"):
        engine.run("SELECT * FROM nope", "qopt_joins")
    with pytest.raises(SparkError, match=r"cannot parse.*pos 0"):
        engine.explain("SELEC 1", "qopt_joins")


def test_java_missing_says_how_to_install(monkeypatch):
    from rlsuite.apps.queryopt.engines.spark import JAVA_INSTALL, java_problem

    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert JAVA_INSTALL in java_problem()


def test_cli_refuses_bad_input(capsys):
    from rlsuite.apps.queryopt.cli import main

    assert main(["setup", "--engine", "spark", "--spark-master", "spark://127.0.0.1:9"]) == 2
    assert "cannot reach the Spark master" in capsys.readouterr().out
    assert main(["rewrite", "SELECT 1", "--engine", "spark", "--dsn", "host=x"]) == 2
    assert "--dsn names a PostgreSQL server" in capsys.readouterr().out


def test_cli_rewrite_train_run_on_spark(engine, spark_dir, tmp_path):
    from rlsuite.apps.queryopt.cli import main

    flags = ["--engine", "spark", "--spark-master", MASTER, "--spark-dir", str(spark_dir)]
    flags += ["--workload", "udf", "--udf-cost", "10"]  # the cheapest queries: a smoke test
    out = tmp_path / "rewrite.json"
    rc = main(
        ["rewrite", UDF_QUERY, *flags, "--rules", "filter_after_aggregation", "--check"]
        + ["--json", str(out)]
    )
    assert rc == 0
    assert json.loads(out.read_text())["rows_match"] is True
    run_dir = tmp_path / "run"
    rc = main(
        ["train", *flags, "--queries", "2", "--iterations", "1", "--env-steps", "4"]
        + ["--max-steps", "1", "--run-dir", str(run_dir)]
    )
    assert rc == 0
    res = tmp_path / "run.json"
    rc = main(["run", *flags, "--model", str(run_dir), "--queries", "1", "--json", str(res)])
    assert rc == 0
    summary = json.loads(res.read_text())["summary"]
    assert summary["queries"] == 1 and summary["wrong_results"] == 0


@pytest.mark.slow
def test_spark_demo_section_trains_and_compares(engine, spark_dir, ray_local):
    """`make demo`'s Spark SQL section on a tiny budget, in this module's Spark session (the
    same master and directory: the JVM and the loaded tables are shared) and the cheapest
    UDF cost; `make demo` itself runs the section with its cost 10000."""
    from rlsuite.apps.queryopt import spark_demo

    rows = spark_demo.run(
        train_queries=2,
        test_queries=1,
        iterations=1,
        env_steps=4,
        master=MASTER,
        home=str(spark_dir),
        udf_cost=10,
    )
    assert len(rows) == 1
    row = rows[0]
    assert row["app"] == "queryopt" and row["metric"] == "geo-mean speed-up"
    assert (
        row["task"].startswith("Spark SQL, udf (cost 10)") and "1 held-out queries" in row["task"]
    )
    assert row["controller"].startswith("DQN on Spark (1 it")
    assert isinstance(row["value"], float) and row["value"] > 0
    assert " 0 wrong" in row["reference"]  # every rewrite's rows were compared with Spark's
    # the demo closed its handle on the shared session without stopping it for this module
    assert engine.run("SELECT 1 AS one", "qopt_udf").rows == [(1,)]
