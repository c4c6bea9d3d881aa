"""Train any plan in a run directory: progress, checkpoints, resume, metric files.

A run lives in one directory::

    run_dir/
      metrics.jsonl, metrics.csv, learning_curve.png, tb/   rlsuite.platform.metrics
      checkpoints/iter_N/, checkpoints/latest                rlsuite.platform.checkpoints
      clone/               with a plan's ``demonstrations``: the warm-started policy,
                           before any RL (rlsuite.platform.demonstrations)

The plan's backend (:mod:`rlsuite.platform.backends`) does the iterations; this
module only runs the loop around it. ``train(..., resume=True)`` continues a
killed run from its newest complete checkpoint, at the iteration it was written.
"""

from __future__ import annotations

import gc
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rlsuite.platform import cluster, demonstrations, metrics
from rlsuite.platform.backends.registry import make_backend
from rlsuite.platform.checkpoints.layout import (
    checkpoint_name,
    latest_checkpoint,
    metadata,
    write_checkpoint,
)


@dataclass
class TrainResult:
    """The outcome of :func:`train`."""

    checkpoint: str
    """Path of the final checkpoint (loadable by ``checkpoints.load_controller``)."""
    iterations: int
    """Iterations completed in total (including those before a resume)."""
    metrics: list[dict[str, Any]]
    """One row per iteration."""
    wall_time_s: float
    """Wall time of this call."""
    env_steps: int
    """Env steps sampled in total."""
    final_return: float
    """Smoothed episode return at the last iteration (NaN if no episode finished)."""
    run_dir: str
    """Where everything was written."""


def train(
    plan: Any,
    iterations: int,
    run_dir: str,
    *,
    resume: bool = False,
    progress: bool = True,
    checkpoint_every: int = 5,
    stop_return: float | None = None,
    stop_after_s: float | None = None,
    callback: Callable[[int, dict[str, Any]], None] | None = None,
) -> TrainResult:
    """Train ``plan`` for ``iterations`` iterations in ``run_dir``, with the plan's backend.

    Args:
        plan: from :func:`rlsuite.platform.optimizers.make_plan`.
        iterations: total iterations of the run (a resumed run counts the earlier ones).
        run_dir: where metrics, plots and checkpoints go.
        resume: continue from the newest checkpoint in ``run_dir`` if there is one;
            without it an existing run directory is an error (nothing is overwritten).
        progress: show a progress bar with the return and the sampling speed.
        checkpoint_every: write a checkpoint every this many iterations (and at the end).
        stop_return: stop early once the smoothed episode return reaches this.
        stop_after_s: stop, with a checkpoint, after the first iteration that ends this many
            seconds after the backend started building (a time budget; resume goes on).
        callback: called as ``callback(iteration, row)`` after each iteration.
    """
    import ray

    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    if checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be >= 1, got {checkpoint_every}")
    if stop_after_s is not None and not stop_after_s > 0:
        raise ValueError(f"stop_after_s must be > 0 seconds, got {stop_after_s}")
    plan.validate()
    run_dir = os.path.abspath(run_dir)
    ckpt = latest_checkpoint(run_dir)
    if not resume and metrics.has_run(run_dir):
        raise FileExistsError(
            f"{run_dir} already holds a run; pass resume=True (--resume) to continue it, or "
            "choose another run directory"
        )
    os.makedirs(run_dir, exist_ok=True)

    started_ray = not ray.is_initialized()
    if started_ray:
        cluster.init()
    else:
        cluster.configure_driver_threads()
    t0 = time.perf_counter()
    backend = make_backend(plan)
    rows: list[dict[str, Any]] = []
    start, env_steps = 0, 0
    try:
        if resume and ckpt is not None:
            meta = metadata(ckpt)
            _check_same_plan(meta, plan, ckpt)
            backend.restore(ckpt)
            start, env_steps = int(meta["iteration"]), int(meta["env_steps"])
            rows = [
                m
                for m in metrics.read_jsonl(os.path.join(run_dir, metrics.JSONL))
                if m.get("iteration", 0) <= start
            ]
        elif getattr(plan, "demonstrations_warm_start", False) and plan.demonstrations:
            demonstrations.warm_start(backend, run_dir)
        log = metrics.MetricsLog(run_dir, rows)
        bar = metrics.Progress(progress, plan, start, iterations)
        path = ckpt if (resume and ckpt) else ""
        it = start
        try:
            for it in range(start + 1, iterations + 1):
                row = backend.train()
                env_steps += int(row.get("env_steps_this_iter", 0))
                row = {
                    "iteration": it,
                    "env_steps": env_steps,
                    "wall_s": time.perf_counter() - t0,
                    **row,
                }
                rows.append(row)
                log.add(row)
                bar.update(it, row)
                if callback is not None:
                    callback(it, row)
                done = (
                    stop_return is not None
                    and row.get("episode_return_mean", -math.inf) >= stop_return
                ) or (stop_after_s is not None and row["wall_s"] >= stop_after_s)
                if it % checkpoint_every == 0 or it == iterations or done:
                    path = write_checkpoint(backend, plan, run_dir, it, env_steps)
                    metrics.write_csv(run_dir, rows)
                if done:
                    break
        except KeyboardInterrupt:
            if rows and rows[-1]["iteration"] > start:
                path = write_checkpoint(backend, plan, run_dir, rows[-1]["iteration"], env_steps)
            raise
        finally:
            bar.close()
            log.close()
        if not path or (rows and not path.endswith(checkpoint_name(rows[-1]["iteration"]))):
            path = write_checkpoint(backend, plan, run_dir, it, env_steps)
        metrics.write_csv(run_dir, rows)
        metrics.plot_learning_curve(
            rows, os.path.join(run_dir, metrics.PNG), title=f"{plan.name} on {plan.env}"
        )
    finally:
        backend.stop()
        # free what the stopped algorithm left in reference cycles (actor handles, object
        # refs) while Ray is still up (backend.stop() itself closes the offline batch
        # generators)
        gc.collect()
        if started_ray:
            cluster.shutdown()
    final = rows[-1].get("episode_return_mean", math.nan) if rows else math.nan
    return TrainResult(
        path,
        rows[-1]["iteration"] if rows else start,
        rows,
        time.perf_counter() - t0,
        env_steps,
        final,
        run_dir,
    )


def clone_only(plan: Any, run_dir: str) -> str:
    """A ``sync`` plan's warm start alone: its ``demonstrations`` cloned into a fresh policy,
    saved in ``run_dir/clone`` with no RL (e.g. a DAgger round's driver); that path. The
    clone needs no env runners, so none are started."""
    import ray

    if not (getattr(plan, "demonstrations_warm_start", False) and plan.demonstrations):
        raise ValueError(f"the {plan.name} plan has no demonstrations to clone")
    if hasattr(plan, "num_env_runners"):
        plan = plan.replace(num_env_runners=0)
    started_ray = not ray.is_initialized()
    if started_ray:
        cluster.init()
    else:
        cluster.configure_driver_threads()
    backend = make_backend(plan)
    try:
        return demonstrations.warm_start(backend, os.path.abspath(run_dir))
    finally:
        backend.stop()
        gc.collect()
        if started_ray:
            cluster.shutdown()


def _check_same_plan(meta: dict[str, Any], plan: Any, ckpt: str) -> None:
    if meta.get("plan") != plan.name or meta.get("env") != plan.env:
        raise ValueError(
            f"cannot resume: {ckpt} is a {meta.get('plan')!r} run on {meta.get('env')!r}, "
            f"but this plan is {plan.name!r} on {plan.env!r}"
        )
