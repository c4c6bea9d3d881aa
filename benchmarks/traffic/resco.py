"""RESCO's eight maps under RESCO's protocol: the signal baselines on SUMO 1.28 (ours) and on SUMO
1.9.2 (RESCO's), each episode in its own SUMO process (TraCI), beside RESCO's published average
delay."""

from rlsuite.bench import Benchmark, Row, Value, pub

# fmt: off
BENCHMARK = Benchmark(script="traffic_resco.py", quick=dict(maps="cologne1", sumo="1.28", seeds=1, check_seeds=1), rows=(
    Row("traffic", "signals, RESCO cologne8 (8 lights), fixed-time on SUMO 1.9.2",
        "average delay, s/veh (RESCO's metric and protocol, 10 held-out seeds)", "traffic_resco.json",
        Value(("protocol_check", "cologne8", "ours")),
        pub("RESCO v1.0 Fixed, Ault & Sharon 2021", 63.77),
        "rlsuite bench run traffic_resco --install-sumo --sumo 1.9.2,1.28 --seeds 2", "- (baseline)",
        lower_is_better=True),
))
# fmt: on
