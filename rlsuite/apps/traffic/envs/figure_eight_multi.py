"""Flow's figure-eight with k autonomous vehicles, one agent each (a PettingZoo parallel env).

Flow's figureeight1 (7 AVs interleaved with 7 humans) and figureeight2 (14 AVs) train
one centralised policy on a 28-number state; here every AV is an agent acting on its own
view of that state, and all agents can share one policy (RLlib multi-agent).
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np

from rlsuite.apps.traffic.envs.av_agents import AVAgentsEnv
from rlsuite.apps.traffic.envs.figure_eight import (
    FULL_SPEED_SCALE,
    FigureEightConfig,
    FigureEightSimulation,
)
from rlsuite.apps.traffic.rewards import desired_velocity_reward

LOCAL_FEATURES = 3
"""The ring-style features at the front of each agent's observation."""


class FigureEightMultiEnv(AVAgentsEnv):
    """The figure-eight with k AVs, each an agent (default 7 of 14 vehicles: Flow's
    figureeight1; 1 and 14 are figureeight0 and figureeight2).

    States:
        per agent ``Box(4 + 2n)``: its speed / 15, (leader speed - its speed) / 15 and gap
        to its leader / 270 (as on the ring); its position along the loop / loop length
        (where the crossing is); then Flow's full state seen from the agent: the n
        vehicles' speeds / 30 and their distances ahead of it along the loop / loop
        length, in loop order starting with the agent itself (so the first distance is
        0). Every agent sees the same state rotated to itself, so one shared policy can
        tell them apart; the AVs' slots in that order are fixed by ``num_avs`` (Flow's
        placement, :func:`~rlsuite.apps.traffic.envs.figure_eight.vehicle_ids`).
    Actions:
        per agent ``Box(1)``: its acceleration in [-max_decel, max_accel] (default +-3 m/s^2).
    Rewards:
        shared by all agents: Flow's desired-velocity reward over all vehicles' speeds
        (:func:`~rlsuite.apps.traffic.rewards.desired_velocity_reward`, target 20 m/s).
    Termination:
        every agent is terminated on a collision and truncated after ``horizon`` steps
        (1500 = 150 s).

    Keyword arguments are the fields of
    :class:`~rlsuite.apps.traffic.envs.figure_eight.FigureEightConfig` (``num_avs``
    defaults to 7 here); the humans drive as Flow's (``human_model="flow"``).
    """

    metadata = {
        "render_modes": [],
        "name": "rlsuite_figure_eight_multi_v0",
        "is_parallelizable": True,
    }

    def __init__(self, **kwargs: Any):
        kwargs.setdefault("num_avs", 7)
        self.cfg = FigureEightConfig.from_kwargs(**kwargs)
        if self.cfg.num_avs < 1:
            raise ValueError("FigureEightMultiEnv needs num_avs >= 1 (agents are the AVs)")
        self.core = FigureEightSimulation(self.cfg, name="rlsuite/FigureEightMulti-v0")
        self._init_agents()
        self._slot = {a: self.core.ids.index(a) for a in self.possible_agents}

    @functools.cache  # noqa: B019 - PettingZoo wants the same object each call
    def observation_space(self, agent: str) -> gym.spaces.Box:
        n = self.cfg.num_vehicles
        low = np.concatenate([[0.0, -2.0, 0.0, 0.0], np.zeros(2 * n)])
        high = np.concatenate([[2.0, 2.0, 8.0, 1.0], np.full(n, 2.0), np.ones(n)])
        return gym.spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)

    def _obs(self) -> dict[str, np.ndarray]:
        core = self.core
        sp = self.observation_space(self.possible_agents[0])
        if not self.agents:
            return {}
        n = len(core.x)
        slots = np.array([self._slot[a] for a in self.agents])
        order = (slots[:, None] + np.arange(n)) % n  # each agent's loop order, from itself
        own = np.array([core.observe(a) for a in self.agents])
        rows = np.concatenate(
            [
                own,
                (core.x[slots] / core.length)[:, None],
                core.v[order] / FULL_SPEED_SCALE,
                (core.x[order] - core.x[slots][:, None]) % core.length / core.length,
            ],
            axis=1,
        )
        rows = np.clip(rows, sp.low, sp.high).astype(np.float32)
        return dict(zip(self.agents, rows))

    reset_info_key = "loop_length"

    def _reward(self, accels: dict[str, float]) -> float:
        return desired_velocity_reward(self.core.v, self.cfg.target_velocity)


CONFIG = FigureEightConfig
"""The config class behind the env's keyword arguments (the CLI validates with it)."""
