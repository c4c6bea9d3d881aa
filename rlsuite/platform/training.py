"""Train any plan: progress, checkpoints, resume, metrics as JSON/CSV/TensorBoard, a PNG.

A run lives in one directory::

    run_dir/
      metrics.jsonl        one JSON row per iteration (appended as it goes)
      metrics.csv          the same as a table (rewritten at every checkpoint)
      learning_curve.png   episode return against env steps
      tb/                  TensorBoard scalars
      checkpoints/iter_N/  the latest checkpoints (RLlib state + rlsuite.json + spaces.pkl
                           + learner_extra.json: what RLlib leaves out, PPO's KL coefficient)
      checkpoints/latest   the name of the newest complete checkpoint
      clone/               with a plan's ``demonstrations``: the warm-started policy,
                           before any RL

``train(..., resume=True)`` continues a killed run from its newest complete
checkpoint, at the iteration it was written.
"""

from __future__ import annotations

import csv
import gc
import json
import math
import os
import pickle
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from rlsuite.platform import envs as env_registry

META = "rlsuite.json"
SPACES = "spaces.pkl"
LEARNER_EXTRA = "learner_extra.json"


class Trainer(Protocol):
    """What the loop needs of an algorithm: one iteration, save, restore, stop."""

    def train(self) -> dict[str, Any]: ...

    def save(self, path: str) -> None: ...

    def restore(self, path: str) -> None: ...

    def stop(self) -> None: ...


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


