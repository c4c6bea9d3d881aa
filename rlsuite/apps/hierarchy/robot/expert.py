"""The scripted expert: the procedure library of :mod:`.program`, written by hand.

It sees only the observation (no simulator state), so it runs wherever a
controller runs, and it leaves its call stack in ``Executor.trace``.

Example::

    >>> from rlsuite.apps.hierarchy.robot.env import PickPlaceEnv
    >>> env, expert = PickPlaceEnv(), make_expert()
    >>> obs, _ = env.reset(seed=1); expert.reset(1)
    >>> done = False
    >>> while not done:
    ...     obs, r, term, trunc, _ = env.step(expert.act(obs)); done = term or trunc
    >>> env.episode_metrics()["success"]
    1.0
    >>> env.close()
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlsuite.apps.hierarchy.robot.env import (
    MOVE_STEP,
    OBJECT_REL_YAW,
    OBS_EE,
    OBS_EE_YAW,
    OBS_TARGET_KIND,
    OBS_WIDTH,
    YAW_STEP,
)
from rlsuite.apps.hierarchy.robot.program import ROOT, Executor, Frame, anchor_position

APPROACH = 0.12
"""Height of the pre-grasp point above the cube (m)."""
LIFT = 0.15
"""Height the cube is lifted to after the grasp (m)."""
VIA = 0.20
"""Height of the via-point above the target: the arm crosses at this height."""
RELEASE = {0.0: 0.10, 1.0: 0.056}
"""Release height above the target by target kind (tray: drop; cube: set down)."""
REACHED = 0.008
"""MOVE_TO returns when the hand is this close to its goal (m) ..."""
YAW_REACHED = 0.05
"""... and this close to its yaw (rad)."""


def goal(obs: np.ndarray, obj: str, offset: tuple[float, float, float], align: bool) -> np.ndarray:
    """A MOVE_TO goal: the object's position plus ``offset``; yaw aligned to it or kept."""
    pos = anchor_position(obs, obj) + np.asarray(offset)
    yaw = float(obs[OBS_EE_YAW]) + (float(obs[OBJECT_REL_YAW[obj]]) if align else 0.0)
    return np.array([*pos, yaw])


def move_action(obs: np.ndarray, goal_pose: np.ndarray) -> np.ndarray:
    """Proportional reaching: full speed far away, slowing inside one step of the goal."""
    v = goal_pose[:3] - obs[OBS_EE]
    a = v / MOVE_STEP
    a = a / max(1.0, float(np.max(np.abs(a))))
    dyaw = float(np.clip((goal_pose[3] - obs[OBS_EE_YAW]) / YAW_STEP, -1, 1))
    return np.array([*a, dyaw, 0.0], dtype=np.float32)


class ScriptedPolicy:
    """The hand-written procedures (a :class:`~.program.ProcedurePolicy`)."""

    def decide(self, frame: Frame, obs: np.ndarray) -> tuple[str, Any] | None:
        pc, obj = frame.pc, frame.arg
        if frame.proc == ROOT:
            return [("PICK", "cube"), ("PLACE", "target"), None][min(pc, 2)]
        if frame.proc == "PICK":
            plan = [
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, APPROACH), align=True)),
                ("OPEN", None),
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, 0.0), align=False)),
                ("CLOSE", None),
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, LIFT), align=False)),
            ]
        elif frame.proc == "PLACE":
            release = RELEASE[float(round(obs[OBS_TARGET_KIND]))]
            plan = [
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, VIA), align=True)),
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, release), align=False)),
                ("OPEN", None),
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, VIA), align=False)),
            ]
        else:
            raise ValueError(f"{frame.proc} is not a procedure that makes calls")
        if pc >= len(plan):
            return None
        proc, make_arg = plan[pc]
        return proc, (make_arg() if make_arg else None)

    def leaf_done(self, frame: Frame, obs: np.ndarray) -> bool:
        if frame.proc == "MOVE_TO":
            g = np.asarray(frame.arg)
            return bool(
                np.linalg.norm(g[:3] - obs[OBS_EE]) < REACHED
                and abs(g[3] - obs[OBS_EE_YAW]) < YAW_REACHED
            )
        if frame.proc == "OPEN":
            return bool(obs[OBS_WIDTH] > 0.075)
        if frame.proc == "CLOSE":
            return frame.t >= 5
        raise ValueError(f"{frame.proc} is not a leaf")

    def leaf_act(self, frame: Frame, obs: np.ndarray) -> np.ndarray:
        if frame.proc == "MOVE_TO":
            return move_action(obs, np.asarray(frame.arg))
        grip = 1.0 if frame.proc == "OPEN" else -1.0
        return np.array([0, 0, 0, 0, grip], dtype=np.float32)


def make_expert() -> Executor:
    """A fresh scripted expert (a controller: ``reset(seed)``, ``act(obs)``, ``trace``)."""
    return Executor(ScriptedPolicy(), name="scripted expert")
