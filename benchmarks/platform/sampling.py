"""Sampling and iteration throughput of the platform against a plain loop and RLlib's defaults."""

from rlsuite.bench import Benchmark, Row, Value, here

# fmt: off
BENCHMARK = Benchmark(script="platform_sampling.py", quick=dict(quick=True, envs="CartPole-v1", sections="scaling"), rows=(
    Row("platform", "sampling, CartPole-v1", "env steps/s, 2 runners x 32 envs", "platform_sampling.json",
        Value(("envs", "CartPole-v1", "platform_default_steps_per_s")),
        here("RLlib 2.60 defaults", "envs", "CartPole-v1", "rllib_default_steps_per_s"),
        "rlsuite bench run platform_sampling --profile", fmt="{:,.0f}"),
    Row("platform", "sampling, Pendulum-v1", "env steps/s, 2 runners x 32 envs", "platform_sampling.json",
        Value(("envs", "Pendulum-v1", "platform_default_steps_per_s")),
        here("RLlib 2.60 defaults", "envs", "Pendulum-v1", "rllib_default_steps_per_s"),
        "rlsuite bench run platform_sampling --profile", fmt="{:,.0f}"),
    Row("platform", "`sync` PPO iterations, CartPole-v1", "env steps/s, median of 5 rounds, `overlap=true`",
        "platform_sampling_learner.json",
        Value(("envs", "CartPole-v1", "sync_iterations", "median_steps_per_s", "sync plan, overlap=true")),
        here("hand-written torch PPO, same run", "envs", "CartPole-v1", "sync_iterations",
              "median_steps_per_s", "hand-written PPO (1 process, 8 envs, 1 torch thread)"),
        "rlsuite bench run platform_sampling --envs CartPole-v1 --sections sync-iterations,overlap-learning "
        "--rounds 5 --seeds 0,1,2 --out benchmarks/results/platform/platform_sampling_learner.json", fmt="{:,.0f}"),
))
# fmt: on
