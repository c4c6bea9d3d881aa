"""Learn Flow's figure-eight benchmarks 0, 1 and 2 from scratch and compare with all-human."""

from rlsuite.bench import Benchmark, Row, Value, pub

FLOW_T1 = "Vinitsky et al. 2018, Table 1"
LEARNED = {"controller": "learned"}

# fmt: off
BENCHMARK = Benchmark(script="traffic_figure_eight.py", quick=dict(variant=0, minutes=0.2, chunk=1, episodes=1), rows=(
    Row("traffic", "figure-eight 1 (7 AVs)", "mean speed, m/s", "traffic_figure_eight_1.json",
        Value(("rows", LEARNED, "mean_speed")), pub(f"Flow ARS, {FLOW_T1}", 6.43),
        "rlsuite bench run traffic_figure_eight --variant 1 --plan es --minutes 10 --chunk 5 --plan-set lr=0.01 "
        "--plan-set sigma=0.03", "`figure_eight_1_es`"),
))
# fmt: on
