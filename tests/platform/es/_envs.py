"""Small envs and settings shared by the es tests (pure logic, no external system)."""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np

from rlsuite.platform import envs
from tests.platform._fakes import MatchingGame

# Small, fast settings shared by the Ray tests: a 16-unit policy, a 200k noise table.
FAST = dict(env="CartPole-v1", hidden=(16,), noise_table_size=200_000, sigma=0.1, lr=0.05)


class SlowCartPole(gym.Wrapper):
    """CartPole that takes 10 ms per step, so a generation lasts long enough to kill a worker."""

    def __init__(self, delay_s: float = 0.01):
        super().__init__(gym.make("CartPole-v1"))
        self.delay_s = delay_s

    def step(self, action):
        time.sleep(self.delay_s)
        return self.env.step(action)


class MatchSign(MatchingGame):
    """A two-agent PettingZoo parallel env: each agent scores 1 when its action is the
    sign of its observation (optimum: 10 per agent, 20 in all; random: about 10)."""

    metadata = {"name": "match_sign_v0", "render_modes": []}

    def observation_space(self, agent):
        return gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def _obs(self):
        x = {a: self._rng.uniform(-1, 1, size=1).astype(np.float32) for a in self.agents}
        self._bits = {a: int(v[0] > 0) for a, v in x.items()}
        return x


envs.register("rlsuite-test/SlowCartPole-v0", f"{__name__}:SlowCartPole")
envs.register("rlsuite-test/MatchSign-v0", f"{__name__}:MatchSign", multi_agent=True)
