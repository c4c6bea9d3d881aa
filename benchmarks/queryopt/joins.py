"""The seed's join workload: a DQN rewriter trained on generated queries, tested on held-out ones."""

from rlsuite.bench import Benchmark, Row, Value, pub

# fmt: off
BENCHMARK = Benchmark(script="queryopt_joins.py", quick=dict(train_queries=5, test_queries=3, iterations=1), rows=(
    Row("queryopt", "joins, PostgreSQL 15", "seed query speed-up", "queryopt_joins.json",
        Value(("seed_query", "postgres_s"), over=("seed_query", "learned_s")),
        pub("the seed's learned rewrite, 18.3 s -> 3.9 s", 18.3 / 3.9),
        "rlsuite bench run queryopt_joins", "`runs/bench/queryopt_joins`", fmt="{:,.1f}x"),
    Row("queryopt", "joins, PostgreSQL 15", "geo-mean speed-up, 20 held-out queries", "queryopt_joins.json",
        Value(("summary", "geomean_speedup")), pub("target: >= 100x", 100.0),
        "rlsuite bench run queryopt_joins", "`runs/bench/queryopt_joins`", fmt="{:.0f}x"),
))
# fmt: on
