"""A tiny continuous-action env with a known optimum (pure logic, no external system)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from rlsuite.platform import envs


class MatchPoint(gym.Env):
    """One-step episodes: observe a point ``x`` in [-1, 1]^2, act ``a`` in [-2, 2]^2,
    score ``-|a - x|^2``.

    States: ``x``, uniform in the square. Actions: a Box in [-2, 2]^2 (so mapping the
    bounds onto CEM's [-1, 1] matters). Rewards: ``-|a - x|^2``: 0 at best, about -2.7
    for uniform random actions. Termination: after the one step.
    """

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.x = self.np_random.uniform(-1, 1, size=2).astype(np.float32)
        return self.x.copy(), {}

    def step(self, action):
        r = -float(np.sum((np.asarray(action) - self.x) ** 2))
        return self.x.copy(), r, True, False, {}


envs.register("rlsuite-test/MatchPoint-v0", f"{__name__}:MatchPoint")
