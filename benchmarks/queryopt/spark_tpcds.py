"""TPC-DS on Spark SQL: Spark's own plans (Catalyst + AQE), a chooser by measured runtime over the
app's Spark rewrites, and PostgreSQL against Spark per query."""

from rlsuite.bench import Benchmark

BENCHMARK = Benchmark(
    script="queryopt_spark_tpcds.py",
    quick=dict(scale=0.01, queries="3,7", cap_s=5, no_answers=True),
)
