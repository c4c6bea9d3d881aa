"""The pybullet adapter: the only module of the robot app that imports pybullet.

One :class:`PandaScene` owns one physics client (``p.connect(p.DIRECT)``) and passes
its id to every call, so any number of scenes live side by side in one process.
It knows the Franka Panda from ``pybullet_data`` (arm joints 0-6, fingers 9-10,
grasp link 11), 5 cm cubes and a scaled ``tray/traybox.urdf``; the env above it
speaks only in positions, yaws and finger widths.

Example::

    >>> scene = PandaScene()
    >>> scene.reset_arm((0.45, 0.0, 0.30))
    >>> bool(abs(scene.ee_position()[2] - 0.30) < 0.02)
    True
    >>> scene.close()
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pybullet as p
import pybullet_data

ARM_JOINTS = tuple(range(7))
FINGER_JOINTS = (9, 10)
GRASP_LINK = 11
FINGER_MAX = 0.04
"""Opening of one finger when fully open (m); the gripper's width is twice this."""
CUBE_SIZE = 0.05
TRAY_SCALE = 0.4
TRAY_HALF_INNER = 0.09
"""Half-width of the scaled tray's flat floor (m)."""
_REST = (0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.785)
_LOWER = (-2.9, -1.76, -2.9, -3.07, -2.9, -0.02, -2.9)
_UPPER = (2.9, 1.76, 2.9, -0.07, 2.9, 3.75, 2.9)
_RANGES = tuple(hi - lo for lo, hi in zip(_LOWER, _UPPER))


