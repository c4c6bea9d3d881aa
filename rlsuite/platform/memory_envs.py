"""Envs that need memory, registered with the platform: RLlib's StatelessCartPole.

``rlsuite/StatelessCartPole-v1`` is RLlib's example env
(``ray.rllib.examples.envs.classes.stateless_cartpole``): CartPole without the two
velocities, observing only ``[x, theta]``, so a policy must remember past observations to
balance. RLlib's class has no time limit; here, as CartPole-v1, an episode is truncated
after 500 steps (the best return is then 500, as in RLlib's example's threshold of 350).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

STATELESS_CARTPOLE = "rlsuite/StatelessCartPole-v1"


def stateless_cartpole(max_episode_steps: int = 500, **kwargs: Any) -> gym.Env:
    """RLlib's ``StatelessCartPole`` with CartPole-v1's 500-step limit."""
    from ray.rllib.examples.envs.classes.stateless_cartpole import StatelessCartPole

    return gym.wrappers.TimeLimit(StatelessCartPole(**kwargs), max_episode_steps)
