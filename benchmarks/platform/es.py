"""Benchmark of the ``es`` plan: scaling, a simulated cluster, time to solve."""

from rlsuite.bench import Benchmark, Row, Value, here, pub

# fmt: off
BENCHMARK = Benchmark(script="platform_es.py", quick=dict(part="scaling", generations=2, workers="1,2"), rows=(
    Row("platform", "`es` plan, Pendulum-v1", "seconds to return >= -200", "platform_es.json",
        Value(("solve", "es", "time_to_solve_s")),
        here("`sync` PPO, same run", "solve", "sync", "time_to_solve_s"),
        "rlsuite bench run platform_es --part solve --budget 600 --ppo-budget 600", fmt="{:.0f} s", lower_is_better=True),
    Row("platform", "`es` plan, 1 -> 2 workers", "speed-up, population 64", "platform_es_scaling_2cpu.json",
        Value(("scaling", "speedup")), pub("linear, Salimans et al. 2017", 2.0),
        "rlsuite bench run platform_es --part scaling --workers 1,2,4,8,15 --out benchmarks/results/platform/platform_es_scaling_2cpu.json",
        fmt="{:.2f}x"),
))
# fmt: on