class RLlibTrainer:
    """A plan's RLlib ``Algorithm`` behind the :class:`Trainer` interface."""

    def __init__(self, plan: Any):
        from rlsuite.platform.optimizers import to_rllib

        self.plan = plan
        self.algo = to_rllib(plan).build_algo()
        self._steps_offset = 0

    def train(self) -> dict[str, Any]:
        row = flatten_result(self.algo.train())
        group = self.algo.env_runner_group
        if group is not None and self.plan.num_env_runners > 0:
            row["num_env_runners_healthy"] = group.num_healthy_remote_workers()
            row["num_env_runner_restarts"] = group.num_remote_worker_restarts()
        return row

    def save(self, path: str) -> None:
        self.algo.save_to_path(os.path.abspath(path))
        with open(os.path.join(path, SPACES), "wb") as f:
            pickle.dump(env_registry.spaces(self.plan.env, self.plan.env_config), f)
        with open(os.path.join(path, LEARNER_EXTRA), "w") as f:
            json.dump({"kl_coeffs": self._kl_coeffs()}, f)

    def restore(self, path: str) -> None:
        # RLlib's restore sends the restored weights to the remote env runners
        # fire-and-forget, and its actor manager drops that request for a runner that
        # still has one in flight (max_requests_in_flight_per_env_runner, default 1),
        # as every runner has right after the algorithm is built (its own weights
        # sync). Such a runner sampled the first iteration after a resume with its
        # *initial* weights (in one ring run 4 of 8 resumes; KL jumps at resumes
        # reached 3: benchmarks/RESULTS.md). Waiting for those requests first lets the
        # sync land, ahead of any sampling request.
        if self.algo.env_runner_group is not None:
            self.algo.env_runner_group.fetch_ready_async_reqs(timeout_seconds=None)
        self.algo.restore_from_path(os.path.abspath(path))
        extra = os.path.join(path, LEARNER_EXTRA)
        if os.path.exists(extra):
            with open(extra) as f:
                self._set_kl_coeffs(json.load(f).get("kl_coeffs", {}))

    def clone_demonstrations(self, path: str, epochs: int, seed: int = 0) -> dict[str, float]:
        """Warm start: fit the policy to recorded transitions by maximum likelihood and
        the critic to their discounted returns, then send the weights to the env runners.

        ``path`` is parquet from :func:`rlsuite.platform.optimizers.record_episodes`.
        Returns the final ``nll`` (per action), ``value_mse`` and ``transitions``.
        """
        import numpy as np
        import pyarrow.parquet as pq

        cols = pq.read_table(path, columns=["eps_id", "obs", "actions", "rewards"]).to_pydict()
        if not cols["obs"]:
            raise ValueError(f"demonstrations {path!r} hold no transitions")
        obs = np.asarray(cols["obs"], dtype=np.float32)
        act = np.asarray(cols["actions"])
        rew = np.asarray(cols["rewards"], dtype=np.float64)
        eps = cols["eps_id"]
        obs_space, space = env_registry.spaces(self.plan.env, self.plan.env_config)[None]
        if obs.shape[1:] != tuple(obs_space.shape):
            raise ValueError(
                f"demonstrations {path!r} have observations of shape {obs.shape[1:]}, but "
                f"{self.plan.env!r} with this env_config observes {obs_space.shape}: "
                "record them with the same env_config"
            )
        if getattr(self.plan, "normalize_actions", False) and hasattr(space, "low"):
            # the module acts in [-1, 1] and RLlib rescales to the env's bounds
            act = 2.0 * (act - space.low) / (space.high - space.low) - 1.0
        act = act.astype(np.float32 if hasattr(space, "low") else np.int64)
        # discounted return-to-go within each recorded episode (no bootstrap at its end)
        ret = np.zeros_like(rew)
        g, gamma = 0.0, self.plan.gamma
        for i in range(len(rew) - 1, -1, -1):
            if i == len(rew) - 1 or eps[i + 1] != eps[i]:
                g = 0.0
            g = rew[i] + gamma * g
            ret[i] = g
        ret = ret.astype(np.float32)
        batch, lr = min(1024, len(obs)), 1e-3

        def fit(learner: Any) -> dict[str, float]:
            import torch
            from ray.rllib.core.columns import Columns

            module = learner.module[next(iter(learner.module.keys()))]  # single-agent
            dist_cls = module.get_train_action_dist_cls()
            opt = torch.optim.Adam(module.parameters(), lr=lr)
            gen = torch.Generator().manual_seed(seed)
            dev = next(module.parameters()).device
            o, a, r = (torch.as_tensor(x, device=dev) for x in (obs, act, ret))
            scale = float(r.abs().mean()) + 1e-6  # value loss in units of a typical return
            nll = vmse = math.nan
            for _ in range(epochs):
                for idx in torch.randperm(len(o), generator=gen).split(batch):
                    idx = idx.to(dev)
                    out = module.forward_train({Columns.OBS: o[idx]})
                    dist = dist_cls.from_logits(out[Columns.ACTION_DIST_INPUTS])
                    lp = dist.logp(a[idx])
                    loss_pi = -(lp.sum(-1) if lp.dim() > 1 else lp).mean()
                    v = module.compute_values({Columns.OBS: o[idx]})
                    loss_v = ((v - r[idx]) / scale).pow(2).mean()
                    opt.zero_grad()
                    (loss_pi + loss_v).backward()
                    opt.step()
                    nll, vmse = loss_pi.item(), loss_v.item() * scale**2
            return {"nll": nll, "value_mse": vmse}

        res = [x.get() for x in self.algo.learner_group.foreach_learner(fit)]
        group = self.algo.env_runner_group
        if group is not None:
            group.fetch_ready_async_reqs(timeout_seconds=None)  # see restore()
            group.sync_weights(
                from_worker_or_learner_group=self.algo.learner_group,
                inference_only=True,
                timeout_seconds=None,
            )
        return {**res[0], "transitions": float(len(obs))}

    def _kl_coeffs(self) -> dict[str, float]:
        """PPO's adaptive KL coefficient per module, which RLlib's checkpoint leaves out
        (a resumed run would restart it at ``kl_coeff``)."""
        res = self.algo.learner_group.foreach_learner(
            lambda learner: {
                str(m): float(v)
                for m, v in getattr(learner, "curr_kl_coeffs_per_module", {}).items()
            }
        )
        return next((r.get() for r in res if r.ok), {})

    def _set_kl_coeffs(self, coeffs: dict[str, float]) -> None:
        def put(learner: Any) -> None:
            if hasattr(learner, "curr_kl_coeffs_per_module"):
                for m, v in coeffs.items():
                    learner.curr_kl_coeffs_per_module[m].data.fill_(v)

        if coeffs:
            for r in self.algo.learner_group.foreach_learner(put):
                r.get()  # raises what failed on a learner

    def stop(self) -> None:
        self.algo.stop()


