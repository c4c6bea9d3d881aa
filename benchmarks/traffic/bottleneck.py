"""Flow's bottleneck0: a learned AV speed-limit policy against all-human and a ramp meter,
on the breaking road (the env's default) and, beside it, the free-flowing road."""

from rlsuite.bench import Benchmark, Row, Value, pub

FLOW_T1 = "Vinitsky et al. 2018, Table 1"

# fmt: off
BENCHMARK = Benchmark(script="traffic_bottleneck.py", quick=dict(episodes=1, no_curve=True), rows=(
    Row("traffic", "bottleneck 0, the breaking road (`capacity_drop=true`, the default), ES from scratch",
        "outflow, veh/h (last 500 s, seeds 0-9)", "traffic_bottleneck_capacity_drop.json",
        Value(("rows", "learned", "outflow_veh_h")), pub(f"Flow ES, {FLOW_T1}", 1360),
        "rlsuite bench run traffic_bottleneck --road breaking --episodes 10", "`bottleneck_drop_es`",
        fmt="{:,.0f}"),
    Row("traffic", "bottleneck 0, the free-flowing road (`capacity_drop=false`, Flow's drivers)",
        "outflow, veh/h (last 500 s, 10 seeds)", "traffic_bottleneck.json",
        Value(("rows", "learned", "outflow_veh_h")), pub(f"Flow ES, {FLOW_T1}", 1360),
        "rlsuite bench run traffic_bottleneck --road free --episodes 10 --speed", "`bottleneck_es`",
        fmt="{:,.0f}"),
))
# fmt: on
