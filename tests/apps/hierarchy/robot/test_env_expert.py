"""PickPlaceEnv on real pybullet, the scripted expert and its demonstrations."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.apps.hierarchy.robot import demos as D
from rlsuite.apps.hierarchy.robot.env import OBS_CUBE, OBS_DIM, PickPlaceEnv
from rlsuite.apps.hierarchy.robot.expert import REACHED, make_expert
from rlsuite.apps.hierarchy.robot.model import read_calls
from rlsuite.apps.hierarchy.robot.program import ROOT
from rlsuite.platform import envs
from rlsuite.platform.evaluation import evaluate, scenarios


def test_registered_env_passes_gymnasium_check_env():
    assert envs.spec("rlsuite/PickPlace-v0").entry_point.endswith("robot.env:PickPlaceEnv")
    envs.check("rlsuite/PickPlace-v0")
    envs.check("rlsuite/PickPlace-v0", {"task": "stack"})


def test_same_seed_same_episode_and_separate_physics_clients():
    a, b = PickPlaceEnv(), PickPlaceEnv()
    try:
        assert a._scene is None  # nothing simulated before reset
        oa, _ = a.reset(seed=3)
        ob, _ = b.reset(seed=3)
        np.testing.assert_array_equal(oa, ob)
        assert a._scene.client != b._scene.client
        act = np.array([1.0, 0.0, -1.0, 0.0, 0.0], dtype=np.float32)
        for _ in range(5):
            oa, *_ = a.step(act)
        ob2, _ = b.reset(seed=4)  # stepping a does not move b, and seeds differ
        assert not np.allclose(ob2[OBS_CUBE], ob[OBS_CUBE])
        assert oa.shape == (OBS_DIM,) and oa[0] > ob[0] + 0.05  # the hand moved in +x
    finally:
        a.close()
        b.close()
        a.close()  # idempotent


def test_bad_config_and_actions_give_clear_errors():
    with pytest.raises(ValueError, match="unknown task 'juggle'"):
        PickPlaceEnv(task="juggle")
    with pytest.raises(ValueError, match="max_steps must be a positive int"):
        PickPlaceEnv(max_steps=0)
    env = PickPlaceEnv()
    try:
        with pytest.raises(RuntimeError, match="reset"):
            env.step(np.zeros(5))
        env.reset(seed=0)
        with pytest.raises(ValueError, match="5 finite numbers"):
            env.step(np.zeros(3))
        with pytest.raises(ValueError, match="5 finite numbers"):
            env.step(np.array([np.nan, 0, 0, 0, 0]))
    finally:
        env.close()


def test_random_actions_do_not_solve_the_task():
    env = PickPlaceEnv(max_steps=60)
    rng = np.random.default_rng(0)
    try:
        for seed in range(2):
            env.reset(seed=seed)
            done = False
            while not done:
                *_, term, trunc, _ = env.step(rng.uniform(-1, 1, 5))
                done = term or trunc
            assert env.episode_metrics()["success"] == 0.0
    finally:
        env.close()


@pytest.mark.parametrize("task", ["pick_place", "stack"])
def test_expert_succeeds_on_seeded_episodes(task):
    res = evaluate(make_expert, scenarios("rlsuite/PickPlace-v0", 8, {"task": task}), num_workers=0)
    assert res.summary["success"]["mean"] >= (1.0 if task == "pick_place" else 0.85)
    assert max(e["steps"] for e in res.episodes if e["success"]) < 100  # short horizon


def test_demonstrations_carry_a_consistent_call_stack(tmp_path):
    demos = D.collect(3, num_workers=0)
    for d in demos:
        T = len(d["actions"])
        assert d["success"] and d["obs"].shape == (T + 1, OBS_DIM) and len(d["stack"]) == T
        for frames in d["stack"]:
            assert [f[0] for f in frames][:1] == [ROOT] and len(frames) == 3
        calls = read_calls(d)
        assert [(s["proc"], s["obj"]) for s in calls.skill] == [
            ("PICK", "cube"),
            ("PLACE", "target"),
        ]
        pick, place = ([c[0] for c in s["children"]] for s in calls.skill)
        assert pick == ["MOVE_TO", "OPEN", "MOVE_TO", "CLOSE", "MOVE_TO"]
        assert place[: len(place)] == ["MOVE_TO", "MOVE_TO", "OPEN", "MOVE_TO"][: len(place)]
        assert len(place) >= 3  # success comes at the earliest after the release
        # program counters count the completed children; leaf steps count up from 0
        for t, frames in enumerate(d["stack"]):
            root, skill, leaf = frames
            assert root[2] == (0 if skill[0] == "PICK" else 1)
            kids = next(s for s in calls.skill if s["proc"] == skill[0])["children"]
            assert kids[skill[2]][2] <= t and kids[skill[2]][0] == leaf[0]
        # every MOVE_TO that returned did reach its goal argument
        for c in calls.leaf:
            if c["proc"] == "MOVE_TO" and c["terminated"]:
                assert np.linalg.norm(d["obs"][c["end"], :3] - np.asarray(c["arg"][:3])) < REACHED
    path = tmp_path / "demos.npz"
    D.save(str(path), demos)
    back = D.load(str(path))
    assert [b["seed"] for b in back] == [d["seed"] for d in demos]
    np.testing.assert_array_equal(back[1]["actions"], demos[1]["actions"])
    assert [list(f) for f in back[0]["stack"][5]] == [list(f) for f in demos[0]["stack"][5]]
    assert all(w["stack"] is None for w in D.weak(back))


def test_demo_collection_errors():
    with pytest.raises(ValueError, match="positive int"):
        D.collect(0)
    with pytest.raises(ValueError, match="unknown task"):
        D.collect(1, "fold_laundry")
    with pytest.raises(FileNotFoundError, match="hier-train robot-demos"):
        D.load("/nonexistent/demos.npz")
