"""The platform's scale-out on a 16-core GPU machine: sampling at 1-15 runners against plain
processes, the GPU learner, and the es plan at 1-15 workers."""

from rlsuite.bench import Benchmark, Row, Value, here, pub

# fmt: off
BENCHMARK = Benchmark(script="platform_device.sh", quick=("all", "60", "60", "30"), device=True, rows=(
    Row("platform", "sampling at 15 runners, Pendulum-v1 (H100 machine, 16 cores)",
        "env steps/s per runner, 32 envs each", "device/platform_scaling_async_device.json",
        Value(("envs", "Pendulum-v1", "scaling", "runners", "15", "per_runner")),
        pub("target: >= 12k per runner", 12000),
        "OUT=DIR rlsuite bench run platform_device sampling", fmt="{:,.0f}"),
    Row("platform", "sampling at 15 runners, Pendulum-v1 (H100 machine, 16 cores)",
        "efficiency against 1 runner", "device/platform_scaling_async_device.json",
        Value(("envs", "Pendulum-v1", "scaling", "runners", "15", "efficiency_vs_1")),
        here("plain processes, no Ray, same machine", "envs", "Pendulum-v1", "ceiling",
              "processes", "15", "efficiency_vs_1", file="device/platform_scaling_device.json"),
        "OUT=DIR rlsuite bench run platform_device sampling", fmt="{:.0%}"),
))
# fmt: on
