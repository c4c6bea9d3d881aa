"""TPC-DS on PostgreSQL: repeated, alternating runs of the runtime chooser's wins."""

from rlsuite.bench import Benchmark, Row, Value, pub

# fmt: off
BENCHMARK = Benchmark(script="queryopt_tpcds_repeat.py", quick=dict(scale=0.01, repeat=1, warmup=0, queries="3"), resume=True, rows=(
    Row("queryopt", "TPC-DS SF 1, PostgreSQL 15, the runtime chooser's wins, 3 alternating runs each",
        "queries >= 2x faster under the medians (Q4, Q11: single runs), 300 s cap, 0 wrong",
        "queryopt_tpcds_cap300_repeat.json", Value(("summary", "workload_at_least_2x")),
        pub("target: >= 20 of the 99", 20),
        "rlsuite bench run queryopt_tpcds_repeat --scale 1 --repeat 3 --from queryopt_tpcds_cap300 "
        "--out-name queryopt_tpcds_cap300_repeat --queries 27,10,16,60,29,87,38,39,54,78,17,25,31,30,"
        "14,95,81,6,74,1,7,21",
        "-", fmt="{:.0f}"),
))
# fmt: on
