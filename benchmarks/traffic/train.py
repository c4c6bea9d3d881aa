"""Learn the ring AV with the platform's ``sync`` plan (PPO) or ``es`` plan on randomised ring
lengths.

Trains one policy on rings drawn per reset from [220, 270] m (Flow's protocol by default: even
start, 750 human-driven warm-up steps, 3000 controlled steps) and every ``--chunk`` iterations
evaluates the latest checkpoint at 230 m (``--select all``: at every length), keeping the best.
At the end the best checkpoint runs at 220, 230, 260 and 270 m under three protocols beside
all-human and PI on the same seeds: ``flow-env`` (Flow's), ``from-start`` (the AV drives from
t = 0 on a ring bunched by 20 m, the last 300 s measured) and ``formed-wave`` (bunched, so a
wave forms in the warm-up). ``--demonstrations N`` warm-starts PPO from N recorded PI episodes
and reports that clone, before any RL. Pass, against the ring's own uniform-flow speed
(:func:`rlsuite.apps.traffic.envs.ring.equilibrium_speed`): >= 95% at 230 m within 1 h; >= 95%
at every length with the best checkpoint; no length below the PI-warm-started policy
(from-start, its RESULTS row).
"""

from rlsuite.apps.traffic.ring_training import RingTrainSettings, train_and_score
from rlsuite.bench import Benchmark, Row, Value, pub

# fmt: off
BENCHMARK = Benchmark(run=train_and_score, settings=RingTrainSettings, quick=dict(minutes=0.2, chunk=1, eval_episodes=1, eval_horizon=100, train_horizon=100, rings=2, warmup=0), resume=True, rows=(
    Row("traffic", "ring 230 m, PPO warm-started from PI", "mean speed, m/s (from t = 0, 2 seeds)",
        "traffic_train.json", Value(("final", {"ring_length": 230}, "best_mean_speed")),
        pub("Flow's optimum v_eq at 230 m, `v_eq_max_function`", 3.71),
        "rlsuite bench run traffic_train --minutes 24 --memory-s 38 --warmup 0 --train-horizon 3750 --protocol from-start "
        "--demonstrations 32 --plan-set demo_epochs=50 --plan-set lr=5e-5 --accel-penalty 0.25 --bunching 20",
        "run dir (not shipped)"),
))
# fmt: on
