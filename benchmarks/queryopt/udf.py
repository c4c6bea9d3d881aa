"""The seed's UDF example with drift: the UDF grows more expensive and the rewriter adapts."""

from rlsuite.bench import Benchmark, Row, Value, here

# fmt: off
BENCHMARK = Benchmark(script="queryopt_udf.py", quick=dict(costs="10,30000", train_queries=5, test_queries=2, iterations=1, adapt_iterations=1), rows=(
    Row("queryopt", "udf at cost 30000, PostgreSQL 15", "geo-mean speed-up, 10 held-out queries",
        "queryopt_udf.json", Value(("per_cost", {"udf_cost": 30000}, "geomean_speedup")),
        here("hand rewrite", "per_cost", {"udf_cost": 30000}, "hand_rule_geomean_speedup"),
        "rlsuite bench run queryopt_udf", "`runs/bench/queryopt_udf`", fmt="{:.1f}x"),
))
# fmt: on
