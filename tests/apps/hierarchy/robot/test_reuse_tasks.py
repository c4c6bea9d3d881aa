"""Skill reuse across the Panda tasks: PICK / PLACE learned on pick_place, on real pybullet."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.apps.hierarchy.robot import experiment as X
from rlsuite.apps.hierarchy.robot import recording as D
from rlsuite.apps.hierarchy.robot.cli import main
from rlsuite.apps.hierarchy.robot.model import TrainConfig


def test_transfer_carries_pick_and_place_to_a_task_with_its_own_root():
    import torch

    from rlsuite.apps.hierarchy.procedures.executor import Frame
    from rlsuite.apps.hierarchy.robot.model import fit_hierarchical, transfer

    base = fit_hierarchical(D.collect(2, num_workers=0), TrainConfig(steps=40), "strong")
    moved = transfer(base, "tower", TrainConfig(steps=40))
    assert moved.spec.root == "TOWER" and base.spec.root == "PICK_AND_PLACE"
    obs = D.collect(1, "tower", num_workers=0)[0].observations[0]
    for proc, args in (("PICK", (1,)), ("PLACE", (0,))):
        a = base.eval().decide(Frame(proc, args, 0), obs)
        b = moved.eval().decide(Frame(proc, args, 0), obs)
        assert (a.kind, a.op) == (b.kind, b.op)
        for x, y in zip(a.args, b.args):
            np.testing.assert_array_equal(x, y)
    i, j = base.index["PICK"], moved.index["PICK"]
    for (k, v), w in zip(base.nets[i].state_dict().items(), moved.nets[j].state_dict().values()):
        assert torch.equal(v, w), k


def test_robot_reuse_on_a_long_task_end_to_end(tmp_path):
    import json

    out = tmp_path / "reuse.json"
    argv = ["robot-reuse", "--task", "tower", "--counts", "1", "--first-demos", "1",
            "--episodes", "1", "--workers", "0", "--train-steps", "20", "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    res = json.loads(out.read_text())
    assert res["config"]["task"] == "tower"
    assert set(res["success"]) == {"reuse", "retrain", "recreate", "scratch"}
    assert all(set(v) == {"1"} for v in res["success"].values())  # tower's root is learned
    with pytest.raises(ValueError, match="must differ from pick_place"):
        X.ReuseConfig(task="pick_place").validate()
