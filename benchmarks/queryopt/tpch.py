"""TPC-H (SF 0.1 by default): the learned rewriter against PostgreSQL on held-out instances."""

from rlsuite.bench import Benchmark, Row, Value, pub

# fmt: off
BENCHMARK = Benchmark(script="queryopt_tpch.py", quick=dict(scale=0.01, train_per_template=1), rows=(
    Row("queryopt", "TPC-H SF 0.1, PostgreSQL 15", "total time speed-up, 22 held-out queries",
        "queryopt_tpch.json", Value(("summary", "total_speedup")),
        pub("R-Bot, TPC-H SF 10 on PostgreSQL 14, 104.9 -> 57.6 s; another scale", 104.86 / 57.60),
        "rlsuite bench run queryopt_tpch", "`runs/bench/queryopt_tpch`", fmt="{:.1f}x"),
))
# fmt: on
