"""PandaGraspEnv on real pybullet: the split, the scripted grasp, repeatability, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.apps.hierarchy.robot.grasp import OBS_DIM, PandaGraspEnv, object_split
from rlsuite.platform import envs


def test_registered_env_passes_gymnasium_check_env():
    assert envs.spec("rlsuite/PandaGrasp-v0").entry_point.endswith("robot.grasp:PandaGraspEnv")
    envs.check("rlsuite/PandaGrasp-v0", {"objects": "test"})


def test_held_out_objects_are_kuka_diverse_object_envs_split():
    train, test = object_split("train"), object_split("test")
    assert len(train) == 900 and len(test) == 100 and not set(train) & set(test)
    assert all(i % 10 == 0 for i in test)
    env = PandaGraspEnv(objects="test")
    try:
        seen = {env.reset(seed=s)[1]["object"] for s in range(5)}
    finally:
        env.close()
    assert seen <= set(test) and len(seen) > 1


def test_a_grasp_at_the_object_lifts_it_and_one_beside_it_does_not():
    # object 473 at seed 1 (a train object): aimed at its box's centre, yaw 0, it comes up;
    # 8 cm beside it (along x: the fingers close along y) they close on air. Same seed, same
    # scene: repeatable.
    env = PandaGraspEnv(objects="train")
    try:
        results = []
        for aim in ("centre", "beside", "centre"):
            obs, info = env.reset(seed=1)
            assert obs.shape == (OBS_DIM,) and env.observation_space.contains(obs)
            x, y = obs[0], obs[1]
            act = np.array([x, y, 0.0] if aim == "centre" else [x - 1.0, y, 0.0], np.float32)
            _, reward, terminated, truncated, step_info = env.step(act)
            assert terminated and not truncated and step_info["success"] == (reward == 1.0)
            assert env.episode_metrics() == {"success": reward}
            results.append((info["object"], reward))
        with pytest.raises(RuntimeError, match="reset"):
            env.step(np.zeros(3, np.float32))  # one grasp per episode
    finally:
        env.close()
    assert results[0] == results[2] and results[0][1] == 1.0 and results[1][1] == 0.0, results


def test_bad_config_and_actions_give_clear_errors():
    with pytest.raises(ValueError, match="objects must be 'train', 'test' or 'all'"):
        PandaGraspEnv(objects="heldout")
    with pytest.raises(ValueError, match="scale must be a number"):
        PandaGraspEnv(scale=3.0)
    env = PandaGraspEnv()
    try:
        with pytest.raises(RuntimeError, match="reset"):
            env.step(np.zeros(3, np.float32))
        env.reset(seed=0)
        with pytest.raises(ValueError, match="action must be 3 finite numbers"):
            env.step(np.zeros(4, np.float32))
    finally:
        env.close()
