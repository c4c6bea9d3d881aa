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
from dataclasses import dataclass

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


NOISE_RANGE = (0.0, 0.3)
"""Valid standard deviations of the action noise (action units; 0.3 is 9 mm a step). The
expert fails 1 pick_place episode in 10 at 0.3 and 13 in 20 at 0.5."""
MISS_HEIGHT = 0.07
"""A missed grasp closes the fingers this far above the cube's centre."""
HELD = 0.06
"""After its lift, PICK counts its object as held when the object is higher than this (m)."""
SECOND_ORDER = {
    "sort": (("PICK", 2), ("PLACE", 5), ("PICK", 1), ("PLACE", 4), ("PICK", 0), ("PLACE", 3))
}
"""The second expert's root calls, where a task has another valid order (sort: blue first)."""


@dataclass(frozen=True)
class Imperfection:
    """How the scripted expert's demonstrations depart from clean, one-way ones."""

    noise: float = 0.0
    """Standard deviation of Gaussian noise added to every motion command (dx, dy, dz,
    dyaw; action units, clipped to [-1, 1]); executed and recorded. In :data:`NOISE_RANGE`."""
    retry: float = 0.0
    """Probability that a PICK's first grasp closes above its cube (a miss); PICK then sees
    the cube was not lifted and grasps again: OPEN, MOVE_TO, CLOSE, MOVE_TO. In [0, 1]."""
    second_expert: float = 0.0
    """Share of episodes by a second expert: its PICK opens the gripper before it
    approaches, and on ``sort`` it takes the cubes blue, green, red. In [0, 1]."""

    def validate(self) -> Imperfection:
        lo, hi = NOISE_RANGE
        if not isinstance(self.noise, (int, float)) or not lo <= self.noise <= hi:
            raise ValueError(f"action noise must be in [{lo}, {hi}], got {self.noise!r}")
        for name in ("retry", "second_expert"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise ValueError(f"{name.replace('_', ' ')} must be in [0, 1], got {v!r}")
        return self

    @property
    def clean(self) -> bool:
        return self.noise == 0 and self.retry == 0 and self.second_expert == 0


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

    def __init__(
        self,
        task: str = "pick_place",
        plan: Sequence[tuple[str, int]] | None = None,
        imperfection: Imperfection | None = None,
    ):
        self.task = T.get(task)
        self.first_plan = tuple(self.task.plan if plan is None else plan)
        if len(self.first_plan) > len(self.task.plan):
            raise ValueError(
                f"{task}'s root makes at most {len(self.task.plan)} calls, "
                f"the plan has {len(self.first_plan)}"
            )
        self.imperfection = (imperfection or Imperfection()).validate()
        self.seed(None)

    def seed(self, seed: int | None) -> None:
        """Start an episode: draw which expert acts and seed the noise and the misses."""
        self.rng = np.random.default_rng(None if seed is None else [int(seed), 0x5EED])
        self.second = bool(self.rng.random() < self.imperfection.second_expert)
        self.plan = (
            SECOND_ORDER.get(self.task.name, self.first_plan) if self.second else self.first_plan
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
        a = self._leaf_act(frame, obs)
        if self.imperfection.noise > 0:
            a[:4] = np.clip(a[:4] + self.rng.normal(0.0, self.imperfection.noise, 4), -1, 1)
        return Decision("act", "STEP", (a,))

    def _skill(self, frame: Frame, obs: np.ndarray) -> Decision:
        pc, obj = frame.pc, int(frame.args[0])
        if frame.proc == "PICK":
            if pc == 0:  # does this PICK miss its first grasp?
                frame.memory = {"miss": bool(self.rng.random() < self.imperfection.retry)}
            miss = MISS_HEIGHT if frame.memory["miss"] else 0.0
            plan = [
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, APPROACH), align=True)),
                ("OPEN", None),
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, miss), align=False)),
                ("CLOSE", None),
                ("MOVE_TO", lambda: goal(obs, obj, (0, 0, LIFT), align=False)),
            ]
            if self.second:  # the second expert opens the gripper first
                plan[:2] = plan[1::-1]
            if pc == len(plan) and self.imperfection.retry > 0 and not self._held(obs, obj):
                frame.memory["retry"] = True  # the cube stayed down: grasp again
            if frame.memory.get("retry"):
                plan += [
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
    def _held(obs: np.ndarray, obj: int) -> bool:
        return bool(anchor_position(obs, obj)[2] > HELD)

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
    record: bool = False,
    task: str = "pick_place",
    plan: Sequence[tuple[str, int]] | None = None,
    imperfection: Imperfection | None = None,
) -> Controller:
    """A fresh scripted expert of ``task`` (a controller: ``reset(seed)``, ``act(obs)``;
    ``trace()`` with ``record=True``); ``plan`` replaces the task's root calls;
    ``imperfection`` adds noise, missed grasps and their retries, a second expert."""
    return Controller(
        ScriptedPolicy(task, plan, imperfection),
        name="scripted expert",
        record=record,
        spec=spec_for(task),
    )
