"""One seeded episode of a scalar traffic env under given actions, for the tests that
compare a vector env's copy with the scalar env it stands for."""

from __future__ import annotations

from typing import Any

import numpy as np


def scalar_episode(
    env: Any, seed: int, actions: Any
) -> tuple[np.ndarray, np.ndarray, dict[str, float], dict[str, Any]]:
    """``env`` reset with ``seed`` and stepped with each of ``actions``: its observations
    (the reset's first), rewards, ``episode_metrics()`` and the reset's info. Closes it."""
    try:
        o, info = env.reset(seed=seed)
        obs, rew = [o], []
        for a in actions:
            o, r, *_ = env.step(a)
            obs.append(o)
            rew.append(r)
        return np.array(obs), np.array(rew), env.episode_metrics(), info
    finally:
        env.close()
