"""Learn the ring AV with the platform's ``sync`` plan (PPO) or ``es`` plan on randomised ring
lengths."""

from rlsuite.bench import Benchmark, Row, Value, pub

# fmt: off
BENCHMARK = Benchmark(script="traffic_train.py", quick=dict(minutes=0.2, chunk=1, eval_episodes=1), resume=True, rows=(
    Row("traffic", "ring 230 m, PPO warm-started from PI", "mean speed, m/s (from t = 0, 2 seeds)",
        "traffic_train.json", Value(("final", {"ring_length": 230}, "best_mean_speed")),
        pub("Flow's optimum v_eq at 230 m, `v_eq_max_function`", 3.71),
        "rlsuite bench run traffic_train --minutes 24 --memory-s 38 --warmup 0 --train-horizon 3750 --protocol from-start "
        "--demonstrations 32 --plan-set demo_epochs=50 --plan-set lr=5e-5 --accel-penalty 0.25 --bunching 20",
        "run dir (not shipped)"),
))
# fmt: on
