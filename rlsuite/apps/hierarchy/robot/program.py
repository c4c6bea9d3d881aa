"""The robot's procedure library as a
:class:`~rlsuite.apps.hierarchy.procedures.spec.HierarchySpec`, its input view and controller.

The robot runs on the shared procedure model (:mod:`rlsuite.apps.hierarchy.procedures`):
the scripted expert (:mod:`.expert`) and the learned :class:`ProcedureModel` are two
policies run by the same :class:`~rlsuite.apps.hierarchy.procedures.executor.Executor`,
which records :class:`Trace` s::

    PICK_AND_PLACE()      -> PICK(object), PLACE(object)
    PICK(object)          -> MOVE_TO(goal), OPEN, MOVE_TO(goal), CLOSE, MOVE_TO(goal)
    PLACE(object)         -> MOVE_TO(goal), MOVE_TO(goal), OPEN, MOVE_TO(goal)
    MOVE_TO(goal), OPEN, CLOSE -> STEP(command), STEP(command), ... (until they terminate)

``object`` is a discrete argument (0: the cube, 1: the target, see :data:`OBJECTS`);
``goal`` is continuous ``(x, y, z, yaw)``; ``STEP``'s ``command`` is the env's 5-D action.
A leaf's pc counts the steps it has taken.

:class:`RobotView` is the model's
:class:`~rlsuite.apps.hierarchy.procedures.model.InputView`: each procedure sees the
observation from where it stands (a skill relative to its object, MOVE_TO relative to its
goal), and a skill outputs MOVE_TO's goal as an offset from its object, so one PICK works
wherever the cube lies (and on a second task's objects).

Example::

    >>> ProcedureModel(SPEC, view=RobotView()).heads[SPEC_INDEX["PICK"]].n_ops
    3
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from rlsuite.apps.hierarchy.procedures.executor import Executor, Policy
from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
from rlsuite.apps.hierarchy.procedures.spec import ActionSpec, ArgSpec, HierarchySpec, ProcedureSpec
from rlsuite.apps.hierarchy.procedures.traces import Decision, Trace

TASKS = ("pick_place", "stack")
"""``pick_place``: the cube into the tray; ``stack``: the cube on top of a second cube."""
ROOT = "PICK_AND_PLACE"
SKILLS = ("PICK", "PLACE")
"""Procedures that take an object and call leaves (the reusable skills)."""
LEAVES = ("MOVE_TO", "OPEN", "CLOSE")
"""Procedures that emit elementary actions (STEP)."""
OBJECTS = ("cube", "target")
"""Values of a skill's ``object`` argument (index = argument value)."""
MAX_LEAF_STEPS = {"MOVE_TO": 40, "OPEN": 12, "CLOSE": 12}
"""A leaf call returns after this many steps whatever its termination predicate says."""
MAX_PC = 8
"""A skill returns after this many calls whatever its termination predicate says."""
ROOT_MAX_PC = 2
IDLE_ACTION = np.zeros(5, dtype=np.float32)

SPEC = HierarchySpec(
    obs_dim=20,
    actions=(ActionSpec("STEP", (ArgSpec("command", "continuous", 5),)),),
    procedures=(
        ProcedureSpec(ROOT, SKILLS, max_pc=ROOT_MAX_PC, max_ops=ROOT_MAX_PC),
        *(
            ProcedureSpec(s, LEAVES, (ArgSpec("object", "discrete", len(OBJECTS)),), max_ops=MAX_PC)
            for s in SKILLS
        ),
        ProcedureSpec(
            "MOVE_TO",
            ("STEP",),
            (ArgSpec("goal", "continuous", 4),),
            max_ops=MAX_LEAF_STEPS["MOVE_TO"],
        ),
        ProcedureSpec("OPEN", ("STEP",), max_ops=MAX_LEAF_STEPS["OPEN"]),
        ProcedureSpec("CLOSE", ("STEP",), max_ops=MAX_LEAF_STEPS["CLOSE"]),
    ),
    root=ROOT,
    max_pc=MAX_PC,
)
"""The robot's hierarchy (validated at import)."""
SPEC.validate()
SPEC_INDEX = {p.name: i for i, p in enumerate(SPEC.procedures)}

# observation layout (kept here, without pybullet, so the spec imports cheaply; env.py
# asserts they agree)
_EE = slice(0, 3)
_EE_YAW = 3
_WIDTH = 4
_OBJ_POS = (slice(5, 8), slice(9, 12))
_OBJ_REL_YAW = (8, 12)
_TARGET_KIND = 19


def _wrap(a: torch.Tensor) -> torch.Tensor:
    return torch.remainder(a + math.pi, 2 * math.pi) - math.pi


def _object_pos(obs: torch.Tensor, obj: torch.Tensor) -> torch.Tensor:
    return torch.where((obj == 0).unsqueeze(-1), obs[:, _OBJ_POS[0]], obs[:, _OBJ_POS[1]])


