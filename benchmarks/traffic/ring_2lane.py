"""The two-lane ring (Kheterpal et al. 2018, "Flow: Deep RL for Control in SUMO"): baselines and a
learned AV that accelerates and changes lanes, on the same seeded episodes."""

from rlsuite.bench import Benchmark, Row, Value, pub

LEARNED = {"controller": "learned"}

# fmt: off
BENCHMARK = Benchmark(script="traffic_ring_2lane.py", quick=dict(episodes=1), rows=(
    Row("traffic", "two-lane ring (1 AV, lane changes)", "mean speed / all-human", "traffic_ring_2lane.json",
        Value(("rows", LEARNED, "mean_speed"), over=("rows", {"controller": "human"}, "mean_speed")),
        pub("Kheterpal et al. 2018: 3.11 / 2.83 m/s", 3.11 / 2.83),
        "rlsuite bench run traffic_ring_2lane", "`ring_2lane_es`"),
))
# fmt: on
