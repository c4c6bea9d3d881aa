"""Imperfect demonstrations on real pybullet: noise, missed grasps retried, a second expert."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.apps.hierarchy.procedures.calls import call_tree
from rlsuite.apps.hierarchy.robot import experiment as X
from rlsuite.apps.hierarchy.robot import recording as D
from rlsuite.apps.hierarchy.robot.cli import main
from rlsuite.apps.hierarchy.robot.expert import HELD, Imperfection
from rlsuite.apps.hierarchy.robot.model import TrainConfig, infer_stacks, skill_calls
from rlsuite.apps.hierarchy.robot.program import anchor_position, make_model


def test_out_of_range_levels_give_the_valid_range(capsys, tmp_path):
    with pytest.raises(ValueError, match=r"action noise must be in \[0.0, 0.3\], got 0.9"):
        Imperfection(noise=0.9).validate()
    with pytest.raises(ValueError, match=r"retry must be in \[0, 1\], got -0.1"):
        Imperfection(retry=-0.1).validate()
    with pytest.raises(ValueError, match=r"second expert must be in \[0, 1\], got 2"):
        D.collect(1, imperfection=Imperfection(second_expert=2))
    rc = main(["robot-demos", "--n", "1", "--workers", "0", "--noise", "0.9",
               "--out", str(tmp_path / "d.npz")])  # fmt: skip
    assert rc == 2 and "[0.0, 0.3]" in capsys.readouterr().err
    assert not (tmp_path / "d.npz").exists()
    with pytest.raises(ValueError, match="a --demo-file was recorded already"):
        X.RobotRunConfig(demo_path="x.npz", imperfection=Imperfection(noise=0.1)).validate()


def test_noisy_demonstrations_are_seeded_and_still_succeed():
    clean = D.record(100_000)
    noisy = D.record(100_000, imperfection=Imperfection(noise=0.2))
    again = D.record(100_000, imperfection=Imperfection(noise=0.2))
    assert noisy.info["success"]
    a, b = D.commands(clean)[1], D.commands(noisy)[1]
    n = min(len(a), len(b))
    assert np.abs(a[:n, :4] - b[:n, :4]).mean() > 0.05  # the executed commands differ ...
    np.testing.assert_array_equal(D.commands(noisy)[1], D.commands(again)[1])  # ... by seed


def test_a_missed_grasp_is_retried_inside_pick():
    d = D.record(100_001, imperfection=Imperfection(retry=1.0))
    assert d.info["success"]
    pick = call_tree(d).children[0]
    assert [c.proc for c in pick.children] == [
        "MOVE_TO", "OPEN", "MOVE_TO", "CLOSE", "MOVE_TO", "OPEN", "MOVE_TO", "CLOSE", "MOVE_TO"
    ]  # fmt: skip
    obs, _ = D.commands(d)
    first_lift, second_lift = pick.children[4], pick.children[8]
    assert anchor_position(obs[first_lift.end], 0)[2] < HELD  # the first grasp missed
    assert anchor_position(obs[second_lift.end], 0)[2] > HELD  # the second one holds it


def test_the_second_expert_takes_another_valid_order():
    d = D.record(100_002, "sort", imperfection=Imperfection(second_expert=1.0))
    assert d.info["success"] and d.info["expert"] == "second"
    calls = skill_calls(d)
    assert [c[:2] for c in calls] == [
        ["PICK", 2], ["PLACE", 5], ["PICK", 1], ["PLACE", 4], ["PICK", 0], ["PLACE", 3]
    ]  # fmt: skip
    assert call_tree(d).children[0].children[0].proc == "OPEN"  # opens before it approaches


def test_weak_em_recovers_skill_calls_from_mixed_imperfect_demonstrations():
    imp = Imperfection(noise=0.2, retry=0.3, second_expert=0.5)
    demos = D.collect(6, num_workers=0, imperfection=imp)
    assert {d.info["expert"] for d in demos} == {"first", "second"}
    assert any(c[2] == 9 for d in demos for c in skill_calls(d))  # a retried PICK among them
    inferred = infer_stacks(make_model(), D.weak(demos), TrainConfig(steps=100))
    got = [[c[:2] for c in skill_calls(t)] for t in inferred]
    assert got == [[["PICK", 0], ["PLACE", 1]]] * len(demos)
