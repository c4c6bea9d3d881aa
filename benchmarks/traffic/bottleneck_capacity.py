"""Flow's bottleneck0 without control: the inflow-outflow curve per SUMO version and road setting."""

from rlsuite.bench import Benchmark, Row, Value, pub

FLOW_T1 = "Vinitsky et al. 2018, Table 1"
ROADS = {
    "breakdown": "the breaking road (`capacity_drop=true`, the default)",
    "free": "the free-flowing road (`capacity_drop=false`)",
}
"""The road settings with a RESULTS row, and their words there."""


def all_human(setting: str) -> Row:
    """The all-human row of a road setting: the outflow at 1900 veh/h on SUMO 1.28."""
    return Row(
        "traffic", f"bottleneck 0, all-human, {ROADS[setting]}, SUMO 1.28",
        "outflow at 1900 veh/h inflow, veh/h (last 500 s, 10 seeds)", "traffic_bottleneck_capacity.json",
        Value(("points", setting, "1.28", "1900", "outflow_veh_h")),
        pub(f"Flow's all-human road, {FLOW_T1}", 1023),
        f"rlsuite bench run traffic_bottleneck_capacity --versions 1.28 --setting {setting}",
        "- (baseline)", fmt="{:,.0f}",
    )  # fmt: skip


BENCHMARK = Benchmark(
    script="traffic_bottleneck_capacity.py",
    quick=dict(versions="1.28", inflows="1900", episodes=1),
    rows=tuple(all_human(s) for s in ROADS),
)
