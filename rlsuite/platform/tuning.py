"""Run any plan under Ray Tune with a search space and a scheduler (ASHA or PBT).

The search space names plan fields (``lr``, ``num_epochs``, ``hidden``...), so
every app's training runs under Tune the same way. Each trial is the platform's
own backend (an RLlib algorithm or the ES trainer) inside a Tune function
trainable; it reports every iteration and checkpoints so that ASHA can stop it
and PBT can clone and perturb it.

Example::

    >>> from ray import tune as ray_tune
    >>> from rlsuite.platform import optimizers, tuning
    >>> plan = optimizers.make_plan("sync", env="CartPole-v1", num_env_runners=0)
    >>> res = tuning.tune(plan, {"lr": ray_tune.loguniform(1e-4, 1e-2)},
    ...                   scheduler="asha", num_samples=4, iterations=8)  # doctest: +SKIP
    >>> res.best_config["lr"], res.best_checkpoint                          # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

SCHEDULERS = ("asha", "pbt", "fifo")


@dataclass
class TuneResult:
    """The best trial and a row per trial."""

    best_config: dict[str, Any]
    """The best trial's plan, as a dict (``make_plan(**best_config)`` rebuilds it)."""
    best_checkpoint: str | None
    """Path of the best trial's last checkpoint (loadable by ``load_controller``)."""
    best_metric: float
    """The best trial's last value of the metric."""
    trials: list[dict[str, Any]] = field(default_factory=list)
    """Per trial: its searched values, iterations run, last metric, status."""
    metric: str = "episode_return_mean"

    def table(self, title: str = "tune trials"):
        from rich.table import Table

        keys = sorted({k for t in self.trials for k in t.get("params", {})})
        t = Table(title=title)
        for c in ("trial", *keys, "iterations", self.metric):
            t.add_column(c, justify="right")
        for tr in self.trials:
            t.add_row(
                tr["trial_id"],
                *[_fmt(tr["params"].get(k)) for k in keys],
                str(tr["iterations"]),
                _fmt(tr["metric"]),
            )
        return t


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _trainable(config: dict[str, Any]) -> None:
    """One Tune trial: build the plan from base + searched values, train, report."""
    from ray import tune as ray_tune

    from rlsuite.platform import cluster
    from rlsuite.platform.backends.registry import make_backend
    from rlsuite.platform.checkpoints.layout import metadata, write_meta
    from rlsuite.platform.optimizers import make_plan

    cluster.configure_driver_threads()
    base = dict(config["__base__"])
    searched = {k: v for k, v in config.items() if k not in ("__base__", "__iterations__")}
    plan = make_plan(base.pop("plan"), **{**base, **searched})
    backend = make_backend(plan)
    start, env_steps = 0, 0
    ckpt = ray_tune.get_checkpoint()
    if ckpt is not None:  # PBT cloned a better trial, or Tune restarted this one
        with ckpt.as_directory() as d:
            backend.restore(d)
            meta = metadata(d)
            start, env_steps = int(meta["iteration"]), int(meta["env_steps"])
    try:
        for it in range(start + 1, int(config["__iterations__"]) + 1):
            row = backend.train()
            env_steps += int(row.get("env_steps_this_iter", 0))
            metrics = {k: v for k, v in row.items() if isinstance(v, int | float)}
            metrics.update(iteration=it, env_steps=env_steps)
            with tempfile.TemporaryDirectory() as d:
                backend.save(d)
                write_meta(d, plan, it, env_steps, backend)
                ray_tune.report(metrics, checkpoint=ray_tune.Checkpoint.from_directory(d))
    finally:
        backend.stop()


def placement_bundles(plan: Any) -> list[dict[str, float]]:
    """The resources one trial of ``plan`` needs, as placement-group bundles."""
    return plan.placement_bundles()


