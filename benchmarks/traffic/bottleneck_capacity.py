"""Flow's bottleneck0 without control: the inflow-outflow curve per SUMO version and road setting."""

from rlsuite.bench import Benchmark, Row, Value, pub

FLOW_T1 = "Vinitsky et al. 2018, Table 1"

# fmt: off
BENCHMARK = Benchmark(script="traffic_bottleneck_capacity.py", quick=dict(versions="1.28", inflows="1900", episodes=1), rows=(
    Row("traffic", "bottleneck 0, all-human, the breaking road (`capacity_drop=true`, the default), SUMO 1.28",
        "outflow at 1900 veh/h inflow, veh/h (last 500 s, 10 seeds)", "traffic_bottleneck_capacity.json",
        Value(("points", "breakdown", "1.28", "1900", "outflow_veh_h")),
        pub(f"Flow's all-human road, {FLOW_T1}", 1023),
        "rlsuite bench run traffic_bottleneck_capacity --versions 1.28 --setting breakdown", "- (baseline)",
        fmt="{:,.0f}"),
    Row("traffic", "bottleneck 0, all-human, the free-flowing road (`capacity_drop=false`), SUMO 1.28",
        "outflow at 1900 veh/h inflow, veh/h (last 500 s, 10 seeds)", "traffic_bottleneck_capacity.json",
        Value(("points", "free", "1.28", "1900", "outflow_veh_h")),
        pub(f"Flow's all-human road, {FLOW_T1}", 1023),
        "rlsuite bench run traffic_bottleneck_capacity --versions 1.28 --setting free", "- (baseline)",
        fmt="{:,.0f}"),
))
# fmt: on
