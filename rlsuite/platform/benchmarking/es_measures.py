"""The ``es`` plan's measurements on Pendulum-v1 (every episode 200 steps, so every
generation the same work): throughput against the worker count, and the time to solve it
beside the ``sync`` plan.

``scaling``: seconds per generation and env steps/s with n workers, population 64 fixed
(strong; the criterion: 2 workers >= 1.8x one) and ``pairs_per_worker`` antithetic pairs per
worker (weak, the way Salimans et al. scaled), after one warm-up generation each.
``solve``: ES until its central policy's return is >= -200 (the in-training check,
confirmed on 20 fresh seeded episodes), then the ``sync`` plan (PPO, RLlib's tuned
Pendulum settings) on the same env, each within a wall budget; RLlib's own Pendulum target
(-300) is reported too.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

# fmt: off
SCALING_PLAN = dict(env="Pendulum-v1", population_size=64, hidden=(64, 64), sigma=0.05, lr=0.02,
                    eval_episodes=0, seed=0)
SOLVE_PLANS = (  # tried in order until one solves, each with an equal share of the budget
    dict(population_size=64, hidden=(32, 32), sigma=0.1, lr=0.03),
    dict(population_size=128, hidden=(16, 16), sigma=0.05, lr=0.02),
)
SOLVE_COMMON = dict(env="Pendulum-v1", eval_episodes=4, seed=0, num_workers=2)
PPO_PLAN = dict(env="Pendulum-v1", num_env_runners=1, num_envs_per_env_runner=10, lr=3e-4,
                lambda_=0.1, vf_clip_param=10.0, num_epochs=6, minibatch_size=128,
                train_batch_size=4000, hidden=(256, 256), activation="relu", seed=0)
# fmt: on
SOLVE_AT, RLLIB_TARGET = -200.0, -300.0


def _measure(plan: Any, generations: int) -> dict[str, Any]:
    """Seconds per generation and env steps/s of ``plan``, after one warm-up generation."""
    from rlsuite.platform.es import ESTrainer

    trainer = ESTrainer(plan)
    try:
        rows = [trainer.train() for _ in range(generations + 1)][1:]
    finally:
        trainer.stop()
    wall = sum(r["time_s"] for r in rows)
    steps = sum(r["env_steps_this_iter"] for r in rows)
    return {
        "num_workers": plan.num_workers,
        "population_size": plan.population_size,
        "s_per_generation": wall / len(rows),
        "env_steps_per_s": steps / wall,
        "env_steps_per_generation": steps / len(rows),
    }


def scaling(
    generations: int,
    workers: list[int],
    num_cpus: int,
    pairs_per_worker: int,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Strong and weak scaling for each worker count Ray's CPUs allow (1 CPU per worker)."""
    from rlsuite.platform import cluster
    from rlsuite.platform.es import ESPlan

    out: dict[str, Any] = {
        "plan": ESPlan(**SCALING_PLAN).to_dict(),
        "generations": generations,
        "num_cpus": num_cpus,
        "pairs_per_worker_weak": pairs_per_worker,
        "runs": {},
        "weak": {},
        "skipped": {},
    }
    with cluster.local_cluster(num_cpus=num_cpus):
        for n in workers:
            if n > num_cpus:
                out["skipped"][str(n)] = f"needs {n} CPUs (1 per worker), Ray has {num_cpus}"
                continue
            for key, pop in (("runs", 64), ("weak", 2 * pairs_per_worker * n)):
                plan = ESPlan(**{**SCALING_PLAN, "population_size": pop}, num_workers=n)
                r = out[key][str(n)] = _measure(plan, generations)
                say(
                    f"{n} worker(s), population {pop}: {r['s_per_generation']:.3f} s/generation, "
                    f"{r['env_steps_per_s']:,.0f} env steps/s"
                )
    for runs in (out["runs"], out["weak"]):
        for n, r in runs.items():
            if "1" in runs:
                r["efficiency_vs_1"] = r["env_steps_per_s"] / (
                    int(n) * runs["1"]["env_steps_per_s"]
                )
    out["criterion"] = "env steps/s with 2 workers >= 1.8x 1 worker (population 64 fixed)"
    if "1" in out["runs"] and "2" in out["runs"]:
        out["speedup"] = out["runs"]["2"]["env_steps_per_s"] / out["runs"]["1"]["env_steps_per_s"]
    out["passed"] = out.get("speedup", 0.0) >= 1.8
    return out


def _first(rows: list[dict], key: str, threshold: float) -> dict | None:
    return next(
        (r for r in rows if not math.isnan(r.get(key, math.nan)) and r[key] >= threshold), None
    )


