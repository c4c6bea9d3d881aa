"""TPC-DS on PostgreSQL: does the learned rewriter generalise to templates it never saw?"""

from rlsuite.bench import Benchmark, Row, Value, pub

# fmt: off
BENCHMARK = Benchmark(script="queryopt_tpcds_learn.py", quick=dict(scale=0.01, queries="3,7,42,52", depth=1, beam=1, iterations=1, steps_per_iteration=50, splits="odd", originals="queryopt_tpcds", min_s=0.0), resume=True, rows=(
    *[
        Row("queryopt", f"TPC-DS SF 1, PostgreSQL 15, DQN on held-out templates (trained on {split}, {held})",
            "share of the oracle's total-time gain, 30 s cap, 0 wrong",
            "queryopt_tpcds_learn.json", Value(("splits", split, "summary", "dqn_over_oracle")),
            pub("target: >= 80% of the oracle's gain", 0.8),
            "rlsuite bench run queryopt_tpcds_learn --depth 3 --beam 1 --iterations 40 --log-reward --splits odd,even "
            "--resume --ship", f"`queryopt_tpcds_{split}_dqn`", fmt="{:.0%}")
        for split, held in (("odd", "17 even held out"), ("even", "22 odd held out"))
    ],
))
# fmt: on
