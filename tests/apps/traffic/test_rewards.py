"""The shared reward functions give exactly the numbers the envs' own formulas gave."""

from __future__ import annotations

import math

import numpy as np

from rlsuite.apps.traffic.rewards import desired_velocity_reward, ring_reward


def test_ring_reward_matches_the_scalar_multi_and_vector_formulas_exactly():
    rng = np.random.default_rng(0)
    for _ in range(200):
        v = rng.uniform(0.0, 12.0, 22)
        a = float(rng.uniform(-1.0, 1.0))
        acc = list(rng.uniform(-1.0, 1.0, 3))
        vs, avs = rng.uniform(0.0, 12.0, (8, 22)), rng.uniform(-1.0, 1.0, 8)
        assert float(ring_reward(v, [a], 0.2, 4.0)) == 0.2 * float(v.mean()) - 4.0 * abs(a)
        multi = 0.2 * float(v.mean()) - 4.0 * float(np.mean(np.abs(acc)))
        assert float(ring_reward(v, acc, 0.2, 4.0)) == multi
        vec = 0.2 * vs.mean(axis=1) - 4.0 * np.abs(avs)
        assert np.array_equal(ring_reward(vs, avs[:, None], 0.2, 4.0), vec)


def test_desired_velocity_reward_matches_flow_and_its_bounds():
    rng = np.random.default_rng(1)
    for _ in range(200):
        v = rng.uniform(0.0, 30.0, 14)
        max_cost = 20.0 * math.sqrt(len(v))
        old = max(max_cost - float(np.linalg.norm(v - 20.0)), 0.0) / max_cost
        assert desired_velocity_reward(v, 20.0) == old
    assert desired_velocity_reward(np.full(14, 20.0), 20.0) == 1.0
    assert desired_velocity_reward(np.zeros(14), 20.0) == 0.0
