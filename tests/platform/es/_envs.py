"""Small envs and settings shared by the es tests (pure logic, no external system)."""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np

from rlsuite.platform import envs

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


class MatchSign:
    """A two-agent PettingZoo parallel env: each agent scores 1 when its action is the
    sign of its observation (optimum: 10 per agent, 20 in all; random: about 10)."""

    metadata = {"name": "match_sign_v0", "render_modes": []}

    def __init__(self, horizon: int = 10):
        self.possible_agents = ["a0", "a1"]
        self.agents: list[str] = []
        self.horizon = horizon
        self._obs_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self._act_space = gym.spaces.Discrete(2)
        self._rng = np.random.default_rng(0)

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    def _draw(self):
        self._x = {a: self._rng.uniform(-1, 1, size=1).astype(np.float32) for a in self.agents}
        return dict(self._x)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        return self._draw(), {a: {} for a in self.agents}

    def step(self, actions):
        rew = {a: float(int(actions[a]) == int(self._x[a][0] > 0)) for a in self.agents}
        self.t += 1
        done = self.t >= self.horizon
        term = {a: False for a in self.agents}
        trunc = {a: done for a in self.agents}
        obs = self._draw()
        if done:
            self.agents = []
        return obs, rew, term, trunc, {a: {} for a in rew}

    def close(self):
        pass


envs.register("rlsuite-test/SlowCartPole-v0", f"{__name__}:SlowCartPole")
envs.register("rlsuite-test/MatchSign-v0", f"{__name__}:MatchSign", multi_agent=True)