class RobotView:
    """Per-procedure features and argument units of the robot's :class:`ProcedureModel`.

    - root: the target kind and its pc (one-hot, clipped at 2);
    - PICK / PLACE: its object seen from the hand (x5), the object's yaw relative to the
      hand, finger width (x10), target kind, hand height (x5), pc one-hot; their MOVE_TO goal
      output is ``(goal - object) x10`` and the yaw change;
    - MOVE_TO: the goal seen from the hand (x10), its distance, yaw error, finger width;
    - OPEN / CLOSE: finger width (x10) and the steps taken / 5.
    Every STEP command is clipped to the action box ``[-1, 1]`` when decoded.
    """

    DIMS = {ROOT: 1 + ROOT_MAX_PC + 1, "PICK": 7 + MAX_PC + 1, "PLACE": 7 + MAX_PC + 1,
            "MOVE_TO": 6, "OPEN": 2, "CLOSE": 2}  # fmt: skip

    def in_dim(self, spec: HierarchySpec, proc: ProcedureSpec) -> int:
        return self.DIMS[proc.name]

    def features(
        self, proc: str, obs: torch.Tensor, pc: torch.Tensor, args: list[torch.Tensor]
    ) -> torch.Tensor:
        obs = obs.float()
        if proc == ROOT:
            pc1 = F.one_hot(pc.clamp(max=ROOT_MAX_PC), ROOT_MAX_PC + 1).float()
            return torch.cat([obs[:, _TARGET_KIND : _TARGET_KIND + 1], pc1], dim=1)
        if proc in SKILLS:
            obj = args[0]
            rel = (_object_pos(obs, obj) - obs[:, _EE]) * 5.0
            yaw = torch.where(obj == 0, obs[:, _OBJ_REL_YAW[0]], obs[:, _OBJ_REL_YAW[1]])
            pc1 = F.one_hot(pc.clamp(max=MAX_PC), MAX_PC + 1).float()
            return torch.cat(
                [
                    rel,
                    yaw[:, None],
                    obs[:, _WIDTH : _WIDTH + 1] * 10,
                    obs[:, _TARGET_KIND : _TARGET_KIND + 1],
                    obs[:, 2:3] * 5,
                    pc1,
                ],
                dim=1,
            )
        if proc == "MOVE_TO":
            goal = args[0]
            d = (goal[:, :3] - obs[:, _EE]) * 10.0
            yaw = _wrap(goal[:, 3] - obs[:, _EE_YAW])
            return torch.cat(
                [d, d.norm(dim=1, keepdim=True), yaw[:, None], obs[:, _WIDTH : _WIDTH + 1] * 10],
                dim=1,
            )
        if proc in ("OPEN", "CLOSE"):
            return torch.stack([obs[:, _WIDTH] * 10, pc.float() / 5.0], dim=1)
        raise KeyError(f"unknown robot procedure {proc!r}")

    def encode_arg(self, proc, op, index, obs, args, value):
        if proc in SKILLS and op == "MOVE_TO":
            obs = obs.float()
            off = (value[:, :3] - _object_pos(obs, args[0])) * 10.0
            return torch.cat([off, _wrap(value[:, 3:4] - obs[:, _EE_YAW : _EE_YAW + 1])], dim=1)
        return value

    def decode_arg(self, proc, op, index, obs, args, raw):
        if proc in SKILLS and op == "MOVE_TO":
            obs = obs.float()
            pos = _object_pos(obs, args[0]) + raw[:, :3] / 10.0
            return torch.cat([pos, obs[:, _EE_YAW : _EE_YAW + 1] + raw[:, 3:4]], dim=1)
        if op == "STEP":
            return raw.clamp(-1.0, 1.0)
        return raw

    def config(self) -> dict[str, Any]:
        return {}


class Controller:
    """A robot controller (``reset(seed)`` / ``act(obs) -> action``) that runs a procedure
    policy (the scripted expert or a :class:`ProcedureModel`) through :class:`Executor`.

    After the root returns it holds still (zero action). ``trace(info)`` is the recorded
    :class:`Trace` (``record=True``)."""

    def __init__(self, policy: Policy, name: str = "procedures", record: bool = False):
        self.policy = policy
        self.name = name
        self.executor = Executor(SPEC, policy, record=record)

    def reset(self, seed: int | None = None) -> None:
        self.executor.reset(seed)

    @property
    def finished(self) -> bool:
        return self.executor.done

    @property
    def stack(self) -> list:
        return self.executor.stack

    def act(self, obs: Any) -> np.ndarray:
        d: Decision = self.executor.act(np.asarray(obs, dtype=np.float32))
        if d.kind == "stop":
            return IDLE_ACTION.copy()
        return np.clip(np.asarray(d.args[0], dtype=np.float32), -1.0, 1.0)

    def trace(self, info: dict[str, Any] | None = None, strong: bool = True) -> Trace:
        return self.executor.trace(info, strong)


def anchor_position(obs: np.ndarray, obj: int) -> np.ndarray:
    """Position of object ``obj`` (0: cube, 1: target) in ``obs``."""
    return np.asarray(obs[_OBJ_POS[obj]], dtype=np.float64)


def make_model(hidden: int = 64, seed: int = 0) -> ProcedureModel:
    """A fresh learned controller of the robot's hierarchy (untrained)."""
    return ProcedureModel(
        SPEC,
        hidden=(hidden, hidden),
        cache=False,  # observations never repeat: memoising would only grow
        seed=seed,
        view=RobotView(),
        balance_termination=True,
        separate_termination=True,
    )
