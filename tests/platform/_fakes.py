"""Tiny envs with a known optimum, for platform unit tests (pure logic, no external system)."""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from rlsuite.platform.memory_envs import RepeatFirst as CueEnv  # noqa: F401 - the memory task


class IdentityEnv(gym.Env):
    """Reward 1 when the action equals the observed class (SB3's IdentityEnv shape).

    The optimum is a return of ``horizon``; random play gets ``horizon / n``.
    """

    def __init__(self, n: int = 3, horizon: int = 20):
        self.n, self.horizon = n, horizon
        self.observation_space = spaces.Box(0.0, 1.0, (n,), np.float32)
        self.action_space = spaces.Discrete(n)
        self._t, self._target = 0, 0
        self.hits = 0

    def _obs(self):
        o = np.zeros(self.n, np.float32)
        o[self._target] = 1.0
        return o

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t, self.hits = 0, 0
        self._target = int(self.np_random.integers(self.n))
        return self._obs(), {}

    def step(self, action):
        r = float(int(action) == self._target)
        self.hits += int(r)
        self._t += 1
        self._target = int(self.np_random.integers(self.n))
        return self._obs(), r, False, self._t >= self.horizon, {}

    def episode_metrics(self):
        return {"hit_rate": self.hits / max(1, self._t)}


class MatchingGame(ParallelEnv):
    """Two agents each see a bit and are rewarded for echoing it."""

    metadata = {"name": "matching_v0"}

    def __init__(self, horizon: int = 10):
        self.possible_agents = ["a0", "a1"]
        self.horizon = horizon
        self.agents: list[str] = []
        self._rng = np.random.default_rng(0)

    @functools.cache  # noqa: B019 - per-agent spaces are constant
    def observation_space(self, agent):
        return spaces.Box(0.0, 1.0, (2,), np.float32)

    @functools.cache  # noqa: B019
    def action_space(self, agent):
        return spaces.Discrete(2)

    def _obs(self):
        """Each agent's observation; sets the actions that score (``self._bits``)."""
        self._bits = {a: int(self._rng.integers(2)) for a in self.agents}
        return {a: np.eye(2, dtype=np.float32)[b] for a, b in self._bits.items()}

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self._t = 0
        return self._obs(), {a: {} for a in self.agents}

    def step(self, actions):
        rew = {a: float(int(actions[a]) == self._bits[a]) for a in self.agents}
        self._t += 1
        done = self._t >= self.horizon
        trunc = {a: done for a in self.agents}
        term = {a: False for a in self.agents}
        obs = self._obs()
        infos = {a: {} for a in self.agents}
        if done:
            self.agents = []
        return obs, rew, term, trunc, infos

    def close(self):
        pass


class CartPolePD:
    """A hand-written CartPole controller (returns ~500): the imitation plan's expert."""

    name = "pd-expert"

    def act(self, obs):
        return int(obs[2] + 0.5 * obs[3] + 0.01 * obs[1] > 0)


class RandomCartPole:
    name = "random"

    def reset(self, seed):
        self.rng = np.random.default_rng(seed)

    def act(self, obs):
        return int(self.rng.integers(2))


class MaskedChoiceEnv(gym.Env):
    """Each step some of the ``n`` actions are unavailable; the observation is one bias
    value, then the 0/1 mask of the available ones (from index 1). Reward +1 for an
    available action, -1 for another: an episode's return is ``horizon`` exactly when no
    unavailable action was taken; random play gets about 0 (half of them are masked)."""

    MASK_OFFSET = 1

    def __init__(self, n: int = 4, horizon: int = 20):
        self.n, self.horizon = int(n), int(horizon)
        self.observation_space = spaces.Box(0.0, 1.0, (1 + self.n,), np.float32)
        self.action_space = spaces.Discrete(self.n)
        self._t, self._mask = 0, np.ones(self.n, np.float32)

    def _obs(self):
        m = np.zeros(self.n, np.float32)
        m[self.np_random.choice(self.n, self.n // 2, replace=False)] = 1.0
        self._mask = m
        return np.concatenate([[1.0], m]).astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self._obs(), {}

    def step(self, action):
        self._t += 1
        reward = 1.0 if self._mask[int(action)] else -1.0
        return self._obs(), reward, False, self._t >= self.horizon, {}
