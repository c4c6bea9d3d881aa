"""Learn one shared AV policy for the multi-AV ring and compare it with PI on every AV."""

from rlsuite.bench import Benchmark, Row, Value, here

# fmt: off
BENCHMARK = Benchmark(script="traffic_ring_multi.py", quick=dict(minutes=0.2, chunk=1, episodes=1), rows=(
    Row("traffic", "multi-AV ring, 3 AVs at 230 m", "mean speed, m/s", "traffic_ring_multi.json",
        Value(("rows", {"avs": 3, "ring_length": 230}, "learned")),
        here("PI on every AV", "rows", {"avs": 3, "ring_length": 230}, "pi"),
        "rlsuite bench run traffic_ring_multi --avs 3 --plan es --minutes 40 --chunk 4 --workers 1 --plan-set lr=0.003 "
        "--plan-set sigma=0.03 --plan-set recurrent='\"gru\"' --plan-set cell_size=16 --plan-set episodes_per_eval=2 "
        "--plan-set common_env_seeds=true --env-set warmup_steps=0 --env-set bunching=20 --env-set horizon=3750 "
        "--env-set accel_penalty=0.25", "`ring_multi_es_gru`"),
))
# fmt: on
