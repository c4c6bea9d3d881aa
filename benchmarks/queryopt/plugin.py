"""pg_qopt inside PostgreSQL: planning latency on cached decisions, and end-to-end speed-up via
psql."""

from rlsuite.bench import Benchmark, Row, Value, pub

# fmt: off
BENCHMARK = Benchmark(script="queryopt_plugin.py", quick=dict(queries=3, latency_repeat=2, repeat=1), rows=(
    Row("queryopt", "pg_qopt plugin, joins", "added planning latency, median ms", "queryopt_plugin.json",
        Value(("median_added_planning_ms",)), pub("target: <= 2 ms", 2.0),
        "rlsuite bench run queryopt_plugin --model runs/bench/queryopt_joins --queries 20 --latency-repeat 20 --repeat 2",
        "`runs/bench/queryopt_joins`", lower_is_better=True),
))
# fmt: on
