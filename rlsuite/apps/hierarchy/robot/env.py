"""PickPlaceEnv: a Franka Panda moves 5 cm cubes into trays, onto each other or onto pads.

Registered as ``rlsuite/PickPlace-v0``; its ``task`` (:mod:`.tasks`) picks the objects and
the goal: ``pick_place``, ``stack``, and the long-horizon ``sort``, ``tower`` and
``clear_then_place``. Physics run in pybullet (DIRECT mode) through
:mod:`rlsuite.apps.hierarchy.robot.sim`; each env owns its own physics client and
disconnects it in :meth:`PickPlaceEnv.close`.

Example::

    >>> env = PickPlaceEnv(task="sort")
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, env.config.max_steps
    ((65,), 400)
    >>> env.close()
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rlsuite.apps.hierarchy.robot import tasks as T
from rlsuite.apps.hierarchy.robot.sim import CUBE_SIZE, FINGER_MAX, TRAY_HALF_INNER, PandaScene
from rlsuite.apps.hierarchy.robot.tasks import (
    KINDS,
    OBS_DIM,
    OBS_EE,
    OBS_EE_YAW,
    OBS_WIDTH,
    PAD_HALF,
    SLOT_KIND,
    SLOT_POS,
    SLOT_REL,
    SLOT_REL_YAW,
    TASKS,
    slot_index,
)

MOVE_STEP = 0.03
"""Largest end-effector displacement per step along each axis (m), at action 1.0."""
YAW_STEP = 0.15
"""Largest gripper rotation per step (rad), at action 1.0."""
GRIP_THRESHOLD = 0.5
"""``action[4] > 0.5`` opens the gripper, ``< -0.5`` closes it, anything between keeps it."""
HOME = (0.40, 0.0, 0.30)
WORKSPACE_LOW = np.array([0.20, -0.45, 0.012])
WORKSPACE_HIGH = np.array([0.80, 0.45, 0.45])
REST_SPEED = 0.05
"""A cube moving faster than this (m/s) is not at rest."""

__all__ = ["OBS_DIM", "OBS_EE", "OBS_EE_YAW", "OBS_WIDTH", "TASKS", "PickPlaceEnv"]


def wrap_quarter(a: float) -> float:
    """An angle modulo a quarter turn, in [-pi/4, pi/4) (a cube looks the same every 90 deg)."""
    return (a + math.pi / 4) % (math.pi / 2) - math.pi / 4


@dataclass(frozen=True)
class PickPlaceConfig:
    """Keyword arguments of :class:`PickPlaceEnv` (all validated)."""

    task: str = "pick_place"
    """One of :data:`~.tasks.TASKS` (see :mod:`.tasks`)."""
    max_steps: int | None = None
    """Episode horizon (steps); ``None``: the task's own (150 for one PICK + PLACE, 320-400
    for the long tasks; the scripted expert needs about 45 per PICK + PLACE)."""
    substeps: int = 6
    """Physics steps (1/180 s each) per env step."""
    randomize_yaw: bool = True
    """Random yaw of the cubes (in [-pi/4, pi/4)), trays and pads."""

    def validate(self) -> PickPlaceConfig:
        T.get(self.task)
        if self.max_steps is not None and (
            not isinstance(self.max_steps, int) or self.max_steps < 1
        ):
            raise ValueError(f"max_steps must be a positive int, got {self.max_steps!r}")
        if not isinstance(self.substeps, int) or not 1 <= self.substeps <= 50:
            raise ValueError(f"substeps must be an int in 1..50, got {self.substeps!r}")
        return self


class PickPlaceEnv(gym.Env):
    """A Panda arm and a task's objects (cubes, trays, pads) at random places.

    States:
        A 65-vector: ``[ee_xyz(3), ee_yaw, finger_width]`` then six object slots of 10
        ``[xyz(3), rel_yaw, xyz - ee(3), kind one-hot (cube, tray, pad)(3)]`` in the task's
        object order (:mod:`.tasks`); unused slots are zero. ``rel_yaw`` is the object's
        yaw minus the gripper's, modulo a quarter turn (metres, radians).
    Actions:
        ``Box(-1, 1, (5,))``: end-effector displacement ``dx, dy, dz`` (times 3 cm),
        rotation ``dyaw`` (times 0.15 rad) and a gripper command (``> 0.5`` open,
        ``< -0.5`` close, otherwise keep). Inverse kinematics turns the pose into joint
        targets for the arm's position controllers.
    Rewards:
        1.0 on the step the task is achieved, 0 otherwise.
    Termination:
        Terminated when every relation of the task holds with every cube released and at
        rest (the cube in the tray; on the second cube; each cube in the tray of its colour;
        three cubes stacked; the blocker off the target pad and the cube on it); truncated
        after ``max_steps``.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        task: str = "pick_place",
        max_steps: int | None = None,
        substeps: int = 6,
        randomize_yaw: bool = True,
    ):
        self.config = PickPlaceConfig(task, max_steps, substeps, randomize_yaw).validate()
        self.task = T.get(task)
        if self.config.max_steps is None:
            self.config = PickPlaceConfig(task, self.task.max_steps, substeps, randomize_yaw)
        self.observation_space = spaces.Box(-5.0, 5.0, (OBS_DIM,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (5,), np.float32)
        self._scene: PandaScene | None = None
        self._target = np.zeros(3)
        self._yaw_target = 0.0
        self._finger = FINGER_MAX
        self._steps = 0
        self._success = False
        self._layout: dict[str, Any] = {}

    # ---- gymnasium API -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if self._scene is None:
            self._scene = PandaScene(substeps=self.config.substeps)
        layout = self.task.sample(self.np_random, self.config.randomize_yaw)
        s = self._scene
        for o in self.task.objects:
            xy, yaw = layout[o.name]
            if o.kind == "cube":
                s.place_cube(o.name, xy, yaw, color=o.color)
            elif o.kind == "tray":
                s.place_tray(o.name, xy, yaw, color=o.color)
            else:
                s.place_pad(o.name, xy, yaw, PAD_HALF, o.color)
        s.reset_arm(HOME, 0.0, FINGER_MAX)
        s.step(30)
        self._target = s.ee_position()
        self._yaw_target = 0.0
        self._finger = FINGER_MAX
        self._steps = 0
        self._success = False
        self._layout = {k: {"xy": list(v[0]), "yaw": v[1]} for k, v in layout.items()}
        return self._obs(), {"layout": dict(self._layout)}

    def step(self, action):
        if self._scene is None:
            raise RuntimeError("call reset() before step()")
        a = np.asarray(action, dtype=np.float64).reshape(-1)
        if a.shape != (5,) or not np.all(np.isfinite(a)):
            raise ValueError(f"action must be 5 finite numbers in [-1, 1], got {action!r}")
        a = np.clip(a, -1.0, 1.0)
        s = self._scene
        ee = s.ee_position()
        # The commanded pose accumulates, but never runs more than 4 cm ahead of the hand.
        self._target = np.clip(self._target + a[:3] * MOVE_STEP, WORKSPACE_LOW, WORKSPACE_HIGH)
        lag = self._target - ee
        if np.linalg.norm(lag) > 0.04:
            self._target = ee + lag / np.linalg.norm(lag) * 0.04
        self._yaw_target = float(np.clip(self._yaw_target + a[3] * YAW_STEP, -2.5, 2.5))
        if a[4] > GRIP_THRESHOLD:
            self._finger = FINGER_MAX
        elif a[4] < -GRIP_THRESHOLD:
            self._finger = 0.0
        s.command(self._target, self._yaw_target, self._finger)
        s.step()
        self._steps += 1
        achieved = self._achieved()
        reward = 1.0 if achieved and not self._success else 0.0
        self._success = self._success or achieved
        terminated = achieved
        truncated = not terminated and self._steps >= self.config.max_steps
        return self._obs(), reward, terminated, truncated, {"success": achieved}

    def close(self):
        if self._scene is not None:
            self._scene.close()
            self._scene = None

    def episode_metrics(self) -> dict[str, float]:
        """``success`` (0/1) and ``steps`` of the episode that just ended."""
        return {"success": float(self._success), "steps": float(self._steps)}

    # ---- helpers -----------------------------------------------------------------------
    def _obs(self) -> np.ndarray:
        s = self._scene
        assert s is not None
        ee = s.ee_position()
        ee_yaw = s.ee_yaw()
        o = np.zeros(OBS_DIM, dtype=np.float64)
        o[OBS_EE] = ee
        o[OBS_EE_YAW] = ee_yaw
        o[OBS_WIDTH] = s.finger_width()
        for i, obj in enumerate(self.task.objects):
            pos, yaw = s.pose(obj.name)
            o[slot_index(i, SLOT_POS)] = pos
            o[slot_index(i, SLOT_REL_YAW)] = wrap_quarter(yaw - ee_yaw)
            o[slot_index(i, SLOT_REL)] = pos - ee
            o[slot_index(i, SLOT_KIND).start + KINDS.index(obj.kind)] = 1.0
        return np.clip(o, -5.0, 5.0).astype(np.float32)

    def _achieved(self) -> bool:
        """Every relation of the task holds, every cube released and at rest."""
        s = self._scene
        assert s is not None
        for o in self.task.objects:
            if o.kind == "cube" and (s.touching(o.name) or s.speed(o.name) > REST_SPEED):
                return False
        return all(self._holds(rel, a, b) for rel, a, b in self.task.relations)

    def _holds(self, rel: str, a: int, b: int) -> bool:
        s = self._scene
        assert s is not None
        pa, _ = s.pose(self.task.objects[a].name)
        pb, yaw_b = s.pose(self.task.objects[b].name)
        d = pa[:2] - pb[:2]
        c, si = math.cos(-yaw_b), math.sin(-yaw_b)
        local = np.abs(np.array([c * d[0] - si * d[1], si * d[0] + c * d[1]]))
        if rel == "in":
            return bool(np.all(local < TRAY_HALF_INNER) and pa[2] < 0.07)
        if rel == "on":
            return bool(np.linalg.norm(d) < 0.03 and abs(pa[2] - (pb[2] + CUBE_SIZE)) < 0.012)
        if rel == "on_pad":
            return bool(np.all(local < PAD_HALF - 0.01) and pa[2] < CUBE_SIZE / 2 + 0.01)
        if rel == "off":
            return bool(np.any(local > PAD_HALF + CUBE_SIZE / 2))
        raise ValueError(f"unknown relation {rel!r}")
