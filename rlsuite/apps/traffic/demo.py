"""`make demo` for the traffic app: the Sugiyama ring's wave, two baselines, and PPO warm-started from PI.

Runs on the embedded Ray that ``rlsuite.demo`` started (or starts one). About a
minute and a half on a 2-core machine.
"""

from __future__ import annotations

import os
import shutil
import time

from rlsuite.apps.traffic.envs.ring import FLOW_V_EQ, equilibrium_speed

ENV_ID = "rlsuite/Ring-v0"
LENGTH = 230
# Baselines act from the start, on a ring bunched by 20 m (as in Flow's non-RL ring
# example); measured over the last 300 s.
BASELINE_CFG = dict(
    ring_length=LENGTH, warmup_steps=0, horizon=3750, measure_after=750, bunching=20.0
)
TRAIN_ITERATIONS = 2
RUN_DIR = os.path.join("runs", "demo", "traffic-ring")


def run() -> list[dict]:
    from rich.console import Console

    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import evaluation

    console = Console()
    scen = scenarios.get("ring")
    rows: list[dict] = []
    ref = f"Flow v_eq {FLOW_V_EQ[LENGTH]} m/s, uniform flow {equilibrium_speed(LENGTH):.2f} m/s"
    for name in ("idm", "pi"):
        console.print(f"[bold]ring {LENGTH} m[/]: evaluating {name} on 2 seeded episodes")
        res = evaluation.evaluate(
            scenarios.controller_for(scen, name)[0],
            evaluation.scenarios(ENV_ID, 2, BASELINE_CFG, name=f"ring-{LENGTH}m"),
            progress=True,
            name=name,
        )
        console.print(res.table(metrics=["mean_speed", "speed_std", "frac_below_0_5"]))
        label = "all-human (IDM)" if name == "idm" else "PI with saturation"
        for metric in ("mean_speed", "frac_below_0_5"):
            rows.append(
                dict(app="traffic", task=f"ring {LENGTH} m", controller=label, metric=metric,
                     value=res.summary[metric]["mean"],
                     reference=ref if metric == "mean_speed" else "seed: ~half stopped uncontrolled")
            )  # fmt: skip
    rows.extend(_train_row(console))
    return rows


def _train_row(console) -> list[dict]:
    """PPO warm-started from recorded PI episodes (as benchmarks/traffic_train.py
    --demonstrations does), two iterations, then evaluated like the baselines."""
    try:
        from rlsuite.apps.traffic.controllers import PISaturation
        from rlsuite.platform import demonstrations, envs, evaluation, optimizers, training
    except ImportError as e:  # the platform's training is not there yet
        console.print(f"[yellow]traffic: training skipped ({e})[/]")
        return []
    cfg = {**BASELINE_CFG, "memory_s": 38.0}
    envs.rllib_env(ENV_ID)
    t0 = time.time()
    demos = os.path.join(RUN_DIR, "demonstrations.parquet")
    shutil.rmtree(RUN_DIR, ignore_errors=True)  # the demo's own scratch run: start fresh
    console.print(f"[bold]ring {LENGTH} m[/]: recording 4 PI episodes to warm-start PPO")
    demonstrations.record_episodes(PISaturation(), ENV_ID, 4, demos, cfg, seed=10_000)
    plan = optimizers.make_plan(
        "sync", env=ENV_ID, env_config=cfg, num_env_runners=2, seed=0,
        num_envs_per_env_runner=2, normalize_actions=False, vf_clip_param=1e6,
        train_batch_size=15_000, minibatch_size=3750, num_epochs=2, lr=5e-5,
        demonstrations=demos, demo_epochs=60,
    )  # fmt: skip
    res = training.train(plan, iterations=TRAIN_ITERATIONS, run_dir=RUN_DIR, resume=False,
                         progress=True)  # fmt: skip
    ev = evaluation.evaluate(
        res.checkpoint, evaluation.scenarios(ENV_ID, 2, cfg, name=f"ring-{LENGTH}m"), name="ppo"
    )
    console.print(ev.table(metrics=["mean_speed", "speed_std", "frac_below_0_5"]))
    return [
        dict(app="traffic", task=f"ring {LENGTH} m",
             controller=f"PPO from PI demos, {res.iterations} it, {time.time() - t0:.0f} s",
             metric="mean_speed", value=ev.summary["mean_speed"]["mean"],
             reference=f"uniform flow {equilibrium_speed(LENGTH):.2f} m/s; "
             "benchmarks/traffic_train.py trains it fully")
    ]  # fmt: skip


if __name__ == "__main__":
    from rlsuite.platform import cluster

    with cluster.local_cluster():
        for r in run():
            print(r)
