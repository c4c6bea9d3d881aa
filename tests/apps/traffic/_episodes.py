"""One seeded episode of a scalar traffic env under given actions, for the tests that
compare a vector env's copy with the scalar env it stands for; an env whose simulation
crashed, for the tests of how an env recovers; and a vector env's refusals."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest


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


@contextlib.contextmanager
def crashed(env: Any, seed: int = 0) -> Iterator[Any]:
    """``env`` reset with ``seed``, then its in-process (libsumo) simulation closed under
    it, as a crashed SUMO leaves it; the env is closed on exit."""
    try:
        env.reset(seed=seed)
        env.core.sim.conn.close()
        yield env
    finally:
        env.close()


def check_refusals(vector_env: Any, bad: dict[str, dict[str, Any]], **config: Any) -> None:
    """``vector_env`` (a class) refuses each of ``bad``'s options (keyed by the pattern its
    ``ValueError`` matches), and a copy of 2 envs with ``config`` refuses a non-finite
    action and a reset with the wrong number of seeds."""
    for match, options in bad.items():
        with pytest.raises(ValueError, match=match):
            vector_env(**options)
    env = vector_env(num_envs=2, **config)
    try:
        env.reset(seed=0)
        action = np.zeros(env.action_space.shape, dtype=np.float32)
        action[0, 0] = np.nan
        with pytest.raises(ValueError, match="finite"):
            env.step(action)
        with pytest.raises(ValueError, match="2 seeds"):
            env.reset(seed=[1, 2, 3])
    finally:
        env.close()
