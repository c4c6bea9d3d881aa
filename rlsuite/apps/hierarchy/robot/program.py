"""The robot's procedure library as a
:class:`~rlsuite.apps.hierarchy.procedures.spec.HierarchySpec`, its input view and controller.

The robot runs on the shared procedure model (:mod:`rlsuite.apps.hierarchy.procedures`):
the scripted expert (:mod:`.expert`) and the learned :class:`ProcedureModel` are two
policies run by the same :class:`~rlsuite.apps.hierarchy.procedures.executor.Executor`,
which records :class:`Trace` s::

    PICK_AND_PLACE()      -> PICK(object), PLACE(object)              (pick_place, stack)
    SORT()                -> PICK(object), PLACE(object), ... (6 calls)  (sort)
    TOWER(), CLEAR_THEN_PLACE() -> PICK(object), PLACE(object), ... (4 calls)
    PICK(object)          -> MOVE_TO(goal), OPEN, MOVE_TO(goal), CLOSE, MOVE_TO(goal)
    PLACE(object)         -> MOVE_TO(goal), MOVE_TO(goal), OPEN, MOVE_TO(goal)
    MOVE_TO(goal), OPEN, CLOSE -> STEP(command), STEP(command), ... (until they terminate)

Each task has its own root (:func:`spec_for`; :mod:`.tasks` lists them) over the same
skills and leaves, so PICK and PLACE learned on one task run on another.
``object`` is a discrete argument: an object slot of the observation (:mod:`.tasks`);
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
    >>> spec_for("sort").root, spec_for("sort").pc_clip("SORT")
    ('SORT', 6)
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from rlsuite.apps.hierarchy.procedures.executor import Executor, Policy
from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
from rlsuite.apps.hierarchy.procedures.spec import ActionSpec, ArgSpec, HierarchySpec, ProcedureSpec
from rlsuite.apps.hierarchy.procedures.traces import Decision, Trace
from rlsuite.apps.hierarchy.robot import tasks as T
from rlsuite.apps.hierarchy.robot.tasks import (
    N_SLOTS,
    OBS_DIM,
    OBS_EE,
    OBS_EE_YAW,
    OBS_WIDTH,
    SLOT_BASE,
    SLOT_DIM,
    SLOT_KIND,
    SLOT_POS,
    SLOT_REL_YAW,
    TASKS,
)

ROOT = "PICK_AND_PLACE"
"""The root of ``pick_place`` and ``stack``."""
SKILLS = ("PICK", "PLACE")
"""Procedures that take an object and call leaves (the reusable skills)."""
LEAVES = ("MOVE_TO", "OPEN", "CLOSE")
"""Procedures that emit elementary actions (STEP)."""
OBJECTS = tuple(range(N_SLOTS))
"""Values of a skill's ``object`` argument: an object slot of the observation."""
MAX_LEAF_STEPS = {"MOVE_TO": 40, "OPEN": 12, "CLOSE": 12}
"""A leaf call returns after this many steps whatever its termination predicate says."""
MAX_PC = 8
"""Program counters are clipped here before the networks see them."""
SKILL_MAX_OPS = 10
"""A skill returns after this many calls whatever its termination predicate says (a PICK
that retries a failed grasp makes 9)."""
IDLE_ACTION = np.zeros(5, dtype=np.float32)


