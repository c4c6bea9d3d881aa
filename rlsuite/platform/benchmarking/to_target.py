"""A plan trained until its smoothed return reaches a target, or an env-step or wall budget
runs out: what ``platform_apex --part learning``, ``platform_r2d2`` and
``platform_cartpole450`` measure per plan and seed."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToTarget:
    """How one run to a target went."""

    reached: dict[str, float] | None
    """``env_steps`` and ``wall_s`` at the first row at or above the target (None: missed)."""
    best_return: float
    """The best smoothed return of any row (-inf when none had one)."""
    env_steps_run: int
    """Env steps sampled in all (the earlier pieces' included)."""
    wall_s_run: float
    """Seconds from the first iteration to the backend's stop (the earlier pieces'
    included, a save at a cut excluded)."""


def train_to_target(
    backend: Any,
    target: float,
    max_env_steps: int,
    max_wall_s: float,
    on_row: Callable[[int, float, dict[str, Any]], float | None] = lambda steps, wall, row: None,
    finish: Callable[[int, float], None] = lambda steps, wall: None,
    *,
    env_steps_before: int = 0,
    wall_s_before: float = 0.0,
    on_cut: Callable[[Any], None] | None = None,
) -> ToTarget:
    """Train ``backend`` (a platform backend; stopped at the end) one iteration at a time
    until a row's ``episode_return_mean`` reaches ``target``, ``max_env_steps`` env steps
    have been sampled or ``max_wall_s`` seconds have passed.

    ``on_row(env_steps, wall_s, row)`` sees each row (a curve's point, a progress line); a
    number it returns is compared with ``target`` instead of the row's return (a greedy
    probe's score; -inf: do not stop here). ``finish(env_steps, wall_s)`` runs once training
    ended, before the backend stops (a final evaluation of the trained policy).

    A run that goes on from an earlier piece starts its counts at ``env_steps_before`` and
    ``wall_s_before`` (``max_wall_s`` bounds this piece alone); ``on_cut(backend)`` is
    called before the stop when the wall budget ended it short of the target and of
    ``max_env_steps`` (to save it; its seconds are not counted)."""
    steps, best, reached = env_steps_before, -math.inf, None
    t0 = time.perf_counter()
    saving = 0.0
    try:
        while steps < max_env_steps and time.perf_counter() - t0 < max_wall_s:
            row = backend.train()
            steps += row["env_steps_this_iter"]
            wall, ret = wall_s_before + time.perf_counter() - t0, row["episode_return_mean"]
            best = best if math.isnan(ret) else max(best, ret)
            stop = on_row(steps, wall, row)
            if (ret if stop is None else stop) >= target:
                reached = dict(
                    env_steps=steps, wall_s=round(wall_s_before + time.perf_counter() - t0, 1)
                )
                break
        finish(steps, round(wall_s_before + time.perf_counter() - t0, 1))
        if on_cut is not None and reached is None and steps < max_env_steps:
            t_cut = time.perf_counter()
            on_cut(backend)
            saving = time.perf_counter() - t_cut
    finally:
        backend.stop()
    wall_s_run = wall_s_before + time.perf_counter() - t0 - saving
    return ToTarget(reached, best, steps, round(wall_s_run, 1))
