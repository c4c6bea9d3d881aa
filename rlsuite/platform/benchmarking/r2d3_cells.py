"""The steps of R2D3's measurements (``benchmarks/platform/r2d3.py``): a plan trained to a
return or a budget, its final policy acting greedily on held-out env seeds, a demonstrator's
own score on the same seeds, and demonstrations recorded from a checkpoint.

Env seeds: demonstrations are recorded on seeds from :data:`DEMO_SEEDS`, the held-out
evaluation runs on seeds from :data:`HELD_OUT_SEEDS`; training envs are seeded by the plan.
"""

from __future__ import annotations

import math
import os
import shutil
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
    """Train ``plan`` until its smoothed training return reaches ``stop_return``,
    ``max_env_steps`` env steps or ``max_wall_s`` seconds, then act greedily on
    ``eval_episodes`` held-out seeds. Wall time counts from the first iteration.

    With ``probe_every``, the policy acts greedily on ``probe_episodes`` probe seeds every
    ``probe_every`` env steps; training stops when a probe's mean reaches ``stop_return``,
    and the policy chosen is the one of the best probe (the last, without probes).
    ``held_out`` is the chosen policy's, ``held_out_last`` the last one's. ``keep``: a
    folder to copy the chosen policy's checkpoint to."""
    from rlsuite.platform.backends.registry import make_backend
    from rlsuite.platform.checkpoints import load_controller

    def score(path: str, episodes: int, first: int) -> dict[str, Any]:
        return held_out(load_controller(path), plan.env, episodes, first)

    work = tempfile.mkdtemp(prefix="r2d3-")
    chosen, probe, last = (os.path.join(work, d) for d in ("chosen", "probe", "last"))
    backend = make_backend(plan)
    curve, probes, steps, best, reached, chosen_at = [], [], 0, -math.inf, None, None
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
            stop = ret
            if probe_every:
                stop = -math.inf
                if steps >= (len(probes) + 1) * probe_every:
                    shutil.rmtree(probe, ignore_errors=True)
                    stop = score(save_policy(backend, plan, steps, probe), probe_episodes,
                                 PROBE_SEEDS)["mean"]  # fmt: skip
                    if not probes or stop >= max(p[2] for p in probes):
                        shutil.rmtree(chosen, ignore_errors=True)
                        os.replace(probe, chosen)
                        chosen_at = steps
                    probes.append((steps, round(time.perf_counter() - t0, 1), stop))
                    say(f"{plan.name} seed {plan.seed}: {steps:>7} steps, greedy probe {stop:.1f}")
            if stop >= stop_return:
                reached = dict(env_steps=steps, wall_s=round(time.perf_counter() - t0, 1))
                break
        wall_run = round(time.perf_counter() - t0, 1)
        final_last = score(save_policy(backend, plan, steps, last), eval_episodes, HELD_OUT_SEEDS)
        final = score(chosen, eval_episodes, HELD_OUT_SEEDS) if chosen_at else final_last
        if keep:
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(chosen if chosen_at else last, keep)
    finally:
        backend.stop()
        shutil.rmtree(work, ignore_errors=True)
    say(f"{plan.name} seed {plan.seed}: {steps} steps, best {best:.1f}, held-out {final['mean']}")
    return dict(
        reached=reached is not None,
        **(reached or {}),
        best_return=best,
        env_steps_run=steps,
        wall_s_run=wall_run,
        held_out=final,
        held_out_last=final_last,
        chosen="the best greedy probe's policy" if chosen_at else "the last policy",
        chosen_at_env_steps=chosen_at or steps,
        curve_columns=["env_steps", "wall_s", "return", "demo_share"],
        curve=curve,
        stopped_by="greedy probe" if probe_every else "smoothed training return",
        probe_columns=["env_steps", "wall_s", "greedy_return"],
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
