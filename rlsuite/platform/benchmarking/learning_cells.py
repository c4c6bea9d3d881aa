"""One cell of the learning table: one (task, impl, seed) trained to the row's threshold,
its budget, its iteration limit or a cap on wall seconds, in a process of its own::

    python -m rlsuite.platform.benchmarking.learning_cells TASK IMPL SEED [MAX_WALL_S [NUM_CPUS]]

prints the cell as one ``CELL {json}`` line (:func:`run_in_process` starts it and reads it).

``rllib`` trains RLlib's example as its file builds it (``config.build_algo()`` then
``algo.train()``, as the example's ``--no-tune``), unchanged except ``.debugging(seed=...)``
and ``num_gpus_per_learner=0``. The other impls are the platform's plan (``to_rllib``, its
learner, connectors and callbacks, one torch thread in the driver: ``cluster.init``), with
RLlib's smoothing window (100) so the stop metric means the same on both sides.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from typing import Any

from rlsuite.platform.benchmarking.learning_report import last_episodes_mean, reached_steps
from rlsuite.platform.benchmarking.learning_tasks import TASKS, Task

SMOOTHING = 100
HELD_OUT_SEEDS = 1_000_000_000
"""First env seed of the held-out evaluation episodes (training seeds its envs far below)."""


def our_plan(task: Task, impl: str, seed: int) -> Any:
    from rlsuite.platform.optimizers import make_plan

    return make_plan(task.plan, **{**task.ours, **task.variants.get(impl, {}), "seed": seed})


def run_cell(
    key: str, impl: str, seed: int, max_wall_s: float | None = None, num_cpus: int | None = None
) -> dict[str, Any]:
    """Train one (task, impl, seed) to the threshold (rows with ``run_to_budget``: past it),
    the budget, the row's iteration limit or ``max_wall_s``; Ray gets ``num_cpus`` logical
    CPUs (default: the row's)."""
    import ray

    task = TASKS[key]
    num_cpus = num_cpus or task.num_cpus
    t0 = time.perf_counter()
    if impl == "rllib":
        ray.init(num_cpus=num_cpus, include_dashboard=False, logging_level="ERROR")
        config = task.rllib_config().learners(num_gpus_per_learner=0).debugging(seed=seed)
        described: dict[str, Any] = {"example": task.source}
    else:
        from rlsuite.platform import cluster, resources
        from rlsuite.platform.optimizers import to_rllib

        cluster.init(num_cpus=num_cpus)
        plan = our_plan(task, impl, seed)
        config = to_rllib(plan, resources.resolve(plan, log=False))
        config = config.reporting(metrics_num_episodes_for_smoothing=SMOOTHING)
        described = {"plan": plan.to_dict()}
    algo = config.build_algo()
    build_s = time.perf_counter() - t0
    curve: list[list[float]] = []
    reached, best, stop = None, -math.inf, "iterations"
    try:
        for it in range(1, task.max_iterations + 1):
            r = algo.train()
            steps = (
                it * task.updates_per_iteration
                if task.updates_per_iteration is not None
                else int(_get(r, ("env_runners", "num_env_steps_sampled_lifetime"), 0))
            )
            ret = float(_get(r, task.metric, math.nan))
            wall = time.perf_counter() - t0
            curve.append(
                [steps, round(wall, 2), ret, int(_get(r, ("env_runners", "num_episodes"), 0))]
            )
            best = best if math.isnan(ret) else max(best, ret)
            if ret >= task.threshold and reached is None:
                reached = {"steps": steps, "iterations": it, "wall_s": round(wall, 2)}
                if not task.run_to_budget:
                    stop = "threshold"
                    break
            if steps >= task.budget_steps:
                stop = "budget"
                break
            if max_wall_s is not None and wall >= max_wall_s:
                stop = "max_wall_s"
                break
        if task.final_episodes:
            described[f"final_return_last_{task.final_episodes}"] = last_episodes_mean(
                curve, task.final_episodes
            )
        if task.eval_episodes and impl != "rllib":
            described.update(_held_out(task, plan, algo, len(curve), int(curve[-1][0])))
    finally:
        algo.stop()
        ray.shutdown()
    return {
        "task": key,
        "impl": impl,
        "seed": seed,
        "reached": reached,
        "best_return": best if best > -math.inf else None,
        "stopped_by": stop,
        "max_wall_s": max_wall_s,  # the cap on computing seconds (None: none)
        "steps": curve[-1][0] if curve else 0,
        "step_unit": task.step_unit,
        "wall_s": round(time.perf_counter() - t0, 2),
        "ray_num_cpus": num_cpus,
        "machine_cpus": os.cpu_count(),
        # the 1-min load average at the end: > 2 means other processes shared the 2 cores
        "loadavg_1min_at_end": round(os.getloadavg()[0], 2),
        "build_s": round(build_s, 2),
        "iterations": len(curve),
        "curve_columns": ["steps", "wall_s", "return", "episodes_ended"],
        "curve": curve,
        **described,
    }


def _held_out(task: Task, plan: Any, algo: Any, iteration: int, steps: int) -> dict[str, Any]:
    """The final policy, saved as a platform checkpoint and loaded as its controller
    (observation filter included), acting deterministically on held-out env seeds."""
    import tempfile

    from rlsuite.platform import evaluation
    from rlsuite.platform.backends.rllib import RLlibBackend
    from rlsuite.platform.checkpoints import load_controller
    from rlsuite.platform.checkpoints.layout import write_meta

    t = time.perf_counter()
    seeds = range(HELD_OUT_SEEDS, HELD_OUT_SEEDS + task.eval_episodes)
    with tempfile.TemporaryDirectory() as d:
        backend = RLlibBackend(plan, algo=algo)
        backend.save(d)
        write_meta(d, plan, iteration, steps, backend)
        scenarios = evaluation.scenarios(task.env, seeds)
        ev = evaluation.evaluate(load_controller(d), scenarios, num_workers=0, name="final")
    return {
        "eval_deterministic": {
            "mean": round(ev.summary["return"]["mean"], 2),
            "std": round(ev.summary["return"]["std"], 2),
            "returns": [round(r["return"], 2) for r in ev.episodes],
            "env_seeds": f"{seeds.start}..{seeds.stop - 1}",
            "wall_s": round(time.perf_counter() - t, 2),
        }
    }


def _get(result: dict[str, Any], path: tuple[str, ...], default: Any) -> Any:
    for k in path:
        if not isinstance(result, dict) or k not in result:
            return default
        result = result[k]
    return result


def run_in_process(
    key: str, impl: str, seed: int, max_wall_s: float | None, num_cpus: int | None
) -> tuple[dict[str, Any] | None, str]:
    """:func:`run_cell` in a fresh process (each cell its own Ray): the cell, or None and the
    end of its error output."""
    args = [key, impl, str(seed), str(max_wall_s or 0), str(num_cpus or 0)]
    cmd = [sys.executable, "-m", __name__, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    line = next((x for x in reversed(proc.stdout.splitlines()) if x.startswith("CELL ")), None)
    if proc.returncode != 0 or line is None:
        return None, proc.stderr[-3000:]
    return json.loads(line[5:]), ""


def said(cell: dict[str, Any]) -> str:
    """One line on a finished cell."""
    task, hit = TASKS[cell["task"]], cell["reached"]
    if hit:
        return (
            f"{task.threshold:g} at {reached_steps(hit):,} {task.step_unit}, {hit['wall_s']:.0f} s"
        )
    return f"not reached (best {cell['best_return']}, {cell['stopped_by']})"


if __name__ == "__main__":
    key, impl, seed, wall, cpus = sys.argv[1:6]
    out = run_cell(key, impl, int(seed), float(wall) or None, int(cpus) or None)
    print("CELL " + json.dumps(out), flush=True)