def flatten_result(r: dict[str, Any]) -> dict[str, Any]:
    """The numbers worth keeping from an RLlib result dict, flat."""
    er = r.get("env_runners", {}) or {}
    ev = (r.get("evaluation", {}) or {}).get("env_runners", {}) or {}
    row: dict[str, Any] = {
        "episode_return_mean": _num(er.get("episode_return_mean")),
        "episode_len_mean": _num(er.get("episode_len_mean")),
        "env_steps_this_iter": int(_num(er.get("num_env_steps_sampled"), 0)),
        "time_this_iter_s": _num(r.get("time_this_iter_s")),
    }
    if ev:
        row["eval_return_mean"] = _num(ev.get("episode_return_mean"))
        if math.isnan(row["episode_return_mean"]):
            row["episode_return_mean"] = row["eval_return_mean"]
    for mid, stats in (r.get("learners", {}) or {}).items():
        if mid == "__all_modules__" or not isinstance(stats, dict):
            continue
        for k in (
            "total_loss",
            "policy_loss",
            "vf_loss",
            "entropy",
            "mean_kl_loss",
            "qf_loss",
            "curr_entropy_coeff",
            "curr_kl_coeff",
        ):
            if k in stats:
                row[f"learner/{mid}/{k}"] = _num(stats[k])
    return row


def _num(v: Any, default: float = math.nan) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    return f


def make_trainer(plan: Any) -> Trainer:
    """The trainer for ``plan``: RLlib for the RLlib plans, Ray actors for ``es``."""
    if plan.name == "es":
        from rlsuite.platform.es import ESTrainer

        return _ESAdapter(ESTrainer(plan))
    return RLlibTrainer(plan)


class _ESAdapter:
    def __init__(self, es: Any):
        self.es = es

    def train(self) -> dict[str, Any]:
        m = dict(self.es.train())
        m.setdefault("env_steps_this_iter", int(m.get("env_steps", 0)))
        m.setdefault("time_this_iter_s", m.get("time_s", math.nan))
        return m

    def save(self, path: str) -> None:
        self.es.save_checkpoint(path)

    def restore(self, path: str) -> None:
        self.es.restore(path)

    def stop(self) -> None:
        self.es.stop()


def latest_checkpoint(run_dir: str) -> str | None:
    """The newest complete checkpoint of a run, or None."""
    pointer = os.path.join(run_dir, "checkpoints", "latest")
    if not os.path.exists(pointer):
        return None
    with open(pointer) as f:
        path = os.path.join(run_dir, "checkpoints", f.read().strip())
    return path if os.path.exists(os.path.join(path, META)) else None


def _write_checkpoint(
    trainer: Trainer, plan: Any, run_dir: str, iteration: int, env_steps: int, keep: int = 2
) -> str:
    root = os.path.join(run_dir, "checkpoints")
    os.makedirs(root, exist_ok=True)
    name = f"iter_{iteration:06d}"
    path = os.path.join(root, name)
    if os.path.exists(path):
        shutil.rmtree(path)
    trainer.save(path)
    write_meta(path, plan, iteration, env_steps)
    tmp = os.path.join(root, "latest.tmp")
    with open(tmp, "w") as f:
        f.write(name)
    os.replace(tmp, os.path.join(root, "latest"))  # the checkpoint is complete only now
    olds = sorted(d for d in os.listdir(root) if d.startswith("iter_") and d != name)
    for d in olds[: max(0, len(olds) - (keep - 1))]:
        shutil.rmtree(os.path.join(root, d), ignore_errors=True)
    return path