@functools.cache
def spec_for(task: str) -> HierarchySpec:
    """The hierarchy of ``task``: its root over the shared skills and leaves (validated)."""
    t = T.get(task)
    calls = len(t.plan)
    spec = HierarchySpec(
        obs_dim=OBS_DIM,
        actions=(ActionSpec("STEP", (ArgSpec("command", "continuous", 5),)),),
        procedures=(
            ProcedureSpec(t.root, SKILLS, max_pc=calls, max_ops=calls),
            *(
                ProcedureSpec(
                    s, LEAVES, (ArgSpec("object", "discrete", N_SLOTS),), max_ops=SKILL_MAX_OPS
                )
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
        root=t.root,
        max_pc=MAX_PC,
    )
    spec.validate()
    return spec


SPEC = spec_for("pick_place")
"""The hierarchy of ``pick_place`` and ``stack`` (root PICK_AND_PLACE)."""
SPEC_INDEX = {p.name: i for i, p in enumerate(SPEC.procedures)}
ROOT_CALLS = {T.get(t).root: len(T.get(t).plan) for t in TASKS}
"""Every task's root procedure -> its number of calls (its pc clip)."""
ROOTS = tuple(ROOT_CALLS)


def _wrap(a: torch.Tensor) -> torch.Tensor:
    return torch.remainder(a + math.pi, 2 * math.pi) - math.pi


def _slot_field(obs: torch.Tensor, obj: torch.Tensor, field: slice) -> torch.Tensor:
    """Rows of ``obs[:, field of slot obj]`` ([N, width]) for per-row slots ``obj``."""
    start = SLOT_BASE + obj.long().clamp(0, N_SLOTS - 1) * SLOT_DIM + field.start
    idx = start[:, None] + torch.arange(field.stop - field.start, device=obs.device)[None]
    return torch.gather(obs, 1, idx)


def _object_pos(obs: torch.Tensor, obj: torch.Tensor) -> torch.Tensor:
    return _slot_field(obs, obj, SLOT_POS)


HELD_DIST = 0.04
"""Root feature: an object whose position lies within this distance (m) of the hand is held
(a grasped cube: 3-15 mm)."""
REST_XY = 0.10
"""Root feature: an object rests on or in another when their xy positions are closer than
this (m; a tray's inner half-side is 9 cm, objects are laid out at least 11 cm apart) ..."""
REST_DZ = 0.08
"""... and it stands above the other by less than this (m): 2.4 cm on a pad, 3 cm in a tray,
5 cm on a cube; a cube lifted over its old place is 15 cm up and does not count."""
SCENE_PAIRS = [(a, b) for a in range(N_SLOTS) for b in range(N_SLOTS) if a != b]
"""The ordered slot pairs ``(a, b)`` of :func:`scene_features`'s "a rests on b" columns."""
SCENE_DIM = N_SLOTS + N_SLOTS + len(SCENE_PAIRS)
"""Width of :func:`scene_features`."""


def scene_features(obs: torch.Tensor) -> torch.Tensor:
    """What a root sees of the scene in ``obs`` ``[N, OBS_DIM]``, as 0/1 floats ``[N,
    SCENE_DIM]``: which slots are in use; per slot, whether it is held (within
    :data:`HELD_DIST` of the hand); per ordered pair of slots ``(a, b)``, whether ``a``
    rests on or in ``b`` (:data:`REST_XY`, :data:`REST_DZ`: a cube in a tray, on a cube, on
    a pad). Unused slots read 0. The same features serve every task: they are enough to
    tell which of a task's steps are done and which object is in hand, so a root can follow
    whichever valid order its demonstrations took (and not mix two of them)."""
    slots = obs[:, SLOT_BASE:].reshape(-1, N_SLOTS, SLOT_DIM)
    used = slots[:, :, SLOT_KIND].sum(-1) > 0
    pos = slots[:, :, SLOT_POS]
    held = used & ((pos - obs[:, None, OBS_EE]).norm(dim=-1) < HELD_DIST)
    a, b = torch.tensor([p[0] for p in SCENE_PAIRS]), torch.tensor([p[1] for p in SCENE_PAIRS])
    xy = (pos[:, a, :2] - pos[:, b, :2]).norm(dim=-1)
    dz = pos[:, a, 2] - pos[:, b, 2]
    rests = used[:, a] & used[:, b] & (xy < REST_XY) & (dz > 0) & (dz < REST_DZ)
    return torch.cat([used, held, rests], dim=1).float()


class RobotView:
    """Per-procedure features and argument units of the robot's :class:`ProcedureModel`.

    - a root: its pc (one-hot, clipped at its number of calls) and the scene's state
      (:func:`scene_features`: which slots are used, which object is held, which rests on
      or in which);
    - PICK / PLACE: its object seen from the hand (x5), the object's yaw relative to the
      hand, finger width (x10), the object's kind (one-hot), hand height (x5), pc one-hot;
      their MOVE_TO goal output is ``(goal - object) x10`` and the yaw change;
    - MOVE_TO: the goal seen from the hand (x10), its distance, yaw error, finger width;
    - OPEN / CLOSE: finger width (x10) and the steps taken / 5.
    Every STEP command is clipped to the action box ``[-1, 1]`` when decoded.
    """

    DIMS = {"PICK": 9 + MAX_PC + 1, "PLACE": 9 + MAX_PC + 1, "MOVE_TO": 6, "OPEN": 2, "CLOSE": 2}

    def in_dim(self, spec: HierarchySpec, proc: ProcedureSpec) -> int:
        if proc.name == spec.root:
            return spec.pc_clip(proc.name) + 1 + SCENE_DIM
        return self.DIMS[proc.name]

    def features(
        self, proc: str, obs: torch.Tensor, pc: torch.Tensor, args: list[torch.Tensor]
    ) -> torch.Tensor:
        obs = obs.float()
        if proc in ROOTS:
            clip = ROOT_CALLS[proc]
            pc1 = F.one_hot(pc.clamp(max=clip), clip + 1).float()
            return torch.cat([pc1, scene_features(obs)], dim=1)
        if proc in SKILLS:
            obj = args[0]
            rel = (_object_pos(obs, obj) - obs[:, OBS_EE]) * 5.0
            yaw = _slot_field(obs, obj, slice(SLOT_REL_YAW, SLOT_REL_YAW + 1))
            kind = _slot_field(obs, obj, SLOT_KIND)
            pc1 = F.one_hot(pc.clamp(max=MAX_PC), MAX_PC + 1).float()
            return torch.cat(
                [rel, yaw, obs[:, OBS_WIDTH : OBS_WIDTH + 1] * 10, kind, obs[:, 2:3] * 5, pc1],
                dim=1,
            )
        if proc == "MOVE_TO":
            goal = args[0]
            d = (goal[:, :3] - obs[:, OBS_EE]) * 10.0
            yaw = _wrap(goal[:, 3] - obs[:, OBS_EE_YAW])
            return torch.cat(
                [
                    d,
                    d.norm(dim=1, keepdim=True),
                    yaw[:, None],
                    obs[:, OBS_WIDTH : OBS_WIDTH + 1] * 10,
                ],
                dim=1,
            )
        if proc in ("OPEN", "CLOSE"):
            return torch.stack([obs[:, OBS_WIDTH] * 10, pc.float() / 5.0], dim=1)
        raise KeyError(f"unknown robot procedure {proc!r}")

    def encode_arg(self, proc, op, index, obs, args, value):
        if proc in SKILLS and op == "MOVE_TO":
            obs = obs.float()
            off = (value[:, :3] - _object_pos(obs, args[0])) * 10.0
            return torch.cat(
                [off, _wrap(value[:, 3:4] - obs[:, OBS_EE_YAW : OBS_EE_YAW + 1])], dim=1
            )
        return value

    def decode_arg(self, proc, op, index, obs, args, raw):
        if proc in SKILLS and op == "MOVE_TO":
            obs = obs.float()
            pos = _object_pos(obs, args[0]) + raw[:, :3] / 10.0
            return torch.cat([pos, obs[:, OBS_EE_YAW : OBS_EE_YAW + 1] + raw[:, 3:4]], dim=1)
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

    def __init__(
        self,
        policy: Policy,
        name: str = "procedures",
        record: bool = False,
        spec: HierarchySpec = SPEC,
    ):
        self.policy = policy
        self.name = name
        self.spec = spec
        self.executor = Executor(spec, policy, record=record)

    def reset(self, seed: int | None = None) -> None:
        if hasattr(self.policy, "seed"):  # a policy with randomness of its own (the expert's)
            self.policy.seed(seed)
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
    """Position of the object in slot ``obj`` in ``obs``."""
    b = SLOT_BASE + int(obj) * SLOT_DIM
    return np.asarray(obs[b : b + 3], dtype=np.float64)


def make_model(hidden: int = 64, seed: int = 0, task: str = "pick_place") -> ProcedureModel:
    """A fresh learned controller of ``task``'s hierarchy (untrained)."""
    return ProcedureModel(
        spec_for(task),
        hidden=(hidden, hidden),
        cache=False,  # observations never repeat: memoising would only grow
        seed=seed,
        view=RobotView(),
        balance_termination=True,
        separate_termination=True,
    )
