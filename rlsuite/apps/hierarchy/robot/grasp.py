"""PandaGraspEnv: one top-down grasp of a random object by a Franka Panda (pybullet).

Registered as ``rlsuite/PandaGrasp-v0``: the grasping task of QT-Opt (Kalashnikov et
al. 2018) and of Quillen et al. (ICRA 2018), on the 1,000 procedurally generated objects
of ``pybullet_data/random_urdfs`` that pybullet's ``KukaDiverseObjectEnv`` uses, with the
same split: objects whose number ends in 0 are held out (``objects="test"``, 100 of
them), the other 900 are for training. The observation is the object's pose and size,
not a camera image (those papers learn from images): it needs no rendering, so 10,000
grasps take minutes on one core. A grasp is one step, executed by a script: teleport
above the grasp point, descend, close, lift.

Example::

    >>> env = PandaGraspEnv(objects="test")
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, info["object"] % 10
    ((10,), 0)
    >>> _, reward, terminated, _, _ = env.step(env.action_space.sample())
    >>> reward in (0.0, 1.0), terminated
    (True, True)
    >>> env.close()
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rlsuite.apps.hierarchy.robot.sim import FINGER_MAX, PandaScene, random_object_urdfs

CENTER = (0.5, 0.0)
"""Middle of the bin (m): objects drop around it, grasps aim around it."""
DROP_HALF = 0.05
"""Objects drop at a uniform random point within this half-width of :data:`CENTER` (m)."""
REACH_HALF = 0.08
"""Grasp points lie within this half-width of :data:`CENTER` (m): ``action[:2]`` times it."""
GRASP_Z = 0.015
"""Height the grasp point descends to (m): fingertips just above the floor."""
LIFT_Z = 0.25
"""Height the grasp point lifts to (m)."""
LIFTED_Z = 0.05
"""A grasp succeeds when the object's lowest point ends above this height (m)."""
OBS_DIM = 10
_UNIT = np.array([REACH_HALF, REACH_HALF, 0.1])

__all__ = ["OBS_DIM", "PandaGraspEnv", "object_split"]


def object_split(objects: str) -> list[int]:
    """Object numbers of a split: ``test`` (number ending in 0, as ``KukaDiverseObjectEnv``
    holds out), ``train`` (the rest) or ``all``."""
    if objects not in ("train", "test", "all"):
        raise ValueError(f"objects must be 'train', 'test' or 'all', got {objects!r}")
    return [i for i in range(1000) if objects == "all" or (i % 10 == 0) == (objects == "test")]


@dataclass(frozen=True)
class GraspConfig:
    """Keyword arguments of :class:`PandaGraspEnv` (all validated)."""

    objects: str = "train"
    """Which objects appear: ``train`` (900), ``test`` (the 100 held out) or ``all``."""
    scale: float = 0.5
    """Scale of the objects (the Panda's gripper opens 8 cm; unscaled they are 10-20 cm)."""
    settle_steps: int = 60
    """Physics steps (1/180 s) the dropped object settles before it is observed."""

    def validate(self) -> GraspConfig:
        object_split(self.objects)
        if not isinstance(self.scale, (int, float)) or not 0.1 <= self.scale <= 1.0:
            raise ValueError(f"scale must be a number in [0.1, 1], got {self.scale!r}")
        if not isinstance(self.settle_steps, int) or not 1 <= self.settle_steps <= 1000:
            raise ValueError(f"settle_steps must be an int in 1..1000, got {self.settle_steps!r}")
        return self


class PandaGraspEnv(gym.Env):
    """A random object dropped in front of a Panda; one grasp per episode.

    States:
        A 10-vector: the object's bounding-box centre relative to the bin's middle
        (``x, y`` in units of 8 cm, the grasp's reach; ``z`` in 10 cm), its bounding-box
        extents (in 10 cm), and the horizontal components of the object's own x and y
        axes (4), which give its yaw and tilt. Object-pose observations, not the papers'
        camera images.
    Actions:
        ``Box(-1, 1, (3,))``: the grasp point's ``x, y`` (times 8 cm, around the bin's
        middle) and the gripper's yaw (times pi/2). A script then opens the gripper
        above the point, descends to 1.5 cm, closes and lifts to 25 cm.
    Rewards:
        1.0 when the object ends lifted (its lowest point above 5 cm), else 0.
    Termination:
        Terminated after the one grasp.
    """

    metadata = {"render_modes": []}

    def __init__(self, objects: str = "train", scale: float = 0.5, settle_steps: int = 60):
        self.config = GraspConfig(objects, scale, settle_steps).validate()
        self._urdfs = random_object_urdfs()
        if len(self._urdfs) != 1000:
            raise RuntimeError(
                f"pybullet_data has {len(self._urdfs)} random_urdfs objects, not 1,000; "
                "reinstall pybullet"
            )
        self._ids = object_split(objects)
        self.observation_space = spaces.Box(-2.0, 2.0, (OBS_DIM,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (3,), np.float32)
        self._scene: PandaScene | None = None
        self._object = -1
        self._done = True
        self._success = False

    # ---- gymnasium API -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if self._scene is None:
            self._scene = PandaScene()
        s, rng = self._scene, self.np_random
        self._object = int(self._ids[rng.integers(len(self._ids))])
        xy = np.asarray(CENTER) + rng.uniform(-DROP_HALF, DROP_HALF, 2)
        s.reset_arm((CENTER[0], CENTER[1], 0.35))
        s.place_object(
            "object", self._urdfs[self._object], xy, rng.uniform(-math.pi, math.pi), 0.05,
            self.config.scale,
        )  # fmt: skip
        s.step(self.config.settle_steps)
        self._done, self._success = False, False
        return self._obs(), {"object": self._object}

    def step(self, action):
        if self._scene is None or self._done:
            raise RuntimeError("call reset() before step()")
        a = np.asarray(action, dtype=np.float64).reshape(-1)
        if a.shape != (3,) or not np.all(np.isfinite(a)):
            raise ValueError(f"action must be 3 finite numbers in [-1, 1], got {action!r}")
        a = np.clip(a, -1.0, 1.0)
        x, y = np.asarray(CENTER) + a[:2] * REACH_HALF
        yaw = float(a[2]) * math.pi / 2
        s = self._scene
        top = s.aabb("object")[1][2]
        s.reset_arm((x, y, max(top, GRASP_Z) + 0.06), yaw, FINGER_MAX)
        for z, finger, steps in ((GRASP_Z, FINGER_MAX, 8), (GRASP_Z, 0.0, 5), (LIFT_Z, 0.0, 8)):
            for _ in range(steps):
                s.command((x, y, z), yaw, finger)
                s.step(6)
        self._success = bool(s.aabb("object")[0][2] > LIFTED_Z)
        self._done = True
        reward = 1.0 if self._success else 0.0
        return self._obs(), reward, True, False, {"success": self._success}

    def close(self):
        if self._scene is not None:
            self._scene.close()
            self._scene = None

    def episode_metrics(self) -> dict[str, float]:
        """``success`` (0/1) of the grasp that just ended."""
        return {"success": float(self._success)}

    # ---- helpers -----------------------------------------------------------------------
    def _obs(self) -> np.ndarray:
        s = self._scene
        assert s is not None
        lo, hi = s.aabb("object")
        centre = ((lo + hi) / 2 - np.array([CENTER[0], CENTER[1], 0.0])) / _UNIT
        rot = s.axes("object")
        o = np.concatenate([centre, (hi - lo) / 0.1, rot[:2, 0], rot[:2, 1]])
        return np.clip(o, -2.0, 2.0).astype(np.float32)
