"""One policy shared by every light of several RESCO maps, trained on the maps in turn and scored
on each map alone. RESCO trained one model per map; this asks whether one policy serves six
cities."""

from rlsuite.bench import Benchmark

QUICK = dict(maps="cologne1,ingolstadt1", plan="sync", sumo="1.28", episodes=1, minutes=0.3)

BENCHMARK = Benchmark(
    script="traffic_resco_together.py", quick={**QUICK, "eval_seeds": 1, "no_baselines": True}
)
