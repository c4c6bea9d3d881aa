"""NPI's bubble sort as a program family: the hierarchy, its scripted teacher and the
family that runs it in :class:`~rlsuite.apps.hierarchy.envs.sort.SortEnv`.

Procedures (NPI's sorting programs, Reed & de Freitas 2016)::

    BUBBLESORT  BUBBLE, RESET, BUBBLE, RESET, ... until the counter is past the array
    BUBBLE      PTR(ptr2, right); then, until ptr2 is past the array:
                COMPSWAP if the pair under ptr1, ptr2 is out of order, else RSHIFT
    COMPSWAP    SWAP
    RSHIFT      PTR(ptr1, right); PTR(ptr2, right)
    RESET       PTR(counter, right); LSHIFT until ptr1 is on the left boundary;
                PTR(ptr2, left)
    LSHIFT      PTR(ptr1, left); PTR(ptr2, left)

NPI's own trace had a BSTEP (COMPSWAP then RSHIFT) under BUBBLE and a COMPSWAP that may
return without acting. Here every procedure acts at least once and decides from the
observation and its program counter alone (no memory), so BUBBLE chooses between
COMPSWAP (which swaps) and RSHIFT itself: after a swap the pair is in order, so the next
choice is RSHIFT. Every decision then depends on the observation and whether the pc is 0,
and each procedure's pc is clipped at 1 (the shifts at 2): the weak lattice is small.

Example::

    >>> from rlsuite.apps.hierarchy.envs.sort import SortEnv
    >>> env = SortEnv(length=4)
    >>> tr = FAMILY.teacher_trace(env, seed=0, problem=[3, 1, 2, 0])
    >>> tr.info["correct"], env.array.tolist(), tr.actions[-1].kind
    (True, [0, 1, 2, 3], 'stop')
"""

from __future__ import annotations

import numpy as np

from rlsuite.apps.hierarchy.envs.sort import (
    BLANK,
    LEFT,
    N_ACTIONS,
    N_POINTERS,
    N_SYMBOLS,
    RIGHT,
    STOP_ACTION,
    SWAP_ACTION,
    SortEnv,
    describe_action,
    ptr_action,
)
from rlsuite.apps.hierarchy.procedures.executor import Frame
from rlsuite.apps.hierarchy.procedures.spec import ActionSpec, ArgSpec, HierarchySpec, ProcedureSpec
from rlsuite.apps.hierarchy.procedures.traces import TERMINATE, Decision
from rlsuite.apps.hierarchy.synthesis.family import ProgramFamily

PTR1, PTR2, COUNTER = range(3)

SPEC = HierarchySpec(
    obs_dim=N_POINTERS * N_SYMBOLS,
    actions=(
        ActionSpec("PTR", (ArgSpec("pointer", "discrete", 3), ArgSpec("direction", "discrete", 2))),
        ActionSpec("SWAP"),
    ),
    procedures=(
        ProcedureSpec("BUBBLESORT", ("BUBBLE", "RESET"), max_pc=1),
        ProcedureSpec("BUBBLE", ("PTR", "COMPSWAP", "RSHIFT"), max_pc=1),
        ProcedureSpec("COMPSWAP", ("SWAP",), max_pc=1),
        ProcedureSpec("RSHIFT", ("PTR",), max_pc=2),
        ProcedureSpec("RESET", ("PTR", "LSHIFT"), max_pc=1),
        ProcedureSpec("LSHIFT", ("PTR",), max_pc=2),
    ),
    root="BUBBLESORT",
    max_pc=2,
)
"""The bubble-sort hierarchy: which operations each procedure may use, and pc clips (the
loops only need to know whether they have started; the shifts count to 2)."""


def symbols(obs: np.ndarray) -> np.ndarray:
    """The 3 symbols under ptr1, ptr2 and the counter (10 = boundary) from an observation."""
    return np.asarray(obs).reshape(N_POINTERS, N_SYMBOLS).argmax(axis=1)


def to_env_action(d: Decision) -> int:
    """Env action id of an elementary decision (``STOP`` included)."""
    if d.kind == "stop":
        return STOP_ACTION
    if d.op == "PTR":
        return ptr_action(int(d.args[0]), int(d.args[1]))
    if d.op == "SWAP":
        return SWAP_ACTION
    raise ValueError(f"not an elementary action of the sort env: {d!r}")


def from_env_action(a: int) -> Decision:
    """The decision for an env action id (inverse of :func:`to_env_action`)."""
    a = int(a)
    if a == STOP_ACTION:
        return Decision("stop")
    if a == SWAP_ACTION:
        return Decision("act", "SWAP")
    if 0 <= a < SWAP_ACTION:
        return Decision("act", "PTR", (a // 2, a % 2))
    raise ValueError(f"action id must be in 0..{STOP_ACTION}, got {a}")


class Teacher:
    """The scripted expert: decides for each procedure from pc == 0 and the 3 symbols."""

    name = "teacher"

    def decide(self, frame: Frame, obs: np.ndarray) -> Decision:
        s = symbols(obs)
        pc = frame.pc
        if frame.proc == "BUBBLESORT":
            if pc == 0:
                return Decision("call", "BUBBLE")
            if s[PTR1] != BLANK:  # a pass has just ended on the right
                return Decision("call", "RESET")
            return TERMINATE if s[COUNTER] == BLANK else Decision("call", "BUBBLE")
        if frame.proc == "BUBBLE":
            if pc == 0:
                return Decision("act", "PTR", (PTR2, RIGHT))
            if s[PTR2] == BLANK:
                return TERMINATE
            if s[PTR1] != BLANK and s[PTR1] > s[PTR2]:
                return Decision("call", "COMPSWAP")
            return Decision("call", "RSHIFT")
        if frame.proc == "COMPSWAP":
            return Decision("act", "SWAP") if pc == 0 else TERMINATE
        if frame.proc == "RESET":
            if pc == 0:
                return Decision("act", "PTR", (COUNTER, RIGHT))
            if s[PTR1] != BLANK:
                return Decision("call", "LSHIFT")
            if s[PTR2] != BLANK:
                return Decision("act", "PTR", (PTR2, LEFT))
            return TERMINATE
        if frame.proc in ("RSHIFT", "LSHIFT"):
            d = RIGHT if frame.proc == "RSHIFT" else LEFT
            return Decision("act", "PTR", (pc, d)) if pc < 2 else TERMINATE
        raise ValueError(f"the teacher has no procedure {frame.proc!r}")


def _load_problem(env: SortEnv, problem) -> tuple[np.ndarray, dict]:
    obs = env.set_problem(problem)
    return obs, {"array": [int(x) for x in env.initial]}


FAMILY = ProgramFamily(
    name="sort",
    spec=SPEC,
    env_id="rlsuite/Sort-v0",
    env_cls=SortEnv,
    teacher=Teacher,
    to_env_action=to_env_action,
    describe_action=describe_action,
    load_problem=_load_problem,
    stop_action=STOP_ACTION,
    n_actions=N_ACTIONS,
    train_lengths=tuple(range(2, 11)),
    eval_lengths=(10, 20, 50, 100),
    unit="elements",
    detail_metric="element_accuracy",
    title="bubble sort",
    symbols=symbols,
    headline=lambda info: f"sort {info['array']} -> {sorted(info['array'])}",
)
"""NPI's bubble sort as a program family (``hier-train synthesis --program sort``)."""
