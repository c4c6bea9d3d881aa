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
    on_row: Callable[[int, float, dict[str, Any]], None] = lambda steps, wall, row: None,
) -> ToTarget:
    """Train ``backend`` (a platform backend; stopped at the end) one iteration at a time
    until a row's ``episode_return_mean`` reaches ``target``, ``max_env_steps`` env steps
    have been sampled or ``max_wall_s`` seconds have passed; ``on_row(env_steps, wall_s,
    row)`` sees each row (a curve's point, a progress line)."""
    steps, best, reached = 0, -math.inf, None
    t0 = time.perf_counter()
    try:
        while steps < max_env_steps and time.perf_counter() - t0 < max_wall_s:
            row = backend.train()
            steps += row["env_steps_this_iter"]
            wall, ret = time.perf_counter() - t0, row["episode_return_mean"]
            best = best if math.isnan(ret) else max(best, ret)
            on_row(steps, wall, row)
            if ret >= target:
                reached = dict(env_steps=steps, wall_s=round(wall, 1))
                break
    finally:
        backend.stop()
    return ToTarget(reached, best, steps, round(time.perf_counter() - t0, 1))
