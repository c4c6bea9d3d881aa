"""The cells of ``rlsuite bench run platform_async_grad``: one seed of A3C or GORILA's DQN on
CartPole-v1, the parameter-server shards timed alone (pushers) and in the whole plan, the
medians over repeats and the shards figure."""

from __future__ import annotations

import math
import tempfile
import time
from typing import Any

BIG = (512, 512, 512)
"""The ~1M-parameter network of the shards figure."""


GORILA = dict(
    loss="dqn", num_runners=2, cpus_per_runner=0.5, num_shards=2, cpus_per_shard=0.25,
    hidden=(256,), lr=5e-4, rollout_length=4, train_batch_size=32, buffer_size=50_000,
    learning_starts=1000, target_update_freq=250, epsilon_timesteps=10_000,
    final_epsilon=0.02, gamma=0.99,
)  # fmt: skip
"""``--part gorila``'s plan (``benchmarks/platform/async_grad.py``'s docstring)."""


def learn_one(seed: int, s: Any, gorila: bool = False) -> dict:
    """One seed of ``cartpole-a3c`` (or, ``gorila``, of GORILA's DQN)."""
    from rlsuite.platform import optimizers, training

    values = (
        dict(GORILA, hidden=[int(h) for h in s.hidden.split(",")] if s.hidden else (256,))
        if gorila
        else dict(
            num_runners=1, gamma=0.95, hidden=[int(h) for h in (s.hidden or "256,256").split(",")]
        )
    )
    plan = optimizers.make_plan(
        "async_grad", env="CartPole-v1", seed=seed, env_steps_per_iteration=s.per_iter, **values
    )
    with tempfile.TemporaryDirectory() as d:
        res = training.train(
            plan, math.ceil(s.budget / s.per_iter), d, progress=False, stop_return=s.threshold
        )
    rows = res.metrics
    hit = next((r for r in rows if r["episode_return_mean"] >= s.threshold), None)
    finite = [r["episode_return_mean"] for r in rows if not math.isnan(r["episode_return_mean"])]
    return {
        "seed": seed,
        "reached": hit is not None,
        "env_steps_to_threshold": hit["env_steps"] if hit else None,
        "wall_s_to_threshold": hit["wall_s"] if hit else None,
        "best_return": max(finite, default=math.nan),
        "env_steps": res.env_steps,
        "samples_per_s": sum(r["samples_per_s"] for r in rows) / len(rows),
        "updates_per_s": sum(r["updates_per_s"] for r in rows) / len(rows),
        "staleness_mean": sum(r["staleness_mean"] for r in rows) / len(rows),
        "curve": [(r["env_steps"], r["episode_return_mean"], r["wall_s"]) for r in rows],
    }


def _pusher(shards, bounds, grad, seconds):
    """Push ``grad``'s slices to the shards for ``seconds``, loading the answers, as a runner
    does; the pushes made."""
    import numpy as np
    import ray

    versions, n = [0] * len(shards), 0
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        answers = ray.get(
            [s.push.remote(grad[lo:hi], v, 0) for s, (lo, hi), v in zip(shards, bounds, versions)]
        )
        np.concatenate([a[0] for a in answers])
        versions = [a[1] for a in answers]
        n += 1
    return n


def shards_push(num_shards: int, s: Any) -> dict:
    import numpy as np
    import ray
    import torch

    from rlsuite.platform.async_grad import model
    from rlsuite.platform.async_grad.param_server import ParamShard
    from rlsuite.platform.optimizers import make_plan

    torch.manual_seed(0)
    flat = model.get_flat(model.module_for(make_plan("async_grad", env="CartPole-v1", hidden=BIG)))
    bounds = model.shard_bounds(len(flat), num_shards)
    cls = ray.remote(num_cpus=0)(ParamShard)
    shards = [
        cls.remote(
            i, {"params": flat[lo:hi], "optimizer": None, "version": 0}, "adam", 1e-4, None, 1
        )
        for i, (lo, hi) in enumerate(bounds)
    ]
    ray.get([sh.ping.remote() for sh in shards])
    grad = ray.put(np.random.default_rng(0).standard_normal(len(flat)).astype(np.float32) * 1e-3)
    push = ray.remote(num_cpus=0)(_pusher)
    ray.get([push.remote(shards, bounds, grad, 1.0) for _ in range(s.pushers)])  # warm-up
    before = ray.get([sh.stats.remote() for sh in shards])
    t0 = time.perf_counter()
    made = ray.get([push.remote(shards, bounds, grad, s.seconds) for _ in range(s.pushers)])
    dt = time.perf_counter() - t0
    after = ray.get([sh.stats.remote() for sh in shards])
    for sh in shards:
        ray.kill(sh)
    applied = sum(a["applied"] - b["applied"] for a, b in zip(after, before)) / num_shards
    busy = sum(a["busy_s"] - b["busy_s"] for a, b in zip(after, before))
    return {
        "num_shards": num_shards,
        "num_params": len(flat),
        "seconds": dt,
        "pushes": sum(made),
        "updates_per_s": applied / dt,
        "learner_utilisation": busy / (num_shards * dt),
    }


def shards_a3c(num_shards: int, s: Any) -> dict:
    from rlsuite.platform.backends.registry import make_backend
    from rlsuite.platform.optimizers import make_plan

    plan = make_plan(
        "async_grad", env="CartPole-v1", hidden=BIG, num_runners=s.pushers, num_shards=num_shards,
        cpus_per_runner=0.5, cpus_per_shard=0, env_steps_per_iteration=2000,
    )  # fmt: skip
    backend = make_backend(plan)
    try:
        backend.train()  # warm-up
        rows = [backend.train() for _ in range(s.iterations)]
    finally:
        backend.stop()
    t = sum(r["time_this_iter_s"] for r in rows)
    return {
        "num_shards": num_shards,
        "seconds": t,
        "updates_per_s": sum(r["updates_this_iter"] for r in rows) / t,
        "samples_per_s": sum(r["env_steps_this_iter"] for r in rows) / t,
        "learner_utilisation": sum(r["learner_utilisation"] * r["time_this_iter_s"] for r in rows)
        / t,
        "staleness_mean": sum(r["staleness_mean"] for r in rows) / len(rows),
    }


def medians(rows: list[dict], counts: list[int]) -> dict:
    med = {}
    for n in counts:
        vals = sorted(r["updates_per_s"] for r in rows if r["num_shards"] == n)
        if vals:
            med[str(n)] = vals[len(vals) // 2]
    base = med.get(str(counts[0]))
    return {
        n: {"updates_per_s": v, "vs_one_shard": v / base if base else None} for n, v in med.items()
    }


def plot(result: dict):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for key, label in (("push", "shards alone (pushers)"), ("a3c", "A3C on CartPole (runners)")):
        med = result[key]["median"]
        if med:
            xs = sorted(int(n) for n in med)
            ax.plot(xs, [med[str(n)]["updates_per_s"] for n in xs], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("parameter-server shards")
    ax.set_ylabel("updates / s")
    ax.set_title(f"async_grad, {result['num_params'] / 1e6:.2f}M parameters, 2-core machine")
    ax.grid(alpha=0.3)
    ax.legend()
    return fig
