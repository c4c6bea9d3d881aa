"""The ring with k autonomous vehicles, one agent each (a PettingZoo parallel env)."""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np

from rlsuite.apps.traffic.envs.av_agents import AVAgentsEnv
from rlsuite.apps.traffic.envs.ring import MAX_RING, RingConfig, RingSimulation
from rlsuite.apps.traffic.rewards import ring_reward

GAP_HIGH = MAX_RING / 270.0


class RingMultiEnv(AVAgentsEnv):
    """k AVs spaced evenly among the humans of the ring (default 22 vehicles, 3 AVs).

    States:
        per agent ``Box(3)``: its speed / 15, (leader speed - its speed) / 15 and the
        gap to its leader / 270, as in the single-AV ring.
    Actions:
        per agent ``Box(1)``: its acceleration in [-max_decel, max_accel] m/s^2.
    Rewards:
        shared by all agents: ``speed_reward * mean speed of all vehicles -
        accel_penalty * mean |a| over the AVs``, actions as sent, before clipping
        (:func:`~rlsuite.apps.traffic.rewards.ring_reward`).
    Termination:
        every agent is terminated on a collision and truncated after ``horizon``
        controlled steps (after ``warmup_steps`` human-driven ones at reset).

    Keyword arguments are the fields of :class:`~rlsuite.apps.traffic.envs.ring.RingConfig`
    (``num_avs`` defaults to 3 here).
    """

    metadata = {"render_modes": [], "name": "rlsuite_ring_multi_v0", "is_parallelizable": True}

    def __init__(self, **kwargs: Any):
        kwargs.setdefault("num_avs", 3)
        self.cfg = RingConfig.from_kwargs(**kwargs)
        if self.cfg.memory_s:
            raise ValueError(
                "memory_s is kept by rlsuite/Ring-v0 and the ring vector env only; "
                "RingMulti observes Flow's three features (leave memory_s at 0)"
            )
        if self.cfg.num_avs < 1:
            raise ValueError("RingMultiEnv needs num_avs >= 1 (agents are the AVs)")
        self.core = RingSimulation(self.cfg, name="rlsuite/RingMulti-v0")
        self._init_agents()

    @functools.cache  # noqa: B019 - PettingZoo wants the same object each call
    def observation_space(self, agent: str) -> gym.spaces.Box:
        return gym.spaces.Box(
            low=np.array([0.0, -2.0, 0.0], dtype=np.float32),
            high=np.array([2.0, 2.0, GAP_HIGH], dtype=np.float32),
            dtype=np.float32,
        )

    def _obs(self) -> dict[str, np.ndarray]:
        sp = self.observation_space(self.possible_agents[0])
        return {a: np.clip(self.core.observe(a), sp.low, sp.high) for a in self.agents}

    def _reward(self, accels: dict[str, float]) -> float:
        return ring_reward(
            self.core.v,
            list(accels.values()),
            self.cfg.speed_weight(self.core.length),
            self.cfg.accel_penalty,
        )


CONFIG = RingConfig
"""The config class behind the env's keyword arguments (the CLI validates with it)."""
