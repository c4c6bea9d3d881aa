"""PickPlaceEnv: a Franka Panda puts a 5 cm cube into a tray, or stacks it on a second cube.

Registered as ``rlsuite/PickPlace-v0``. Physics run in pybullet (DIRECT mode) through
:mod:`rlsuite.apps.hierarchy.robot.sim`; each env owns its own physics client and
disconnects it in :meth:`PickPlaceEnv.close`.

Example::

    >>> env = PickPlaceEnv(task="pick_place")
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape
    (20,)
    >>> env.close()
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rlsuite.apps.hierarchy.robot.program import TASKS
from rlsuite.apps.hierarchy.robot.sim import CUBE_SIZE, FINGER_MAX, TRAY_HALF_INNER, PandaScene

MOVE_STEP = 0.03
"""Largest end-effector displacement per step along each axis (m), at action 1.0."""
YAW_STEP = 0.15
"""Largest gripper rotation per step (rad), at action 1.0."""
GRIP_THRESHOLD = 0.5
"""``action[4] > 0.5`` opens the gripper, ``< -0.5`` closes it, anything between keeps it."""
HOME = (0.40, 0.0, 0.30)
WORKSPACE_LOW = np.array([0.20, -0.45, 0.012])
WORKSPACE_HIGH = np.array([0.80, 0.45, 0.45])

# Observation layout (indices into the 20-vector).
OBS_EE = slice(0, 3)
OBS_EE_YAW = 3
OBS_WIDTH = 4
OBS_CUBE = slice(5, 8)
OBS_CUBE_REL_YAW = 8
OBS_TARGET = slice(9, 12)
OBS_TARGET_REL_YAW = 12
OBS_CUBE_MINUS_EE = slice(13, 16)
OBS_TARGET_MINUS_EE = slice(16, 19)
OBS_TARGET_KIND = 19
OBS_DIM = 20
OBJECTS = ("cube", "target")
"""The objects a procedure can take as its argument, in observation order."""
OBJECT_SLICES = {"cube": OBS_CUBE, "target": OBS_TARGET}
OBJECT_REL_YAW = {"cube": OBS_CUBE_REL_YAW, "target": OBS_TARGET_REL_YAW}


def wrap_quarter(a: float) -> float:
    """An angle modulo a quarter turn, in [-pi/4, pi/4) (a cube looks the same every 90 deg)."""
    return (a + math.pi / 4) % (math.pi / 2) - math.pi / 4


@dataclass(frozen=True)
class PickPlaceConfig:
    """Keyword arguments of :class:`PickPlaceEnv` (all validated)."""

    task: str = "pick_place"
    """``pick_place`` (cube into the tray) or ``stack`` (cube onto a second cube)."""
    max_steps: int = 150
    """Episode horizon (steps); the scripted expert needs about 60-80."""
    substeps: int = 6
    """Physics steps (1/180 s each) per env step."""
    randomize_yaw: bool = True
    """Random yaw of the cubes (in [-pi/4, pi/4)) and of the tray."""

    def validate(self) -> PickPlaceConfig:
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}: choose one of {', '.join(TASKS)}")
        if not isinstance(self.max_steps, int) or self.max_steps < 1:
            raise ValueError(f"max_steps must be a positive int, got {self.max_steps!r}")
        if not isinstance(self.substeps, int) or not 1 <= self.substeps <= 50:
            raise ValueError(f"substeps must be an int in 1..50, got {self.substeps!r}")
        return self


class PickPlaceEnv(gym.Env):
    """A Panda arm, a 5 cm cube and a target (a tray or a second cube) at random places.

    States:
        The 20-vector ``[ee_xyz(3), ee_yaw, finger_width, cube_xyz(3), cube_rel_yaw,
        target_xyz(3), target_rel_yaw, cube-ee(3), target-ee(3), target_kind]`` (metres,
        radians). ``*_rel_yaw`` is the object's yaw minus the gripper's, modulo a quarter
        turn; ``target_kind`` is 0 for the tray, 1 for a cube.
    Actions:
        ``Box(-1, 1, (5,))``: end-effector displacement ``dx, dy, dz`` (times 3 cm),
        rotation ``dyaw`` (times 0.15 rad) and a gripper command (``> 0.5`` open,
        ``< -0.5`` close, otherwise keep). Inverse kinematics turns the pose into joint
        targets for the arm's position controllers.
    Rewards:
        1.0 on the step the task is achieved, 0 otherwise.
    Termination:
        Terminated when the cube rests, released, inside the tray (``pick_place``) or
        on top of the second cube (``stack``); truncated after ``max_steps``.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        task: str = "pick_place",
        max_steps: int = 150,
        substeps: int = 6,
        randomize_yaw: bool = True,
    ):
        self.config = PickPlaceConfig(task, max_steps, substeps, randomize_yaw).validate()
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
        rng = self.np_random
        cube_xy, target_xy = self._sample_layout(rng)
        span = math.pi / 4 if self.config.randomize_yaw else 0.0
        cube_yaw = float(rng.uniform(-span, span))
        target_yaw = float(rng.uniform(-span, span))
        s = self._scene
        s.place_cube("cube", cube_xy, cube_yaw)
        if self.config.task == "pick_place":
            s.remove("base")
            s.place_tray("tray", target_xy, target_yaw)
        else:
            s.remove("tray")
            s.place_cube("base", target_xy, target_yaw, color=(0.2, 0.4, 0.9, 1.0))
        s.reset_arm(HOME, 0.0, FINGER_MAX)
        s.step(30)
        self._target = s.ee_position()
        self._yaw_target = 0.0
        self._finger = FINGER_MAX
        self._steps = 0
        self._success = False
        self._layout = dict(
            cube_xy=list(cube_xy),
            target_xy=list(target_xy),
            cube_yaw=cube_yaw,
            target_yaw=target_yaw,
        )
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
    def _sample_layout(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        margin = 0.22 if self.config.task == "pick_place" else 0.15
        while True:
            cube = np.array([rng.uniform(0.35, 0.65), rng.uniform(-0.30, 0.30)])
            target = np.array([rng.uniform(0.35, 0.62), rng.uniform(-0.30, 0.30)])
            if np.linalg.norm(cube - target) >= margin:
                return cube, target

    def _target_name(self) -> str:
        return "tray" if self.config.task == "pick_place" else "base"

    def _obs(self) -> np.ndarray:
        s = self._scene
        assert s is not None
        ee = s.ee_position()
        ee_yaw = s.ee_yaw()
        cube, cube_yaw = s.pose("cube")
        target, target_yaw = s.pose(self._target_name())
        o = np.zeros(OBS_DIM, dtype=np.float64)
        o[OBS_EE] = ee
        o[OBS_EE_YAW] = ee_yaw
        o[OBS_WIDTH] = s.finger_width()
        o[OBS_CUBE] = cube
        o[OBS_CUBE_REL_YAW] = wrap_quarter(cube_yaw - ee_yaw)
        o[OBS_TARGET] = target
        o[OBS_TARGET_REL_YAW] = wrap_quarter(target_yaw - ee_yaw)
        o[OBS_CUBE_MINUS_EE] = cube - ee
        o[OBS_TARGET_MINUS_EE] = target - ee
        o[OBS_TARGET_KIND] = 0.0 if self.config.task == "pick_place" else 1.0
        return np.clip(o, -5.0, 5.0).astype(np.float32)

    def _achieved(self) -> bool:
        s = self._scene
        assert s is not None
        cube, _ = s.pose("cube")
        if s.touching("cube") or s.speed("cube") > 0.05:
            return False
        target, target_yaw = s.pose(self._target_name())
        d = cube[:2] - target[:2]
        if self.config.task == "pick_place":
            c, si = math.cos(-target_yaw), math.sin(-target_yaw)
            local = np.array([c * d[0] - si * d[1], si * d[0] + c * d[1]])
            return bool(np.all(np.abs(local) < TRAY_HALF_INNER) and cube[2] < 0.07)
        on_top = abs(cube[2] - (target[2] + CUBE_SIZE)) < 0.012
        return bool(np.linalg.norm(d) < 0.03 and on_top and s.speed("base") < 0.05)
