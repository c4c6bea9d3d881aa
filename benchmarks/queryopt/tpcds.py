"""TPC-DS on PostgreSQL: its own plans, the greedy-by-cost rule chooser, and a chooser by measured
runtime (Bao's lesson), at one scale with a per-query cap."""

from rlsuite.bench import Benchmark, Row, Value, pub

# fmt: off
BENCHMARK = Benchmark(script="queryopt_tpcds.py", quick=dict(scale=0.01, queries="3,7", cap_s=5), rows=(
    Row("queryopt", "TPC-DS SF 1, PostgreSQL 15, 99 queries, 300 s cap",
        "total time speed-up, rewrites chosen by measured runtime, 0 at the cap, 0 wrong",
        "queryopt_tpcds_cap300.json", Value(("summary", "measured", "total_speedup")),
        pub("target: >= 3x against PostgreSQL's own plans", 3.0),
        "rlsuite bench run queryopt_tpcds --scale 1 --cap-s 300 --measure-above-s 0.5 --answers "
        "--pair-candidates --out-name queryopt_tpcds_cap300",
        "-", fmt="{:.1f}x"),
))
# fmt: on
