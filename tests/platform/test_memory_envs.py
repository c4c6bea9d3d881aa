"""The memory envs registered with the platform (pure logic: no Ray)."""

from __future__ import annotations

import pytest

from rlsuite.platform import envs
from rlsuite.platform.memory_envs import REPEAT_FIRST


def _play(env, answer, seed):
    obs, _ = env.reset(seed=seed)
    cue, total, done, steps = int(obs[0] > 0), 0.0, False, 0
    while not done:
        obs, r, done, trunc, _ = env.step(answer(cue))
        total, steps = total + r, steps + 1
        assert not trunc
    return total, steps


@pytest.mark.parametrize("delay", [0, 5])
def test_repeat_first_rewards_the_remembered_cue_after_the_delay(delay):
    envs.check(REPEAT_FIRST, {"delay": delay})  # gymnasium's env checker
    env = envs.make(REPEAT_FIRST, {"delay": delay})
    right = [_play(env, lambda c: c, seed) for seed in range(10)]
    wrong = [_play(env, lambda c: 1 - c, seed) for seed in range(10)]
    assert right == [(1.0, delay + 1)] * 10 and wrong == [(-1.0, delay + 1)] * 10
    cues = {int(env.reset(seed=s)[0][0] > 0) for s in range(10)}
    assert cues == {0, 1}  # both cues occur


def test_repeat_first_refuses_a_negative_delay():
    with pytest.raises(ValueError, match="delay must be >= 0, got -1"):
        envs.make(REPEAT_FIRST, {"delay": -1})
