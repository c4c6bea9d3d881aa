"""The cells of ``rlsuite bench run platform_apex``: one seed of ``apex`` to its target with
RLlib's ``cartpole-apex.yaml`` settings, one plan's throughput at a runner count, and the
learning summary over the seeds."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any


def learning_plan(seed: int):
    """RLlib's ``cartpole-apex.yaml``: 3 runners, 2 replay shards, a 20k buffer, replay ratio 4."""
    from rlsuite.platform.optimizers import make_plan

    return make_plan(
        "apex", env="CartPole-v1", num_env_runners=3, num_envs_per_env_runner=1,
        num_replay_shards=2, buffer_size=20_000, target_update_freq=500, training_intensity=4.0,
        seed=seed,
    )  # fmt: skip


def learn(seed: int, s: Any, say: Callable[[str], None]) -> dict:
    """One seed of ``learning_plan`` until ``s.target``, ``s.max_env_steps`` or ``s.max_wall_s``."""
    from rlsuite.platform.backends.rllib import RLlibBackend
    from rlsuite.platform.benchmarking.to_target import train_to_target

    curve = []

    def point(steps: int, wall: float, row: dict) -> None:
        ret = row["episode_return_mean"]
        curve.append(
            dict(
                env_steps=steps,
                wall_s=round(wall, 1),
                episode_return_mean=ret,
                updates_per_s=row.get("updates_per_s"),
                learner_utilisation=row.get("learner_utilisation"),
            )
        )
        say(f"seed {seed}: {steps:>7} steps {wall:6.0f} s  return {ret:6.1f}")

    run = train_to_target(
        RLlibBackend(learning_plan(seed)), s.target, s.max_env_steps, s.max_wall_s, point
    )
    return dict(reached=run.reached is not None, **(run.reached or {}), curve=curve)


def measure(plan_name: str, runners: int, measure_s: float) -> dict:
    """Env steps/s and updates/s of ``plan_name`` on CartPole-v1 over ``measure_s`` seconds,
    after warm-up until its learner has started."""
    from ray.rllib.utils.metrics import (
        ALL_MODULES,
        LEARNER_RESULTS,
        NUM_ENV_STEPS_TRAINED_LIFETIME,
    )

    from rlsuite.platform.backends.rllib import RLlibBackend
    from rlsuite.platform.optimizers import make_plan

    plan = make_plan(plan_name, env="CartPole-v1", num_env_runners=runners, seed=0)
    backend = RLlibBackend(plan)

    def trained() -> float:
        key = (LEARNER_RESULTS, ALL_MODULES, NUM_ENV_STEPS_TRAINED_LIFETIME)
        return float(backend.algo.metrics.peek(key, default=0))

    try:
        while trained() == 0:  # warm up until the learner has started
            backend.train()
        rows, t0, done0 = [], time.perf_counter(), trained()
        while time.perf_counter() - t0 < measure_s:
            rows.append(backend.train())
        wall = time.perf_counter() - t0
        updates = (trained() - done0) / plan.train_batch_size
        busy = [r["learner_utilisation"] for r in rows if "learner_utilisation" in r]
        return dict(
            samples_per_s=sum(r["env_steps_this_iter"] for r in rows) / wall,
            updates_per_s=updates / wall,
            learner_utilisation=statistics.mean(busy) if busy else None,
            weight_staleness=statistics.mean(r["weight_staleness"] for r in rows) if busy else None,
            wall_s=round(wall, 1),
            iterations=len(rows),
        )
    finally:
        backend.stop()


def learning_summary(out: dict, s: Any) -> dict:
    """The seeds' cells and their summary: how many reached, the medians of those that did."""
    done = [v for v in out.values() if v["reached"]]
    return dict(
        seeds=out,
        summary=dict(
            seeds=len(out),
            reached=len(done),
            all_reached=len(done) == len(out),
            median_env_steps_to_target=statistics.median(v["env_steps"] for v in done)
            if done
            else None,
            median_wall_s_to_target=statistics.median(v["wall_s"] for v in done) if done else None,
            target=s.target,
            max_env_steps=s.max_env_steps,
            cpus=os.cpu_count(),
        ),
    )