def tune(
    plan: Any,
    search_space: dict[str, Any],
    *,
    scheduler: str = "asha",
    num_samples: int = 4,
    iterations: int = 10,
    run_dir: str = "runs/tune",
    metric: str = "episode_return_mean",
    mode: str = "max",
    max_concurrent_trials: int | None = None,
    grace_period: int = 2,
    perturbation_interval: int = 2,
    seed: int | None = None,
) -> TuneResult:
    """Search ``search_space`` around ``plan`` with Tune.

    Args:
        plan: the base plan; every trial starts from it.
        search_space: ``{plan field: ray.tune domain or value}``; unknown fields are an error.
        scheduler: ``asha`` (stop bad trials early), ``pbt`` (clone good trials and
            perturb their values; the space's domains are the mutations) or ``fifo``.
        num_samples: trials (each draws from the space; grid_search multiplies).
        iterations: the most iterations a trial runs.
        run_dir: Tune's storage folder (trial logs and checkpoints).
        metric, mode: what "best" means.
        max_concurrent_trials: trials at a time (default: as many as the CPUs allow).
        grace_period: ASHA: iterations every trial gets before it can be stopped.
        perturbation_interval: PBT: iterations between exploit/explore steps.
        seed: seeds the search's random draws (Python's and NumPy's global RNGs, which
            Tune's samplers and PBT's perturbations use); ``None`` leaves them alone.
    """
    import ray
    from ray import tune as ray_tune
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, PopulationBasedTraining

    from rlsuite.platform import cluster

    if scheduler not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {scheduler!r}; choose one of {', '.join(SCHEDULERS)}")
    if num_samples < 1 or iterations < 1:
        raise ValueError("num_samples and iterations must be >= 1")
    if mode not in ("max", "min"):
        raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
    known = {f for f in type(plan).__dataclass_fields__}
    bad = sorted(set(search_space) - known)
    if bad:
        raise ValueError(
            f"search space names unknown fields of plan {plan.name!r}: {bad}; "
            f"known: {sorted(known)}"
        )
    if not search_space:
        raise ValueError("the search space is empty: name at least one plan field to search")
    for k, v in search_space.items():  # plain values must already be valid
        if not hasattr(v, "sample") and not isinstance(v, dict):
            plan.replace(**{k: v})

    if seed is not None:
        import random

        import numpy as np

        random.seed(seed)
        np.random.seed(seed)
    if scheduler == "asha":
        sched = ASHAScheduler(
            time_attr="training_iteration",
            max_t=iterations,
            grace_period=min(grace_period, iterations),
            reduction_factor=2,
        )
    elif scheduler == "pbt":
        sched = PopulationBasedTraining(
            time_attr="training_iteration",
            perturbation_interval=perturbation_interval,
            hyperparam_mutations=dict(search_space),
        )
    else:
        sched = FIFOScheduler()

    started = not ray.is_initialized()
    if started:
        cluster.init()
    try:
        # One bundle for the trial (it hosts the learner) and one per actor it starts, so
        # the trial's env runners / ES workers are placed inside its reservation.
        trainable = ray_tune.with_resources(
            _trainable, ray_tune.PlacementGroupFactory(placement_bundles(plan))
        )
        param_space = {
            "__base__": plan.to_dict(),
            "__iterations__": iterations,
            **dict(search_space),
        }
        tuner = ray_tune.Tuner(
            trainable,
            param_space=param_space,
            tune_config=ray_tune.TuneConfig(
                metric=metric,
                mode=mode,
                scheduler=sched,
                num_samples=num_samples,
                max_concurrent_trials=max_concurrent_trials,
            ),
            run_config=ray_tune.RunConfig(
                storage_path=os.path.abspath(run_dir),
                name=f"{plan.name}-{plan.env}".replace("/", "_"),
                verbose=0,
                checkpoint_config=ray_tune.CheckpointConfig(num_to_keep=2),
                failure_config=ray_tune.FailureConfig(max_failures=1),
            ),
        )
        grid = tuner.fit()
        trials = []
        for res in grid:
            m = res.metrics or {}
            trials.append(
                {
                    "trial_id": str(
                        m.get("trial_id", res.path.rsplit("_", 1)[-1] if res.path else "?")
                    ),
                    "params": {k: res.config.get(k) for k in search_space},
                    "iterations": int(m.get("training_iteration", 0)),
                    "metric": float(m.get(metric, math.nan)),
                    "status": "error" if res.error else "ok",
                    "checkpoint": res.checkpoint.path if res.checkpoint else None,
                }
            )
        best = grid.get_best_result(metric=metric, mode=mode, scope="last")
        base = dict(plan.to_dict())
        best_cfg = {**base, **{k: best.config[k] for k in search_space}}
        return TuneResult(
            best_config=best_cfg,
            best_checkpoint=best.checkpoint.path if best.checkpoint else None,
            best_metric=float((best.metrics or {}).get(metric, math.nan)),
            trials=trials,
            metric=metric,
        )
    finally:
        if started:
            cluster.shutdown()