def write_meta(path: str, plan: Any, iteration: int, env_steps: int) -> None:
    """Write ``rlsuite.json``: what a checkpoint is (plan, env, iteration) for loading it."""
    meta = {
        "format": 1,
        "plan": plan.name,
        "plan_config": plan.to_dict(),
        "env": plan.env,
        "env_config": dict(plan.env_config),
        "multi_agent": env_registry.spec(plan.env).multi_agent,
        "policies": getattr(plan, "policies", "shared"),
        "iteration": iteration,
        "env_steps": env_steps,
        "time": time.time(),
    }
    with open(os.path.join(path, META), "w") as f:
        json.dump(meta, f, indent=2, default=str)


def train(
    plan: Any,
    iterations: int,
    run_dir: str,
    *,
    resume: bool = False,
    progress: bool = True,
    checkpoint_every: int = 5,
    stop_return: float | None = None,
    callback: Callable[[int, dict[str, Any]], None] | None = None,
) -> TrainResult:
    """Train ``plan`` for ``iterations`` iterations in ``run_dir``.

    Args:
        plan: from :func:`rlsuite.platform.optimizers.make_plan`.
        iterations: total iterations of the run (a resumed run counts the earlier ones).
        run_dir: where metrics, plots and checkpoints go.
        resume: continue from the newest checkpoint in ``run_dir`` if there is one;
            without it an existing run directory is an error (nothing is overwritten).
        progress: show a progress bar with the return and the sampling speed.
        checkpoint_every: write a checkpoint every this many iterations (and at the end).
        stop_return: stop early once the smoothed episode return reaches this.
        callback: called as ``callback(iteration, row)`` after each iteration.
    """
    import ray

    from rlsuite.platform import cluster

    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    if checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be >= 1, got {checkpoint_every}")
    plan.validate()
    run_dir = os.path.abspath(run_dir)
    ckpt = latest_checkpoint(run_dir)
    if not resume and os.path.exists(os.path.join(run_dir, "metrics.jsonl")):
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
    trainer = make_trainer(plan)
    metrics: list[dict[str, Any]] = []
    start, env_steps = 0, 0
    try:
        if resume and ckpt is not None:
            with open(os.path.join(ckpt, META)) as f:
                meta = json.load(f)
            _check_same_plan(meta, plan, ckpt)
            trainer.restore(ckpt)
            start, env_steps = int(meta["iteration"]), int(meta["env_steps"])
            metrics = [
                m
                for m in _read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
                if m.get("iteration", 0) <= start
            ]
        elif getattr(plan, "demonstrations", ""):
            stats = trainer.clone_demonstrations(plan.demonstrations, plan.demo_epochs, plan.seed)
            clone = os.path.join(run_dir, "clone")
            shutil.rmtree(clone, ignore_errors=True)
            trainer.save(clone)  # the policy before any RL, to compare against
            write_meta(clone, plan, 0, 0)
            print(
                f"warm start: cloned {int(stats['transitions'])} demonstrated transitions "
                f"(nll {stats['nll']:.3f}, value mse {stats['value_mse']:.3g}); saved to {clone}"
            )
        _rewrite_jsonl(os.path.join(run_dir, "metrics.jsonl"), metrics)
        writer = _tensorboard(run_dir)
        bar = _Progress(progress, plan, start, iterations)
        path = ckpt if (resume and ckpt) else ""
        it = start
        try:
            for it in range(start + 1, iterations + 1):
                row = trainer.train()
                env_steps += int(row.get("env_steps_this_iter", 0))
                row = {
                    "iteration": it,
                    "env_steps": env_steps,
                    "wall_s": time.perf_counter() - t0,
                    **row,
                }
                metrics.append(row)
                _append_jsonl(os.path.join(run_dir, "metrics.jsonl"), row)
                if writer is not None:
                    for k, v in row.items():
                        if isinstance(v, int | float) and not math.isnan(v):
                            writer.add_scalar(k, v, env_steps)
                bar.update(it, row)
                if callback is not None:
                    callback(it, row)
                done = (
                    stop_return is not None
                    and row.get("episode_return_mean", -math.inf) >= stop_return
                )
                if it % checkpoint_every == 0 or it == iterations or done:
                    path = _write_checkpoint(trainer, plan, run_dir, it, env_steps)
                    _write_csv(run_dir, metrics)
                if done:
                    break
        except KeyboardInterrupt:
            if metrics and metrics[-1]["iteration"] > start:
                path = _write_checkpoint(
                    trainer, plan, run_dir, metrics[-1]["iteration"], env_steps
                )
            raise
        finally:
            bar.close()
            if writer is not None:
                writer.close()
        if not path or (metrics and not path.endswith(f"iter_{metrics[-1]['iteration']:06d}")):
            path = _write_checkpoint(trainer, plan, run_dir, it, env_steps)
        _write_csv(run_dir, metrics)
        plot_learning_curve(
            metrics, os.path.join(run_dir, "learning_curve.png"), title=f"{plan.name} on {plan.env}"
        )
    finally:
        trainer.stop()
        gc.collect()  # close RLlib's data iterators while Ray is still up
        if started_ray:
            cluster.shutdown()
    final = metrics[-1].get("episode_return_mean", math.nan) if metrics else math.nan
    return TrainResult(
        path,
        metrics[-1]["iteration"] if metrics else start,
        metrics,
        time.perf_counter() - t0,
        env_steps,
        final,
        run_dir,
    )


