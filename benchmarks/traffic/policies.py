"""Rows read from evaluations of the shipped traffic policies by the app's own CLI
(``traffic-train evaluate ... --json``), not from a benchmark script."""

from rlsuite.bench import Row, Value, here, pub

FLOW_T1 = "Vinitsky et al. 2018, Table 1"
EVAL = "traffic-train evaluate --scenario"

# fmt: off
ROWS = (
        Row("traffic", "ring 230 m, GRU by ES from scratch", "mean speed, m/s (Flow's env protocol, 4 seeds)",
            "ring_es_gru_scratch_p025_4ep_230.json", Value(("summary", "mean_speed", "mean")),
            pub("Flow's optimum v_eq at 230 m, `v_eq_max_function`", 3.71),
            f"{EVAL} ring --controller benchmarks/policies/ring_es_gru_scratch_p025 --ring-length 230 "
            "--episodes 4 --workers 2", "`ring_es_gru_scratch_p025`"),
        Row("traffic", "ring 230 m, formed wave, GRU by ES", "mean speed, m/s (wave formed before control, 4 seeds)",
            "ring_es_gru_scratch_formed_wave_230.json", Value(("summary", "mean_speed", "mean")),
            here("PI, 1 seed", "protocols", "formed-wave", "PI", "230", file="traffic_ring_scratch_es_gru_fromstart.json"),
            f"{EVAL} ring --controller benchmarks/policies/ring_es_gru_scratch --ring-length 230 --episodes 4 "
            "--workers 0 --env-set bunching=20", "`ring_es_gru_scratch`"),
        Row("traffic", "figure-eight 0 (1 AV)", "mean speed, m/s", "traffic_figure_eight_0_learned.json",
            Value(("summary", "mean_speed", "mean")), pub(f"Flow TRPO, {FLOW_T1}", 8.26),
            f"{EVAL} figure_eight --controller benchmarks/policies/figure_eight_0_es --episodes 3 --seed 1000 "
            "--workers 0", "`figure_eight_0_es`"),
        Row("traffic", "figure-eight 2 (14 AVs)", "mean speed, m/s", "traffic_figure_eight_2_learned.json",
            Value(("summary", "mean_speed", "mean")), pub(f"Flow ES, {FLOW_T1}", 5.96),
            f"{EVAL} figure_eight_multi --avs 14 --controller benchmarks/policies/figure_eight_2_es --episodes 3 "
            "--seed 1000 --workers 0", "`figure_eight_2_es`"),
)
# fmt: on
