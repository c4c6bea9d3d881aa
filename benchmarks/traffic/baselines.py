"""Ring baselines at 220, 230, 260 and 270 m: uncontrolled (all-human IDM), FollowerStopper, PI."""

from rlsuite.bench import Benchmark

BENCHMARK = Benchmark(script="traffic_baselines.py", quick=dict(episodes=1))
