"""PickPlaceEnv on real pybullet, the scripted expert and its demonstrations."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.apps.hierarchy.procedures.calls import call_tree
from rlsuite.apps.hierarchy.robot import recording as D
from rlsuite.apps.hierarchy.robot.env import OBS_DIM, PickPlaceEnv
from rlsuite.apps.hierarchy.robot.expert import REACHED, make_expert
from rlsuite.apps.hierarchy.robot.program import ROOT
from rlsuite.apps.hierarchy.robot.tasks import SLOT_POS, slot_index
from rlsuite.platform import envs
from rlsuite.platform.evaluation import evaluate, scenarios

OBS_CUBE = slot_index(0, SLOT_POS)


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
        T = len(d.actions)
        assert d.info["success"] and d.strong and d.observations.shape == (T, OBS_DIM)
        assert all(a.kind == "act" and a.op == "STEP" for a in d.actions if a.kind != "stop")
        # every decision's frame: the root at depth 1, a skill at 2, a leaf at 3
        for e in d.events:
            assert e.depth == {ROOT: 1, "PICK": 2, "PLACE": 2}.get(e.proc, 3)
            if e.decision.kind == "act":
                assert e.proc in ("MOVE_TO", "OPEN", "CLOSE") and e.decision.args[0].shape == (5,)
        root = call_tree(d)
        assert root.proc == ROOT and root.steps() == [
            t for t in range(T) if d.actions[t].kind == "act"
        ]
        assert [(c.proc, c.args) for c in root.children] == [("PICK", (0,)), ("PLACE", (1,))]
        pick, place = ([c.proc for c in s.children] for s in root.children)
        assert pick == ["MOVE_TO", "OPEN", "MOVE_TO", "CLOSE", "MOVE_TO"]
        assert place == ["MOVE_TO", "MOVE_TO", "OPEN", "MOVE_TO"][: len(place)]
        assert len(place) >= 3  # success comes at the earliest after the release
        # program counters count the completed children; a leaf's pc counts its steps
        for e in d.events:
            if e.proc in ("MOVE_TO", "OPEN", "CLOSE") and e.decision.kind == "act":
                call = next(c for c in root.calls() if e.step in c.children)
                assert call.proc == e.proc and e.pc == call.children.index(e.step)
        # every MOVE_TO that returned did reach its goal argument
        obs, _ = D.commands(d)
        for c in root.calls():
            if c.proc == "MOVE_TO" and c.terminated:
                assert np.linalg.norm(obs[c.end, :3] - c.args[0][:3]) < REACHED
    path = tmp_path / "demos.npz"
    D.save(str(path), demos)
    back = D.load(str(path))
    assert [b.info["seed"] for b in back] == [d.info["seed"] for d in demos]
    np.testing.assert_array_equal(back[1].observations, demos[1].observations)
    assert all(w.events is None for w in D.weak(back))


def test_demo_collection_errors():
    with pytest.raises(ValueError, match="positive int"):
        D.collect(0)
    with pytest.raises(ValueError, match="unknown task"):
        D.collect(1, "fold_laundry")
    with pytest.raises(FileNotFoundError, match="hier-train robot-demos"):
        D.load("/nonexistent/demos.npz")


def test_old_or_foreign_demo_files_are_a_clear_error(tmp_path):
    path = tmp_path / "old.npz"
    np.savez_compressed(path, obs=np.zeros((3, OBS_DIM)), actions=np.zeros((2, 5)))
    with pytest.raises(ValueError, match="not a demonstration file of this version"):
        D.load(str(path))


def test_the_robot_spec_reads_the_env_observation_layout():
    from rlsuite.apps.hierarchy.robot import env as E
    from rlsuite.apps.hierarchy.robot import program
    from rlsuite.apps.hierarchy.robot.tasks import SLOT_KIND, SLOT_REL, SLOT_REL_YAW

    assert program.SPEC.obs_dim == E.OBS_DIM == 65
    env = PickPlaceEnv(task="stack")
    try:
        obs, _ = env.reset(seed=0)
        ee = obs[E.OBS_EE]
        for slot, name in enumerate(("cube", "base")):
            pos, yaw = env._scene.pose(name)
            np.testing.assert_allclose(program.anchor_position(obs, slot), pos, atol=1e-5)
            np.testing.assert_allclose(obs[slot_index(slot, SLOT_REL)], pos - ee, atol=1e-5)
            rel = obs[slot_index(slot, SLOT_REL_YAW)]
            assert -np.pi / 4 <= rel < np.pi / 4
            assert obs[slot_index(slot, SLOT_KIND)].tolist() == [1.0, 0.0, 0.0]  # cubes
        assert not obs[slot_index(2, SLOT_POS).start :].any()  # unused slots are zero
    finally:
        env.close()
    assert [p.name for p in program.SPEC.procedures] == [
        "PICK_AND_PLACE", "PICK", "PLACE", "MOVE_TO", "OPEN", "CLOSE"
    ]  # fmt: skip
