"""Envs that need memory, registered with the platform: RLlib's StatelessCartPole and a
delayed-recall task.

``rlsuite/StatelessCartPole-v1`` is RLlib's example env
(``ray.rllib.examples.envs.classes.stateless_cartpole``): CartPole without the two
velocities, observing only ``[x, theta]``, so a policy must remember past observations to
balance. RLlib's class has no time limit; here, as CartPole-v1, an episode is truncated
after 500 steps (the best return is then 500, as in RLlib's example's threshold of 350).

``rlsuite/RepeatFirst-v0`` (:class:`RepeatFirst`): repeat the first observation after
``delay`` blank steps, the shape of bsuite's ``memory_len``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

STATELESS_CARTPOLE = "rlsuite/StatelessCartPole-v1"
REPEAT_FIRST = "rlsuite/RepeatFirst-v0"


def stateless_cartpole(max_episode_steps: int = 500, **kwargs: Any) -> gym.Env:
    """RLlib's ``StatelessCartPole`` with CartPole-v1's 500-step limit."""
    from ray.rllib.examples.envs.classes.stateless_cartpole import StatelessCartPole

    return gym.wrappers.TimeLimit(StatelessCartPole(**kwargs), max_episode_steps)


class RepeatFirst(gym.Env):
    """Repeat the first observation after ``delay`` steps: a cue (+1 or -1, in
    ``obs[0]``) shows at the first step only; after ``delay`` blank steps the agent's
    next action must name the cue's side (action 1 for +1), for a reward of +1, else -1;
    the episode then ends (``delay + 1`` steps; the last observation is ``[0, 1]``).

    A feed-forward policy sees nothing but blanks when it answers (for ``delay >= 1``),
    so it cannot beat chance (expected return 0); a policy that remembers the cue scores
    1 every episode. ``delay=0`` needs no memory (the cue is seen when answering).

    Example::

        >>> env = RepeatFirst(delay=2)
        >>> obs, _ = env.reset(seed=0)
        >>> answer = int(obs[0] > 0)
        >>> [env.step(answer)[1:3] for _ in range(3)]
        [(0.0, False), (0.0, False), (1.0, True)]
    """

    def __init__(self, delay: int = 3):
        if int(delay) < 0:
            raise ValueError(f"delay must be >= 0, got {delay}")
        self.delay = int(delay)
        self.observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = spaces.Discrete(2)
        self._cue, self._t = 0, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._cue, self._t = int(self.np_random.integers(2)), 0
        return np.array([2.0 * self._cue - 1.0, 0.0], np.float32), {}

    def step(self, action):
        self._t += 1
        if self._t <= self.delay:
            return np.zeros(2, np.float32), 0.0, False, False, {}
        reward = 1.0 if int(action) == self._cue else -1.0
        return np.array([0.0, 1.0], np.float32), reward, True, False, {}
