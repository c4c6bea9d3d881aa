"""The traffic app's reward functions, one per scenario family, shared by every env of the family.

- :func:`ring_reward` (wave attenuation): the scalar ring
  (``rlsuite/Ring-v0``), the ring vector env (N rings in one simulation) and
  the multi-agent ring (``rlsuite/RingMulti-v0``).
- :func:`desired_velocity_reward`: the figure-eight (``rlsuite/FigureEight-v0``).

Both are pure functions of the vehicles' speeds (and the AVs' actions), so the
envs differ only in how they batch them.

Example::

    >>> import numpy as np
    >>> float(ring_reward(np.array([2.0, 4.0]), np.array([0.5]), 0.2, 4.0))
    -1.4
    >>> float(desired_velocity_reward(np.array([20.0, 20.0]), 20.0))
    1.0
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike


def ring_reward(
    speeds: ArrayLike, accels: ArrayLike, speed_reward: float, accel_penalty: float
) -> np.ndarray:
    """Flow's wave-attenuation reward: ``speed_reward * mean speed - accel_penalty * mean |a|``.

    ``speeds`` are every vehicle's speed (m/s) and ``accels`` the AVs' acceleration
    actions (m/s^2), each along the last axis: ``(vehicles,)`` and ``(avs,)`` for one
    ring, ``(rings, vehicles)`` and ``(rings, avs)`` for a batch of rings (one reward
    per ring). Flow's weights are 4/20 and 4 (:class:`~rlsuite.apps.traffic.envs.ring.RingConfig`).
    As in Flow, ``accels`` are the actions as the policy sent them, before they are
    clipped to the bounds: asking for more than the car can do is charged too, so a
    policy pinned at a bound still feels the penalty's gradient.
    """
    v = np.asarray(speeds, dtype=float)
    a = np.abs(np.asarray(accels, dtype=float))
    return speed_reward * v.mean(axis=-1) - accel_penalty * a.mean(axis=-1)


def desired_velocity_reward(speeds: ArrayLike, target_velocity: float) -> float:
    """Flow's desired-velocity reward: ``max(0, |v_des| - |v - v_des|) / |v_des|``.

    Norms are over the vector of all ``speeds`` (m/s), with ``|v_des|`` the norm of
    ``target_velocity`` for every vehicle; 1 when everyone drives at the target, 0
    when the speeds are that far from it or farther.
    """
    v = np.asarray(speeds, dtype=float)
    max_cost = target_velocity * math.sqrt(len(v))
    return max(max_cost - float(np.linalg.norm(v - target_velocity)), 0.0) / max_cost
