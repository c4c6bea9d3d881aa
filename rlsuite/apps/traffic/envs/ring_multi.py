"""The ring with k autonomous vehicles, one agent each (a PettingZoo parallel env)."""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np

from rlsuite.apps.traffic.envs.av_agents import AVAgentsEnv
from rlsuite.apps.traffic.envs.ring import (
    Memory,
    RingConfig,
    RingSimulation,
    decode_observation,
    observation_space,
)
from rlsuite.apps.traffic.rewards import ring_reward


class RingMultiEnv(AVAgentsEnv):
    """k AVs spaced evenly among the humans of the ring (default 22 vehicles, 3 AVs).

    States:
        per agent ``Box(3)``: its speed / 15, (leader speed - its speed) / 15 and the
        gap to its leader / 270, as in the single-AV ring. With ``memory_s > 0``,
        ``Box(5)``: also the AV's mean speed / 15 and mean gap / 30 over its last
        ``memory_s`` seconds (the history PI's controller keeps), as in the single-AV ring.
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
        if self.cfg.num_avs < 1:
            raise ValueError("RingMultiEnv needs num_avs >= 1 (agents are the AVs)")
        steps = self.cfg.memory_steps
        self.memory = Memory(self.cfg.num_avs, steps) if steps else None
        self.core = RingSimulation(self.cfg, name="rlsuite/RingMulti-v0")
        self._init_agents()

    def reset(self, seed: int | None = None, options: dict | None = None):
        if self.memory is not None:
            self.memory.reset()
        return super().reset(seed=seed, options=options)

    @functools.cache  # noqa: B019 - PettingZoo wants the same object each call
    def observation_space(self, agent: str) -> gym.spaces.Box:
        return observation_space(self.cfg)

    def _obs(self) -> dict[str, np.ndarray]:
        sp = self.observation_space(self.possible_agents[0])
        obs = {a: self.core.observe(a) for a in self.possible_agents}
        if self.memory is not None:  # every AV's window advances, in possible_agents' order
            vg = np.array([decode_observation(obs[a])[::2] for a in self.possible_agents])
            mem = self.memory.push(vg[:, 0], vg[:, 1]).astype(np.float32)
            obs = {a: np.concatenate([obs[a], mem[i]]) for i, a in enumerate(self.possible_agents)}
        return {a: np.clip(obs[a], sp.low, sp.high) for a in self.agents}

    def _reward(self, accels: dict[str, float]) -> float:
        return ring_reward(
            self.core.v,
            list(accels.values()),
            self.cfg.speed_weight(self.core.length),
            self.cfg.accel_penalty,
        )


CONFIG = RingConfig
"""The config class behind the env's keyword arguments (the CLI validates with it)."""
