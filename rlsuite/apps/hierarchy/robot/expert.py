"""The scripted expert: the procedure library of :mod:`.program` (``program.SPEC``), by hand.

It is a :class:`~rlsuite.apps.hierarchy.procedures.executor.Policy`
(``decide(frame, obs) -> Decision``) run by the shared
:class:`~rlsuite.apps.hierarchy.procedures.executor.Executor`; it sees only the observation
(no simulator state), so it runs wherever a controller runs, and
``make_expert(record=True).trace()`` is its strong
:class:`~rlsuite.apps.hierarchy.procedures.traces.Trace` (every decision with the call stack
and arguments).

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

from collections.abc import Sequence

import numpy as np

from rlsuite.apps.hierarchy.procedures.executor import Frame
from rlsuite.apps.hierarchy.procedures.traces import TERMINATE, Decision
from rlsuite.apps.hierarchy.robot import tasks as T
from rlsuite.apps.hierarchy.robot.env import MOVE_STEP, YAW_STEP
from rlsuite.apps.hierarchy.robot.program import Controller, anchor_position, spec_for
from rlsuite.apps.hierarchy.robot.tasks import (
    KINDS,
    OBS_EE,
    OBS_EE_YAW,
    OBS_WIDTH,
    SLOT_KIND,
    SLOT_REL_YAW,
    slot_index,
)

APPROACH = 0.12
"""Height of the pre-grasp point above the cube (m)."""
LIFT = 0.15
"""Height the cube is lifted to after the grasp (m)."""
VIA = 0.20
"""Height of the via-point above the target: the arm crosses at this height."""
RELEASE = {"tray": 0.10, "cube": 0.056, "pad": 0.032}
"""Release height above the target by its kind (tray: drop; cube: set down; pad: set down
on the floor)."""
REACHED = 0.008
"""MOVE_TO returns when the hand is this close to its goal (m) ..."""
YAW_REACHED = 0.05
"""... and this close to its yaw (rad)."""


def kind_of(obs: np.ndarray, obj: int) -> str:
    """The kind (cube / tray / pad) of the object in slot ``obj``."""
    return KINDS[int(np.argmax(obs[slot_index(obj, SLOT_KIND)]))]


def goal(obs: np.ndarray, obj: int, offset: tuple[float, float, float], align: bool) -> np.ndarray:
    """A MOVE_TO goal: object ``obj``'s position plus ``offset``; yaw aligned to it or kept."""
    pos = anchor_position(obs, obj) + np.asarray(offset)
    rel_yaw = float(obs[slot_index(obj, SLOT_REL_YAW)]) if align else 0.0
    return np.array([*pos, float(obs[OBS_EE_YAW]) + rel_yaw], dtype=np.float32)


def move_action(obs: np.ndarray, goal_pose: np.ndarray) -> np.ndarray:
    """Proportional reaching: full speed far away, slowing inside one step of the goal."""
    v = goal_pose[:3] - obs[OBS_EE]
    a = v / MOVE_STEP
    a = a / max(1.0, float(np.max(np.abs(a))))
    dyaw = float(np.clip((goal_pose[3] - obs[OBS_EE_YAW]) / YAW_STEP, -1, 1))
    return np.array([*a, dyaw, 0.0], dtype=np.float32)


class ScriptedPolicy:
    """The hand-written procedures (a :class:`procedures.Policy` for ``spec_for(task)``):
    the root makes the task's planned ``(skill, object)`` calls in order (:mod:`.tasks`), or
    those of ``plan`` (e.g. another valid order)."""

    def __init__(self, task: str = "pick_place", plan: Sequence[tuple[str, int]] | None = None):
        self.task = T.get(task)
        self.plan = tuple(self.task.plan if plan is None else plan)
        if len(self.plan) > len(self.task.plan):
            raise ValueError(
                f"{task}'s root makes at most {len(self.task.plan)} calls, the plan has {len(self.plan)}"
            )

    def decide(self, frame: Frame, obs: np.ndarray) -> Decision:
        if frame.proc == self.task.root:
            if frame.pc >= len(self.plan):
                return TERMINATE
            skill, obj = self.plan[frame.pc]
            return Decision("call", skill, (obj,))
        if frame.proc in ("PICK", "PLACE"):
            return self._skill(frame, obs)
        if frame.pc > 0 and self._leaf_done(frame, obs):
            return TERMINATE
        return Decision("act", "STEP", (self._leaf_act(frame, obs),))

    def _skill(self, frame: Frame, obs: np.ndarray) -> Decision:
        pc, obj = frame.pc, int(frame.args[0])
        if frame.proc == "PICK":
            plan = [
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, APPROACH), align=True)),
                ("OPEN", None),
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, 0.0), align=False)),
                ("CLOSE", None),
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, LIFT), align=False)),
            ]
        else:
            release = RELEASE[kind_of(obs, obj)]
            plan = [
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, VIA), align=True)),
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, release), align=False)),
                ("OPEN", None),
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, VIA), align=False)),
            ]
        if pc >= len(plan):
            return TERMINATE
        proc, make_arg = plan[pc]
        return Decision("call", proc, (make_arg(),) if make_arg else ())

    @staticmethod
    def _leaf_done(frame: Frame, obs: np.ndarray) -> bool:
        if frame.proc == "MOVE_TO":
            g = np.asarray(frame.args[0], dtype=np.float64)
            return bool(
                np.linalg.norm(g[:3] - obs[OBS_EE]) < REACHED
                and abs(g[3] - obs[OBS_EE_YAW]) < YAW_REACHED
            )
        if frame.proc == "OPEN":
            return bool(obs[OBS_WIDTH] > 0.075)
        if frame.proc == "CLOSE":
            return frame.pc >= 5
        raise ValueError(f"{frame.proc} is not a leaf")

    @staticmethod
    def _leaf_act(frame: Frame, obs: np.ndarray) -> np.ndarray:
        if frame.proc == "MOVE_TO":
            return move_action(obs, np.asarray(frame.args[0], dtype=np.float64))
        grip = 1.0 if frame.proc == "OPEN" else -1.0
        return np.array([0, 0, 0, 0, grip], dtype=np.float32)


def make_expert(
    record: bool = False, task: str = "pick_place", plan: Sequence[tuple[str, int]] | None = None
) -> Controller:
    """A fresh scripted expert of ``task`` (a controller: ``reset(seed)``, ``act(obs)``;
    ``trace()`` with ``record=True``); ``plan`` replaces the task's root calls."""
    return Controller(
        ScriptedPolicy(task, plan), name="scripted expert", record=record, spec=spec_for(task)
    )
