"""Learn the traffic lights of a sumo-rl grid with ONE shared policy (RLlib multi-agent through the
platform's ``sync`` plan = PPO), then compare it with fixed-time, SUMO-actuated and max-pressure
control on the same demand."""

from rlsuite.bench import Benchmark, Row, Value, here

LEARNED = {"controller": "learned"}

# fmt: off
BENCHMARK = Benchmark(script="traffic_signals.py", quick=dict(minutes=0.2, chunk=1, num_seconds=300), rows=(
    Row("traffic", "signals, sumo-rl 2x2 grid", "mean waiting time, s", "traffic_signals.json",
        Value(("rows", LEARNED, "mean_waiting_time")),
        here("max-pressure", "rows", {"controller": "maxpressure"}, "mean_waiting_time"),
        "rlsuite bench run traffic_signals --minutes 10", "run dir (not shipped)", lower_is_better=True),
))
# fmt: on
