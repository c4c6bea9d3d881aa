"""Ring sampling speed: a raw libsumo loop, the env in-process, and RLlib env runners through the
platform; and the seed's rollout table: time to collect 144 ring trajectories with 1 and 2
workers."""

from rlsuite.bench import Benchmark

BENCHMARK = Benchmark(
    script="traffic_sampling.py",
    quick=dict(horizon=100, trajectories=4, raw_steps=1000, workers="1"),
)
