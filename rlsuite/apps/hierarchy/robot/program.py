"""Procedures with a call stack, for robot control.

A controller here is a *procedure library* run by an :class:`Executor`: each
procedure either calls sub-procedures (with arguments) or, at the bottom, emits
continuous elementary actions; every procedure decides when it terminates. The
executor keeps the call stack; the scripted expert (:mod:`.expert`) and the learned
model (:mod:`.model`) are two :class:`ProcedurePolicy` implementations of the same
library::

    PICK_AND_PLACE()      -> PICK(object), PLACE(object)
    PICK(object)          -> MOVE_TO(goal), OPEN, MOVE_TO(goal), CLOSE, MOVE_TO(goal)
    PLACE(object)         -> MOVE_TO(goal), MOVE_TO(goal), OPEN, MOVE_TO(goal)
    MOVE_TO(goal), OPEN, CLOSE: elementary actions

An object argument names an object of the scene (``cube`` or ``target``); a goal
argument is ``(x, y, z, yaw)``, computed when the call is made, relative to the
caller's object (the procedure's *anchor*).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

TASKS = ("pick_place", "stack")
"""``pick_place``: the cube into the tray; ``stack``: the cube on top of a second cube."""
ROOT = "PICK_AND_PLACE"
SKILLS = ("PICK", "PLACE")
"""Procedures that take an object and call leaves (the reusable skills)."""
LEAVES = ("MOVE_TO", "OPEN", "CLOSE")
"""Procedures that emit elementary actions."""
MAX_LEAF_STEPS = {"MOVE_TO": 40, "OPEN": 12, "CLOSE": 12}
"""A leaf call returns after this many steps whatever its termination predicate says."""
MAX_PC = 8
"""A skill returns after this many calls whatever its termination predicate says."""
ROOT_MAX_PC = 2
IDLE_ACTION = np.zeros(5, dtype=np.float32)


@dataclass
class Frame:
    """One procedure call on the stack."""

    proc: str
    """Procedure name."""
    arg: Any = None
    """Object name (skills), goal ``(x, y, z, yaw)`` (MOVE_TO) or None."""
    pc: int = 0
    """Program counter: how many sub-calls this frame has made and seen return."""
    t: int = 0
    """Elementary actions taken in this call (leaves)."""
    call_id: int = 0
    """Unique within an episode; lets a recorded trace be cut into calls again."""
    memo: dict = field(default_factory=dict)
    """Per-call scratch space of the policy."""

    def snapshot(self) -> tuple:
        arg = (
            [float(v) for v in self.arg]
            if isinstance(self.arg, np.ndarray | list | tuple)
            else self.arg
        )
        return (self.proc, arg, self.pc, self.t, self.call_id)


class ProcedurePolicy(Protocol):
    """The decisions an :class:`Executor` asks of a procedure library."""

    def decide(self, frame: Frame, obs: np.ndarray) -> tuple[str, Any] | None:
        """For a non-leaf frame: the next call ``(proc, arg)``, or None to return."""
        ...

    def leaf_done(self, frame: Frame, obs: np.ndarray) -> bool:
        """For a leaf frame that has acted at least once: whether it returns now."""
        ...

    def leaf_act(self, frame: Frame, obs: np.ndarray) -> np.ndarray:
        """For a leaf frame: the elementary action."""
        ...


class Executor:
    """Runs a :class:`ProcedurePolicy` with a call stack; a controller (``act``/``reset``).

    ``trace`` holds, for every step, the stack (outermost first) as tuples
    ``(proc, arg, pc, t, call_id)`` of the frames that produced the action.
    """

    def __init__(self, policy: ProcedurePolicy, name: str = "procedures"):
        self.policy = policy
        self.name = name
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self.stack: list[Frame] = [Frame(ROOT, None, call_id=0)]
        self._next_id = 1
        self.trace: list[list[tuple]] = []
        self.finished = False

    def act(self, obs: Any) -> np.ndarray:
        obs = np.asarray(obs, dtype=np.float64)
        for _ in range(64):  # each iteration pops or pushes; a leaf push always acts
            if not self.stack:
                self.finished = True
                self.trace.append([])
                return IDLE_ACTION.copy()
            top = self.stack[-1]
            if top.proc in LEAVES:
                if top.t > 0 and (
                    top.t >= MAX_LEAF_STEPS[top.proc] or self.policy.leaf_done(top, obs)
                ):
                    self._return()
                    continue
                action = np.clip(
                    np.asarray(self.policy.leaf_act(top, obs), dtype=np.float32), -1, 1
                )
                self.trace.append([f.snapshot() for f in self.stack])
                top.t += 1
                return action
            limit = ROOT_MAX_PC if top.proc == ROOT else MAX_PC
            call = None if top.pc >= limit else self.policy.decide(top, obs)
            if call is None:
                self._return()
                continue
            proc, arg = call
            self.stack.append(Frame(proc, arg, call_id=self._next_id))
            self._next_id += 1
        raise RuntimeError("procedure executor made 64 calls/returns without acting: a cycle")

    def _return(self) -> None:
        self.stack.pop()
        if self.stack:
            self.stack[-1].pc += 1


def anchor_position(obs: np.ndarray, obj: str) -> np.ndarray:
    """Position of object ``obj`` (``cube`` or ``target``) in ``obs``."""
    from rlsuite.apps.hierarchy.robot.env import OBJECT_SLICES

    return np.asarray(obs[OBJECT_SLICES[obj]], dtype=np.float64)
