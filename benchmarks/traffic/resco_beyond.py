"""Beyond RESCO's protocol: signal controllers under other demand than the one they were tuned or
trained on."""

from rlsuite.bench import Benchmark

BENCHMARK = Benchmark(
    script="traffic_resco_beyond.py",
    quick=dict(
        part="scales", scales="1.0", controllers="fixed", seeds=1, num_seconds=300, sumo="1.28"
    ),
    resume=True,
)
