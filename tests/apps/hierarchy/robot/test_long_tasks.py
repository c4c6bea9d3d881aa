"""The long-horizon Panda tasks (sort, tower, clear_then_place) on real pybullet."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rlsuite.apps.hierarchy.procedures.calls import call_tree
from rlsuite.apps.hierarchy.robot import recording as D
from rlsuite.apps.hierarchy.robot import tasks as T
from rlsuite.apps.hierarchy.robot.cli import build_parser, main
from rlsuite.apps.hierarchy.robot.env import PickPlaceEnv
from rlsuite.apps.hierarchy.robot.expert import make_expert
from rlsuite.apps.hierarchy.robot.model import (
    TrainConfig,
    controller,
    fit_hierarchical,
    infer_stacks,
)
from rlsuite.apps.hierarchy.robot.program import make_model
from rlsuite.platform import envs

LONG = ("sort", "tower", "clear_then_place")


def _run(env: PickPlaceEnv, ctrl, seed: int) -> dict:
    obs, _ = env.reset(seed=seed)
    ctrl.reset(seed)
    assert not env._achieved()  # never solved before the robot moves
    done = False
    while not done:
        obs, _, term, trunc, _ = env.step(ctrl.act(obs))
        done = term or trunc
    return env.episode_metrics()


@pytest.mark.parametrize("task", LONG)
def test_env_checks_and_the_expert_solves_a_seeded_episode(task):
    envs.check("rlsuite/PickPlace-v0", {"task": task})
    env = PickPlaceEnv(task=task)
    try:
        m = _run(env, make_expert(task=task), seed=3)
        assert m["success"] == 1.0
        # every relation holds at the end, so the env's check is no accident of one of them
        assert all(env._holds(*r) for r in env.task.relations)
        assert 2 * 40 < m["steps"] < env.config.max_steps  # long, but within the horizon
    finally:
        env.close()


def test_sort_counts_any_order_and_a_half_done_task_is_not_solved():
    env = PickPlaceEnv(task="sort")
    try:
        # blue, then red, then green: another valid order
        reordered = (
            ("PICK", 2),
            ("PLACE", 5),
            ("PICK", 0),
            ("PLACE", 3),
            ("PICK", 1),
            ("PLACE", 4),
        )
        assert _run(env, make_expert(task="sort", plan=reordered), seed=5)["success"] == 1.0
        # only two of the three cubes sorted
        m = _run(env, make_expert(task="sort", plan=reordered[:4]), seed=5)
        assert m["success"] == 0.0 and m["steps"] == env.config.max_steps
        assert env._holds("in", 2, 5) and env._holds("in", 0, 3) and not env._holds("in", 1, 4)
    finally:
        env.close()


def test_tower_needs_both_cubes_stacked():
    env = PickPlaceEnv(task="tower", max_steps=150)
    try:
        m = _run(env, make_expert(task="tower", plan=(("PICK", 1), ("PLACE", 0))), seed=2)
        assert m["success"] == 0.0 and env._holds("on", 1, 0) and not env._holds("on", 2, 1)
    finally:
        env.close()


def test_the_blocker_must_be_cleared_first():
    env = PickPlaceEnv(task="clear_then_place", max_steps=150)
    try:
        # placing the cube straight onto the target sets it down on the blocker
        m = _run(env, make_expert(task="clear_then_place", plan=(("PICK", 0), ("PLACE", 1))), 4)
        assert m["success"] == 0.0
        assert env._holds("on", 0, 2) and not env._holds("on_pad", 0, 1)
    finally:
        env.close()
    with pytest.raises(ValueError, match="at most 4 calls"):
        make_expert(task="clear_then_place", plan=(("PICK", 0),) * 5)


def test_unknown_task_lists_the_valid_ones(capsys):
    with pytest.raises(ValueError, match="pick_place, stack, sort, tower, clear_then_place"):
        PickPlaceEnv(task="juggle")
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["robot", "--task", "juggle", "--demos", "5"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'juggle'" in err
    assert all(f"'{t}'" in err for t in T.TASKS)


@pytest.fixture(scope="module")
def tower_demos():
    return D.collect(3, "tower", num_workers=0)


def test_weak_em_recovers_the_skill_calls_and_their_objects(tower_demos):
    # tower is the ambiguous one: after a release the hand rises above two cubes at once
    inferred = infer_stacks(make_model(task="tower"), D.weak(tower_demos), TrainConfig(steps=200))
    for true_d, weak_d in zip(tower_demos, inferred):
        truth = [(c.proc, c.args, len(c.children)) for c in call_tree(true_d).children]
        got = [(c.proc, c.args, len(c.children)) for c in call_tree(weak_d).children]
        assert [(p, a) for p, a, _ in truth] == [
            ("PICK", (1,)), ("PLACE", (0,)), ("PICK", (2,)), ("PLACE", (1,))
        ]  # fmt: skip
        assert got == truth


def test_tiny_strong_fit_on_tower_runs_the_planned_calls(tower_demos):
    model = fit_hierarchical(tower_demos, TrainConfig(steps=150), "strong")
    assert model.spec.root == "TOWER" and model.extra["meta"]["tasks"] == ["tower"]
    env = PickPlaceEnv(task="tower")
    c = controller(model)
    try:
        obs, _ = env.reset(seed=0)
        c.reset(0)
        seen = []
        for _ in range(env.config.max_steps):
            if len(c.stack) > 1 and (c.stack[1].proc, c.stack[1].args) not in seen[-1:]:
                seen.append((c.stack[1].proc, c.stack[1].args))
            obs, _, term, trunc, _ = env.step(c.act(obs))
            if term or trunc:
                break
    finally:
        env.close()
    # the learned root makes the expert's calls in its order, on the right cubes
    assert seen[:3] == [("PICK", (1,)), ("PLACE", (0,)), ("PICK", (2,))]


def test_demo_file_of_another_task_is_refused_naming_both(tmp_path, capsys):
    path = tmp_path / "pp.npz"
    D.save(str(path), D.collect(1, "pick_place", num_workers=0))
    rc = main(["robot", "--task", "sort", "--demos", "1", "--workers", "0",
               "--demo-file", str(path)])  # fmt: skip
    assert rc == 2
    err = capsys.readouterr().err
    assert "recorded for task 'pick_place', not 'sort'" in err and "--task sort" in err
    with pytest.raises(ValueError, match="one task at a time"):
        fit_hierarchical(
            [*D.load(str(path)), *D.collect(1, "stack", num_workers=0)], TrainConfig(steps=5)
        )


def test_old_layout_demo_file_is_refused(tmp_path):
    demos = D.collect(1, "pick_place", num_workers=0)
    demos[0].observations = demos[0].observations[:, :20]
    path = tmp_path / "old.npz"
    D.save(str(path), demos)
    with pytest.raises(ValueError, match="20-float observations, not the 65"):
        D.load(str(path))


def test_hier_train_robot_on_a_long_task_end_to_end(tmp_path):
    demos = tmp_path / "sort.npz"
    assert main(["robot-demos", "--n", "1", "--task", "sort", "--workers", "0",
                 "--out", str(demos)]) == 0  # fmt: skip
    assert {d.info["task"] for d in D.load(str(demos))} == {"sort"}
    out = tmp_path / "sort.json"
    argv = ["robot", "--task", "sort", "--demos", "1", "--episodes", "1", "--workers", "0",
            "--train-steps", "20", "--supervision", "both", "--demo-file", str(demos),
            "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    res = json.loads(out.read_text())
    assert res["config"]["task"] == "sort" and res["rows"][0]["demos"] == 1
    assert set(res["rows"][0]["success"]) == {"hierarchical-strong", "hierarchical-weak", "flat"}
    assert np.isfinite(res["rows"][0]["steps"]["flat"])
    assert (tmp_path / "sort.png").stat().st_size > 1000
