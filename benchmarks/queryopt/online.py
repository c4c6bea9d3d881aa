"""pg_qopt learning online while the UDF gets dearer: speed-up over time, adaptation, safety."""

from rlsuite.bench import Benchmark, Row, Value, here

# fmt: off
BENCHMARK = Benchmark(script="queryopt_online.py", quick=dict(quick=True, per_cost=20, queries=3, costs="100,30000"), rows=(
    Row("queryopt", "pg_qopt online, udf from no model", "speed-up over the cost-30000 phase",
        "queryopt_online.json",
        Value(("runs", "none", "analysis", "phases", {"cost": 30000}, "speedup_whole_phase")),
        here("offline learned rewriter", "offline_speedup", "30000"),
        "rlsuite bench run queryopt_online --run-dir runs/bench/queryopt_online", "learned online", fmt="{:.1f}x"),
))
# fmt: on
