"""The DQN rewriter on Spark SQL, learned against Spark's own optimizer (Catalyst + AQE on)."""

from rlsuite.bench import Benchmark, Row, Value, here

# fmt: off
BENCHMARK = Benchmark(script="queryopt_spark.py", quick=dict(workloads="joins", train_queries=3, joins_test_queries=2, iterations=1, env_steps=10, repeat=1), rows=(
    Row("queryopt", "joins, Spark 4.3", "geo-mean speed-up, 8 held-out queries", "queryopt_spark.json",
        Value(("workloads", "joins", "summary", "geomean_speedup")),
        here("eager aggregation on every query", "workloads", "joins", "hand_rewrite", "geomean_speedup"),
        "rlsuite bench run queryopt_spark", "`runs/bench/queryopt_spark`", fmt="{:.2f}x"),
    Row("queryopt", "udf at cost 30000, Spark 4.3", "geo-mean speed-up, 4 held-out queries", "queryopt_spark.json",
        Value(("workloads", "udf", "costs", "30000", "summary", "geomean_speedup")),
        here("hand rewrite", "workloads", "udf", "costs", "30000", "hand_rewrite", "geomean_speedup"),
        "rlsuite bench run queryopt_spark", "`runs/bench/queryopt_spark`", fmt="{:.2f}x"),
    Row("queryopt", "TPC-H SF 0.1, Spark 4.3", "total time speed-up, 22 held-out queries",
        "queryopt_spark_tpch.json", Value(("workloads", "tpch", "summary", "total_speedup")), None,
        "rlsuite bench run queryopt_spark --workloads tpch --out queryopt_spark_tpch --timeout-ms 20000 "
        "--train-timeout-ms 10000 --check-runs 5", "`runs/bench/queryopt_spark`", fmt="{:.2f}x"),
))
# fmt: on
