"""Signals sampling speed on RESCO's maps: the signals env and the platform's sampler against a raw
libsumo loop on the same network, per core."""

from rlsuite.bench import Benchmark, Row, Value, pub

# fmt: off
BENCHMARK = Benchmark(script="traffic_signals_speed.py", quick=dict(map="cologne1", episodes=1), rows=(
    Row("traffic", "signals sampler, RESCO cologne8 (8 lights), SUMO 1.28",
        "one env runner's simulated s per CPU s (the multi-agent runner training uses), share of a raw libsumo loop's on the same traffic (the runner's episodes replayed)",
        "traffic_signals_speed.json",
        Value(("multi_agent_runner_share_of_raw_replay",)), pub("target: 50% of the raw loop", 0.5),
        "rlsuite bench run traffic_signals_speed", fmt="{:.0%}"),
))
# fmt: on