def _confirm(controller: Any, episodes: int = 20) -> float:
    from rlsuite.platform.evaluation import evaluate, scenarios

    seeds = range(10_000, 10_000 + episodes)
    return evaluate(controller, scenarios("Pendulum-v1", seeds), num_workers=0).summary["return"][
        "mean"
    ]


def _es_solve(plan: Any, budget_s: float, say: Callable[[str], None]) -> dict[str, Any]:
    from rlsuite.platform.es import ESTrainer

    trainer = ESTrainer(plan)
    rows: list[dict] = []
    confirmed, t0 = None, time.perf_counter()
    try:
        while time.perf_counter() - t0 < budget_s:
            m = trainer.train()
            m["wall_s"] = time.perf_counter() - t0
            rows.append(m)
            if m["generation"] % 10 == 0:
                say(
                    f"es {plan.hidden}: generation {m['generation']}, "
                    f"eval {m['eval_return_mean']:.0f}"
                )
            if m["eval_return_mean"] >= SOLVE_AT:
                m["confirm_return_mean"] = _confirm(trainer.controller())
                if m["confirm_return_mean"] >= SOLVE_AT:
                    confirmed = m
                    break
    finally:
        trainer.stop()
    keys = ("generation", "wall_s", "env_steps", "eval_return_mean", "episode_return_mean")
    return _solved(rows, keys, confirmed, "eval_return_mean", budget_s) | {
        "plan": plan.to_dict(),
        "confirm_return_mean": confirmed["confirm_return_mean"] if confirmed else None,
        "best_eval_return": max((r["eval_return_mean"] for r in rows), default=math.nan),
    }


def _solved(
    rows: list[dict], keys: tuple[str, ...], hit: dict | None, metric: str, budget_s: float
) -> dict[str, Any]:
    rllib = _first(rows, metric, RLLIB_TARGET) or {}
    return {
        "curve": [{k: r.get(k) for k in keys} for r in rows],
        "solved": hit is not None,
        "time_to_solve_s": hit["wall_s"] if hit else None,
        "env_steps_to_solve": hit["env_steps"] if hit else None,
        "time_to_rllib_target_s": rllib.get("wall_s"),
        "budget_s": budget_s,
    }


class _Budget(Exception):
    pass


def _ppo(budget_s: float) -> dict[str, Any]:
    from rlsuite.platform.checkpoints import latest_checkpoint
    from rlsuite.platform.metrics import JSONL, read_jsonl
    from rlsuite.platform.optimizers import make_plan
    from rlsuite.platform.training import train

    plan = make_plan("sync", **PPO_PLAN)
    run_dir = tempfile.mkdtemp(prefix="es-bench-ppo-")
    t0 = time.perf_counter()

    def stop_on_budget(it: int, row: dict) -> None:
        if time.perf_counter() - t0 > budget_s:
            raise _Budget

    try:
        train(
            plan,
            iterations=10_000,
            run_dir=run_dir,
            progress=True,
            checkpoint_every=10,
            stop_return=SOLVE_AT,
            callback=stop_on_budget,
        )
    except _Budget:
        pass
    rows = list(read_jsonl(os.path.join(run_dir, JSONL)))
    ckpt = latest_checkpoint(run_dir)
    keys = ("iteration", "wall_s", "env_steps", "episode_return_mean")
    hit = _first(rows, "episode_return_mean", SOLVE_AT)
    return _solved(rows, keys, hit, "episode_return_mean", budget_s) | {
        "plan": plan.to_dict(),
        "final_checkpoint_return_mean": _confirm(ckpt) if ckpt else math.nan,
        "note": "return = the stochastic policy's training episodes (RLlib's episode_return_mean); "
        "final_checkpoint_return_mean: the deterministic policy on 20 seeded episodes",
    }


def solve(
    budget_s: float, ppo_budget_s: float, say: Callable[[str], None] = print
) -> dict[str, Any]:
    """ES (:data:`SOLVE_PLANS` in turn) and then PPO on Pendulum-v1 to -200, on 2 CPUs."""
    from rlsuite.platform import cluster
    from rlsuite.platform.es import ESPlan

    out: dict[str, Any] = {"threshold": SOLVE_AT, "rllib_target": RLLIB_TARGET, "es_attempts": []}
    with cluster.local_cluster(num_cpus=2):
        for cfg in SOLVE_PLANS:
            es = _es_solve(ESPlan(**SOLVE_COMMON, **cfg), budget_s / len(SOLVE_PLANS), say)
            out["es_attempts"].append(es)
            if es["solved"]:
                break
        out["es"] = es
        out["sync"] = _ppo(ppo_budget_s)
    out["criterion"] = f"es central policy >= {SOLVE_AT} on Pendulum-v1 (20 seeded episodes)"
    out["passed"] = bool(out["es"]["solved"])
    return out
