"""The addition env: gymnasium API, dynamics, metrics, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.apps.hierarchy.envs.addition import (
    BLANK,
    LEFT,
    STOP_ACTION,
    AdditionEnv,
    describe_action,
    move_action,
    write_action,
)
from rlsuite.platform import envs


def test_registered_and_passes_check_env():
    assert "rlsuite/Addition-v0" in envs.registered()
    assert "rlsuite/PickPlace-v0" in envs.registered()
    envs.check("rlsuite/Addition-v0", {"length": 3})


def test_observation_is_one_hot_of_symbols_under_pointers():
    env = AdditionEnv(length=4)
    obs, info = env.reset(seed=3)
    assert obs.shape == (44,) and obs.sum() == 4
    sym = obs.reshape(4, 11).argmax(1)
    assert sym[0] == info["a"] % 10 and sym[1] == info["b"] % 10
    assert sym[2] == BLANK and sym[3] == BLANK


def test_write_move_stop_and_metrics():
    env = AdditionEnv(length=1)
    env.reset(seed=0)
    env.set_problem(7, 5)  # 12
    env.step(write_action(3, 2))
    env.step(move_action(3, LEFT))
    obs, r, term, trunc, _ = env.step(write_action(3, 1))
    assert obs.reshape(4, 11)[3].argmax() == 1
    obs, r, term, trunc, _ = env.step(STOP_ACTION)
    assert term and not trunc and r == 1.0
    assert env.episode_metrics()["correct"] == 1.0
    env.set_problem(7, 5)
    env.step(write_action(3, 2))
    _, r, term, _, _ = env.step(STOP_ACTION)
    assert term and r == 0.0  # the leading 1 is missing
    m = env.episode_metrics()
    assert m["correct"] == 0.0 and 0 < m["digit_accuracy"] < 1


def test_truncates_at_max_steps_and_pointers_stay_on_tape():
    env = AdditionEnv(length=2, max_steps=5)
    env.reset(seed=0)
    for _ in range(4):
        _, _, term, trunc, _ = env.step(move_action(0, 1))  # right, off the tape
        assert not term and not trunc
    assert env.ptr[0] == 0
    _, _, term, trunc, _ = env.step(move_action(0, 1))
    assert trunc and not term


def test_same_seed_same_problem():
    a, b = AdditionEnv(length=8), AdditionEnv(length=8)
    assert a.reset(seed=5)[1] == b.reset(seed=5)[1]
    assert a.reset(seed=6)[1] != b.reset(seed=5)[1]


@pytest.mark.parametrize("kwargs", [{"length": 0}, {"length": -3}, {"length": 2, "max_steps": 0}])
def test_bad_config_is_a_clear_error(kwargs):
    with pytest.raises(ValueError, match="length|max_steps"):
        AdditionEnv(**kwargs)


def test_bad_actions_are_clear_errors():
    env = AdditionEnv(length=2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action must be in"):
        env.step(99)
    with pytest.raises(ValueError, match="digit in 0..9"):
        write_action(3, 10)
    assert describe_action(write_action(2, 1)) == "WRITE(carry, 1)"
    assert describe_action(np.int64(STOP_ACTION)) == "STOP"