def _check_same_plan(meta: dict[str, Any], plan: Any, ckpt: str) -> None:
    if meta.get("plan") != plan.name or meta.get("env") != plan.env:
        raise ValueError(
            f"cannot resume: {ckpt} is a {meta.get('plan')!r} run on {meta.get('env')!r}, "
            f"but this plan is {plan.name!r} on {plan.env!r}"
        )


def _read_jsonl(path: str) -> list[dict[str, Any]]:
    if not os.path.exists(path):
        return []
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:  # a line cut by a kill
                    break
    return rows


def _rewrite_jsonl(path: str, rows: list[dict[str, Any]]) -> None:
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r, default=_jsonable) + "\n")


def _append_jsonl(path: str, row: dict[str, Any]) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(row, default=_jsonable) + "\n")
        f.flush()


def _jsonable(v: Any) -> Any:
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def _write_csv(run_dir: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(os.path.join(run_dir, "metrics.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def _tensorboard(run_dir: str):
    try:
        from tensorboardX import SummaryWriter
    except ImportError:  # pragma: no cover - tensorboardX is a core dependency
        return None
    return SummaryWriter(os.path.join(run_dir, "tb"))


def plot_learning_curve(
    rows: list[dict[str, Any]], path: str, title: str = "", y: str = "episode_return_mean"
) -> str | None:
    """Episode return against env steps as a PNG; returns the path (None if nothing to plot)."""
    pts = [
        (r.get("env_steps", r["iteration"]), r.get(y))
        for r in rows
        if isinstance(r.get(y), int | float) and not math.isnan(r[y])
    ]
    if not pts:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    xs, ys = zip(*pts, strict=True)
    ax.plot(xs, ys, marker="o", ms=3)
    ax.set_xlabel("env steps")
    ax.set_ylabel(y.replace("_", " "))
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


class _Progress:
    def __init__(self, show: bool, plan: Any, start: int, total: int):
        self.bar = None
        if not show:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.bar = Progress(
            TextColumn(f"[bold]{plan.name}[/] on {plan.env}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
        )
        self.bar.start()
        self.task = self.bar.add_task("train", total=total, completed=start, info="")

    def update(self, it: int, row: dict[str, Any]) -> None:
        if self.bar is None:
            return
        ret = row.get("episode_return_mean", math.nan)
        sps = row.get("env_steps_this_iter", 0) / max(row.get("time_this_iter_s") or 1e-9, 1e-9)
        self.bar.update(self.task, completed=it, info=f"return {ret:8.2f}  {sps:7.0f} steps/s")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
