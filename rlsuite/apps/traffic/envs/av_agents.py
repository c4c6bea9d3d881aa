"""What the multi-agent traffic envs share: every AV is an agent of a PettingZoo parallel env.

:class:`AVAgentsEnv` holds the episode mechanics of the multi-AV ring and figure-eight
(reset, one step for all agents, a shared reward, termination on a collision, truncation
at the horizon, metrics, close); a subclass builds its simulation and says what each
agent observes (``_obs``) and what the step is worth (``_reward``).
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

from rlsuite.apps.traffic.envs.measured import Measured


class AVAgentsEnv(Measured, ParallelEnv):
    """Base of the multi-AV envs: ``self.cfg`` (a config with ``horizon``, ``max_accel``,
    ``max_decel``) and ``self.core`` (a ring-style simulation with ``av_ids``, ``start``,
    ``control``, ``v``, ``collisions``, ``metrics``, ``trajectories``, ``close``) are set by
    the subclass's ``__init__`` before it calls :meth:`_init_agents`."""

    render_mode = None
    reset_info_key = "ring_length"
    """The name under which each agent's reset info carries the network's length."""

    def _init_agents(self) -> None:
        self.possible_agents = list(self.core.av_ids)
        self.agents: list[str] = []
        self._t = 0

    @functools.cache  # noqa: B019 - PettingZoo wants the same object each call
    def action_space(self, agent: str) -> gym.spaces.Box:
        return gym.spaces.Box(-self.cfg.max_decel, self.cfg.max_accel, shape=(1,), dtype=np.float32)

    def _obs(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _reward(self, accels: dict[str, float]) -> float:
        """The step's reward, shared by every agent (``accels``: the actions as sent)."""
        raise NotImplementedError

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None or not hasattr(self, "_rng"):
            self._rng = np.random.default_rng(seed)
        self.core.start(self._rng)
        self.agents = list(self.possible_agents)
        self._t = 0
        return self._obs(), {a: {self.reset_info_key: self.core.length} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        missing = set(self.agents) - set(actions)
        if missing:
            raise ValueError(f"no action for agent(s) {sorted(missing)}: give one per AV")
        acc = {a: float(np.asarray(actions[a], dtype=float).reshape(-1)[0]) for a in self.agents}
        if not all(np.isfinite(list(acc.values()))):
            raise ValueError(f"actions must be finite accelerations, got {acc!r}")
        self.core.control(acc)  # applies them clipped to the bounds
        self._t += 1
        r = float(self._reward(acc))
        term = self.core.collisions > 0
        trunc = self._t >= self.cfg.horizon
        obs = self._obs()
        agents = list(self.agents)
        if term or trunc:
            self.agents = []
        return (
            obs,
            {a: r for a in agents},
            {a: bool(term) for a in agents},
            {a: bool(trunc) for a in agents},
            {a: {} for a in agents},
        )

    def trajectories(self) -> dict[str, np.ndarray]:
        return self.core.trajectories()

    def render(self) -> None:
        return None