class PandaScene:
    """A Panda on a floor, with cubes and a tray, in its own DIRECT physics client."""

    def __init__(self, substeps: int = 6, timestep: float = 1.0 / 180.0):
        self.substeps = int(substeps)
        self.client = p.connect(p.DIRECT)
        if self.client < 0:
            raise RuntimeError("pybullet could not open a DIRECT physics client")
        c = self.client
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=c)
        p.setGravity(0, 0, -9.81, physicsClientId=c)
        p.setTimeStep(timestep, physicsClientId=c)
        p.setPhysicsEngineParameter(numSolverIterations=50, physicsClientId=c)
        self.plane = p.loadURDF("plane.urdf", physicsClientId=c)
        self.robot = p.loadURDF(
            "franka_panda/panda.urdf",
            useFixedBase=True,
            physicsClientId=c,
        )
        for j in FINGER_JOINTS:
            p.changeDynamics(
                self.robot, j, lateralFriction=1.5, spinningFriction=0.01, physicsClientId=c
            )
        self.bodies: dict[str, int] = {}
        self._finger_target = FINGER_MAX
        self._joint_targets = list(_REST)

    # ---- objects -------------------------------------------------------------------------
    def place_cube(
        self,
        name: str,
        xy: Sequence[float],
        yaw: float,
        z: float | None = None,
        color: Sequence[float] = (0.9, 0.2, 0.2, 1.0),
    ) -> None:
        """Put cube ``name`` (created on first use) at ``xy`` resting on the floor, rotated by ``yaw``."""
        c = self.client
        pos = (float(xy[0]), float(xy[1]), CUBE_SIZE / 2 if z is None else float(z))
        orn = p.getQuaternionFromEuler((0, 0, float(yaw)))
        if name not in self.bodies:
            self.bodies[name] = p.loadURDF("cube_small.urdf", pos, orn, physicsClientId=c)
            p.changeDynamics(self.bodies[name], -1, lateralFriction=1.2, physicsClientId=c)
            p.changeVisualShape(self.bodies[name], -1, rgbaColor=color, physicsClientId=c)
        else:
            p.resetBasePositionAndOrientation(self.bodies[name], pos, orn, physicsClientId=c)
            p.resetBaseVelocity(self.bodies[name], (0, 0, 0), (0, 0, 0), physicsClientId=c)

    def place_tray(
        self, name: str, xy: Sequence[float], yaw: float, color: Sequence[float] | None = None
    ) -> None:
        """Put the scaled tray ``name`` (created on first use) on the floor at ``xy``."""
        c = self.client
        pos = (float(xy[0]), float(xy[1]), 0.0)
        orn = p.getQuaternionFromEuler((0, 0, float(yaw)))
        if name not in self.bodies:
            self.bodies[name] = p.loadURDF(
                "tray/traybox.urdf",
                pos,
                orn,
                useFixedBase=True,
                globalScaling=TRAY_SCALE,
                physicsClientId=c,
            )
            if color is not None:
                p.changeVisualShape(self.bodies[name], -1, rgbaColor=color, physicsClientId=c)
        else:
            p.resetBasePositionAndOrientation(self.bodies[name], pos, orn, physicsClientId=c)

    def place_pad(
        self, name: str, xy: Sequence[float], yaw: float, half: float, color: Sequence[float]
    ) -> None:
        """Put the flat square marker ``name`` (half-side ``half``; seen, never touched: it
        has no collision shape) on the floor at ``xy``."""
        c = self.client
        pos = (float(xy[0]), float(xy[1]), 0.001)
        orn = p.getQuaternionFromEuler((0, 0, float(yaw)))
        if name not in self.bodies:
            vis = p.createVisualShape(
                p.GEOM_BOX, halfExtents=(half, half, 0.001), rgbaColor=color, physicsClientId=c
            )
            self.bodies[name] = p.createMultiBody(
                baseMass=0, baseCollisionShapeIndex=-1, baseVisualShapeIndex=vis,
                basePosition=pos, baseOrientation=orn, physicsClientId=c,
            )  # fmt: skip
        else:
            p.resetBasePositionAndOrientation(self.bodies[name], pos, orn, physicsClientId=c)

    def place_object(
        self, name: str, urdf: str, xy: Sequence[float], yaw: float, z: float, scale: float
    ) -> None:
        """Load ``urdf`` (a path, e.g. one of :func:`random_object_urdfs`) as body ``name``,
        scaled by ``scale``, at ``(xy, z)`` rotated by ``yaw``; a body of that name goes first."""
        self.remove(name)
        orn = p.getQuaternionFromEuler((0, 0, float(yaw)))
        pos = (float(xy[0]), float(xy[1]), float(z))
        self.bodies[name] = p.loadURDF(
            urdf, pos, orn, globalScaling=float(scale), physicsClientId=self.client
        )

    def aabb(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """World axis-aligned bounding box (lower corner, upper corner) of body ``name``."""
        lo, hi = p.getAABB(self.bodies[name], physicsClientId=self.client)
        return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)

    def axes(self, name: str) -> np.ndarray:
        """The rotation matrix (3, 3) of body ``name``: its x, y, z axes as columns."""
        _, orn = p.getBasePositionAndOrientation(self.bodies[name], physicsClientId=self.client)
        return np.asarray(p.getMatrixFromQuaternion(orn), dtype=np.float64).reshape(3, 3)

    def remove(self, name: str) -> None:
        """Delete body ``name`` if it exists."""
        if name in self.bodies:
            p.removeBody(self.bodies.pop(name), physicsClientId=self.client)

    def pose(self, name: str) -> tuple[np.ndarray, float]:
        """Position (3,) and yaw of body ``name``."""
        pos, orn = p.getBasePositionAndOrientation(self.bodies[name], physicsClientId=self.client)
        yaw = p.getEulerFromQuaternion(orn)[2]
        return np.asarray(pos, dtype=np.float64), float(yaw)

    def speed(self, name: str) -> float:
        """Linear speed of body ``name`` (m/s)."""
        lin, _ = p.getBaseVelocity(self.bodies[name], physicsClientId=self.client)
        return float(np.linalg.norm(lin))

    def touching(self, name: str) -> bool:
        """True when a finger of the robot touches body ``name``."""
        pts = p.getContactPoints(self.robot, self.bodies[name], physicsClientId=self.client)
        return any(pt[3] in FINGER_JOINTS for pt in pts)

    # ---- robot ---------------------------------------------------------------------------
    def _ik(self, pos: Sequence[float], yaw: float) -> list[float]:
        orn = p.getQuaternionFromEuler((math.pi, 0.0, float(yaw)))
        q = p.calculateInverseKinematics(
            self.robot,
            GRASP_LINK,
            [float(v) for v in pos],
            orn,
            lowerLimits=_LOWER,
            upperLimits=_UPPER,
            jointRanges=_RANGES,
            restPoses=_REST,
            maxNumIterations=30,
            residualThreshold=1e-4,
            physicsClientId=self.client,
        )
        return list(q[:7])

    def reset_arm(self, pos: Sequence[float], yaw: float = 0.0, finger: float = FINGER_MAX) -> None:
        """Teleport the arm so that the grasp point is at ``pos`` (IK, a few refinement passes)."""
        c = self.client
        for j, q in zip(ARM_JOINTS, _REST):
            p.resetJointState(self.robot, j, q, physicsClientId=c)
        for _ in range(4):
            q = self._ik(pos, yaw)
            for j, qj in zip(ARM_JOINTS, q):
                p.resetJointState(self.robot, j, qj, physicsClientId=c)
        for j in FINGER_JOINTS:
            p.resetJointState(self.robot, j, finger, physicsClientId=c)
        self._joint_targets = q
        self._finger_target = finger
        self._apply_motors()

    def command(self, pos: Sequence[float], yaw: float, finger: float) -> None:
        """Drive the grasp point toward ``pos`` with yaw ``yaw`` and fingers to ``finger`` (m)."""
        self._joint_targets = self._ik(pos, yaw)
        self._finger_target = float(np.clip(finger, 0.0, FINGER_MAX))
        self._apply_motors()

    def _apply_motors(self) -> None:
        c = self.client
        p.setJointMotorControlArray(
            self.robot,
            ARM_JOINTS,
            p.POSITION_CONTROL,
            targetPositions=self._joint_targets,
            forces=[200.0] * 7,
            positionGains=[0.3] * 7,
            physicsClientId=c,
        )
        p.setJointMotorControlArray(
            self.robot,
            FINGER_JOINTS,
            p.POSITION_CONTROL,
            targetPositions=[self._finger_target] * 2,
            forces=[40.0] * 2,
            physicsClientId=c,
        )

    def step(self, n: int | None = None) -> None:
        """Advance the simulation by ``n`` (default: ``substeps``) physics steps."""
        for _ in range(self.substeps if n is None else n):
            p.stepSimulation(physicsClientId=self.client)

    def ee_position(self) -> np.ndarray:
        """World position (3,) of the grasp point (link 11)."""
        st = p.getLinkState(
            self.robot, GRASP_LINK, computeForwardKinematics=True, physicsClientId=self.client
        )
        return np.asarray(st[4], dtype=np.float64)

    def ee_yaw(self) -> float:
        """Yaw of the gripper about the vertical (0: fingers close along the world y axis)."""
        st = p.getLinkState(
            self.robot, GRASP_LINK, computeForwardKinematics=True, physicsClientId=self.client
        )
        yaw = p.getEulerFromQuaternion(st[5])[2]
        return float(_wrap(yaw))

    def finger_width(self) -> float:
        """Distance between the two fingers (m), 0 closed to 0.08 open."""
        return float(
            sum(
                p.getJointState(self.robot, j, physicsClientId=self.client)[0]
                for j in FINGER_JOINTS
            )
        )

    def close(self) -> None:
        """Disconnect this scene's physics client (idempotent)."""
        if self.client is not None and self.client >= 0:
            try:
                p.disconnect(physicsClientId=self.client)
            except p.error:  # already gone
                pass
        self.client = -1


def _wrap(a: float) -> float:
    return (a + math.pi) % (2 * math.pi) - math.pi


def random_object_urdfs() -> list[str]:
    """The 1,000 procedurally generated objects of ``pybullet_data/random_urdfs`` (the
    objects of pybullet's ``KukaDiverseObjectEnv``), as paths ordered by their number."""
    import glob
    import os

    root = os.path.join(pybullet_data.getDataPath(), "random_urdfs")
    return sorted(glob.glob(os.path.join(root, "*", "*.urdf")))
