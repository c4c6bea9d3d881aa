"""pg_qopt's cold start: the first 50-execution windows of a fresh ``serve --learn`` from no model,
over several fresh servers."""

from rlsuite.bench import Benchmark

BENCHMARK = Benchmark(script="queryopt_online_coldstart.py", quick=dict(reps=1, n=20))
