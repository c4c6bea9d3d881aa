"""The steps of R2D3's measurements (``benchmarks/platform/r2d3.py``): a plan trained to a
return or a budget, its final policy acting greedily on held-out env seeds, a demonstrator's
own score on the same seeds, and demonstrations recorded from a checkpoint.

Env seeds: demonstrations are recorded on seeds from :data:`DEMO_SEEDS`, the held-out
evaluation runs on seeds from :data:`HELD_OUT_SEEDS`; training envs are seeded by the plan.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

DEMO_SEEDS = 5_000
"""The first env seed of recorded demonstrations."""
HELD_OUT_SEEDS = 10_000
"""The first env seed of the held-out evaluation."""
PROBE_SEEDS = 20_000
"""The first env seed of the greedy probes that may stop training (never held out)."""


class CartPoleWeak:
    """A weak CartPole demonstrator, one rule: push the way the pole swings, less a tenth of
    the cart's own velocity, ``a = [omega - 0.1 * x_dot > 0]``. It keeps the pole up but lets
    the cart run off the track: about 150 (144 on env seeds 1000-1049)."""

    name = "weak-swing"

    def act(self, obs: Any) -> int:
        return int(obs[3] - 0.1 * obs[1] > 0)


def held_out(
    controller: Any, env: str, episodes: int, first: int = HELD_OUT_SEEDS
) -> dict[str, Any]:
    """``controller``'s greedy returns on the held-out env seeds (from ``first``)."""
    from rlsuite.platform.evaluation import evaluate, scenarios

    seeds = range(first, first + episodes)
    ev = evaluate(controller, scenarios(env, seeds), num_workers=0)
    return dict(
        mean=round(ev.summary["return"]["mean"], 2),
        std=round(ev.summary["return"]["std"], 2),
        returns=[round(r["return"], 2) for r in ev.episodes],
        env_seeds=f"{seeds.start}..{seeds.stop - 1}",
    )


def save_policy(backend: Any, plan: Any, steps: int, path: str) -> str:
    """``backend``'s policy as a platform checkpoint at ``path`` (loadable as a controller)."""
    from rlsuite.platform.checkpoints.layout import write_meta

    os.makedirs(path, exist_ok=True)
    backend.save(path)
    write_meta(path, plan, 0, steps, backend)
    return path


def greedy(backend: Any, plan: Any, steps: int, episodes: int, first: int) -> dict[str, Any]:
    """``backend``'s current policy, saved and loaded as a controller, acting greedily on
    ``episodes`` env seeds from ``first``."""
    from rlsuite.platform.checkpoints import load_controller

    with tempfile.TemporaryDirectory() as tmp:
        return held_out(load_controller(save_policy(backend, plan, steps, tmp)), plan.env,
                        episodes, first)  # fmt: skip


def train(
    plan: Any,
    *,
    max_env_steps: int,
    stop_return: float,
    max_wall_s: float,
    eval_episodes: int,
    say: Callable[[str], None],
    keep: str = "",
    probe_every: int = 0,
    probe_episodes: int = 5,
) -> dict[str, Any]:
    """Train ``plan`` until its smoothed training return reaches ``stop_return`` (with
    ``probe_every``: until the policy's greedy mean return on ``probe_episodes`` probe seeds,
    tried every ``probe_every`` env steps, does), ``max_env_steps`` env steps or
    ``max_wall_s`` seconds; then its final policy acts greedily on ``eval_episodes``
    held-out seeds. ``keep``: a folder to keep that policy's checkpoint in (else a temporary
    one). Wall time counts from the first iteration, probes included."""
    from rlsuite.platform.backends.registry import make_backend
    from rlsuite.platform.checkpoints import load_controller

    backend = make_backend(plan)
    curve, probes, steps, best, reached = [], [], 0, -math.inf, None
    t0 = time.perf_counter()
    try:
        while steps < max_env_steps and time.perf_counter() - t0 < max_wall_s:
            row = backend.train()
            steps += row["env_steps_this_iter"]
            wall, ret = time.perf_counter() - t0, row["episode_return_mean"]
            best = max(best, ret) if not math.isnan(ret) else best
            share = row.get("demo_share", math.nan)
            curve.append((steps, round(wall, 1), ret, share))
            if len(curve) % 5 == 1:
                say(f"{plan.name} seed {plan.seed}: {steps:>7} steps {wall:5.0f} s return "
                    f"{ret:7.1f} demo share {share:.2f}")  # fmt: skip
            score = ret
            if probe_every:
                score = -math.inf
                if steps >= (len(probes) + 1) * probe_every:
                    score = greedy(backend, plan, steps, probe_episodes, PROBE_SEEDS)["mean"]
                    probes.append((steps, round(time.perf_counter() - t0, 1), score))
                    say(f"{plan.name} seed {plan.seed}: {steps:>7} steps, greedy probe {score:.1f}")
            if score >= stop_return:
                reached = dict(env_steps=steps, wall_s=round(time.perf_counter() - t0, 1))
                break
        wall_run = round(time.perf_counter() - t0, 1)
        with tempfile.TemporaryDirectory() as tmp:
            path = save_policy(backend, plan, steps, keep or tmp)
            final = held_out(load_controller(path), plan.env, eval_episodes)
    finally:
        backend.stop()
    say(f"{plan.name} seed {plan.seed}: {steps} steps, best {best:.1f}, held-out {final['mean']}")
    return dict(
        reached=reached is not None,
        **(reached or {}),
        best_return=best,
        env_steps_run=steps,
        wall_s_run=wall_run,
        held_out=final,
        curve_columns=["env_steps", "wall_s", "return", "demo_share"],
        curve=curve,
        stopped_by="greedy probe" if probe_every else "smoothed training return",
        probes=probes,
    )


def record_demonstrations(controller: Any, env: str, steps: int, path: str) -> dict[str, Any]:
    """The first ``steps`` transitions of ``controller``'s episodes (anything
    :func:`rlsuite.platform.evaluation.build_controller` takes: a checkpoint's path acts
    greedily) on env seeds from :data:`DEMO_SEEDS`, written as parquet at ``path`` (a cut
    last episode ends truncated)."""
    import pyarrow.parquet as pq

    from rlsuite.platform.demo_sources import record
    from rlsuite.platform.evaluation import build_controller

    ctrl, episodes, table = build_controller(controller), 0, None
    while table is None or table.num_rows < steps:
        episodes = max(2 * episodes, 8)
        info = record(ctrl, env, episodes, path, seed=DEMO_SEEDS, name="expert")
        table = pq.read_table(path)
    pq.write_table(table.slice(0, steps), path)
    kept = set(table.slice(0, steps).column("eps_id").to_pylist())
    return dict(path=path, transitions=steps, episodes=len(kept),
                recorded_return_mean=info["return_mean"], recorded_episodes=episodes,
                env_seeds=f"{DEMO_SEEDS}..{DEMO_SEEDS + len(kept) - 1}")  # fmt: skip
