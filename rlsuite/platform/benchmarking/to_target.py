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
    """Env steps sampled in all."""
    wall_s_run: float
    """Seconds from the first iteration to the backend's stop."""


def train_to_target(
    backend: Any,
    target: float,
    max_env_steps: int,
    max_wall_s: float,
    on_row: Callable[[int, float, dict[str, Any]], float | None] = lambda steps, wall, row: None,
    finish: Callable[[int, float], None] = lambda steps, wall: None,
) -> ToTarget:
    """Train ``backend`` (a platform backend; stopped at the end) one iteration at a time
    until a row's ``episode_return_mean`` reaches ``target``, ``max_env_steps`` env steps
    have been sampled or ``max_wall_s`` seconds have passed.

    ``on_row(env_steps, wall_s, row)`` sees each row (a curve's point, a progress line); a
    number it returns is compared with ``target`` instead of the row's return (a greedy
    probe's score; -inf: do not stop here). ``finish(env_steps, wall_s)`` runs once training
    ended, before the backend stops (a final evaluation of the trained policy)."""
    steps, best, reached = 0, -math.inf, None
    t0 = time.perf_counter()
    try:
        while steps < max_env_steps and time.perf_counter() - t0 < max_wall_s:
            row = backend.train()
            steps += row["env_steps_this_iter"]
            wall, ret = time.perf_counter() - t0, row["episode_return_mean"]
            best = best if math.isnan(ret) else max(best, ret)
            stop = on_row(steps, wall, row)
            if (ret if stop is None else stop) >= target:
                reached = dict(env_steps=steps, wall_s=round(time.perf_counter() - t0, 1))
                break
        finish(steps, round(time.perf_counter() - t0, 1))
    finally:
        backend.stop()
    return ToTarget(reached, best, steps, round(time.perf_counter() - t0, 1))
