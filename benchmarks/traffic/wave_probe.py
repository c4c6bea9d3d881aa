"""Can a hand-written AV dissolve a stop-and-go wave that has already formed?"""

from rlsuite.bench import Benchmark

BENCHMARK = Benchmark(script="traffic_wave_probe.py", quick=dict(episodes=1))
