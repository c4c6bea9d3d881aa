"""Flow's merge 0/1/2: a learned AV policy against all-human and the hand-written AV rules."""

from rlsuite.bench import Benchmark, Row, Value, pub

FLOW_T1 = "Vinitsky et al. 2018, Table 1"

# fmt: off
BENCHMARK = Benchmark(script="traffic_merge.py", quick=dict(episodes=1), rows=(
    Row("traffic", "merge 0 (10% AVs)", "mean speed, m/s", "traffic_merge.json",
        Value(("variants", "0", "rows", "learned", "mean_speed")), pub(f"Flow TRPO, {FLOW_T1}", 14.95),
        "rlsuite bench run traffic_merge", "`merge_es`"),
    Row("traffic", "merge 1 (25% AVs)", "mean speed, m/s", "traffic_merge.json",
        Value(("variants", "1", "rows", "learned", "mean_speed")), pub(f"Flow ES, {FLOW_T1}", 17.29),
        "rlsuite bench run traffic_merge", "`merge1_es`"),
    Row("traffic", "merge 2 (33% AVs)", "mean speed, m/s", "traffic_merge.json",
        Value(("variants", "2", "rows", "learned", "mean_speed")), pub(f"Flow ES, {FLOW_T1}", 17.36),
        "rlsuite bench run traffic_merge", "`merge2_es`"),
))
# fmt: on
