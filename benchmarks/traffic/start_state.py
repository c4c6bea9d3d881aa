"""What the ring's start state does to the task: Flow's even start against a bunched one."""

from rlsuite.bench import Benchmark

BENCHMARK = Benchmark(script="traffic_start_state.py", quick=dict(episodes=1))
