"""Baselines on the other traffic scenarios: the figure-eight and signalised intersections."""

from rlsuite.bench import Benchmark

BENCHMARK = Benchmark(script="traffic_scenarios.py", quick=dict(episodes=1, networks="single"))
