"""The addition hierarchy, its scripted teacher, demonstrations and the controller that
runs learned procedures in :class:`~rlsuite.apps.hierarchy.envs.addition.AdditionEnv`.

Procedures (as in NPI and PHP)::

    ADD      repeat ADD1 until the pointers see only blanks on the inputs and carries
    ADD1     WRITE(out, sum mod 10); CARRY if the column sum >= 10; LSHIFT
    CARRY    MOVE(carry, left); WRITE(carry, 1); MOVE(carry, right)
    LSHIFT   MOVE(in1, left); MOVE(in2, left); MOVE(carry, left); MOVE(out, left)

Example::

    >>> from rlsuite.apps.hierarchy.envs.addition import AdditionEnv
    >>> tr = teacher_trace(AdditionEnv(length=3), seed=0)
    >>> tr.info["correct"], tr.actions[-1].kind
    (True, 'stop')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rlsuite.apps.hierarchy.envs.addition import (
    BLANK,
    LEFT,
    N_ACTIONS,
    N_SYMBOLS,
    N_TAPES,
    RIGHT,
    STOP_ACTION,
    AdditionEnv,
    describe_action,
    move_action,
    write_action,
)
from rlsuite.apps.hierarchy.procedures.executor import Frame
from rlsuite.apps.hierarchy.procedures.spec import ActionSpec, ArgSpec, HierarchySpec, ProcedureSpec
from rlsuite.apps.hierarchy.procedures.traces import TERMINATE, Decision, Trace
from rlsuite.apps.hierarchy.synthesis.family import ProcedureController as FamilyController
from rlsuite.apps.hierarchy.synthesis.family import ProgramFamily

IN1, IN2, CARRY_TAPE, OUT = range(4)

SPEC = HierarchySpec(
    obs_dim=N_TAPES * N_SYMBOLS,
    actions=(
        ActionSpec(
            "MOVE", (ArgSpec("pointer", "discrete", 4), ArgSpec("direction", "discrete", 2))
        ),
        ActionSpec("WRITE", (ArgSpec("tape", "discrete", 4), ArgSpec("digit", "discrete", 10))),
    ),
    procedures=(
        ProcedureSpec("ADD", ("ADD1",), max_pc=1),
        ProcedureSpec("ADD1", ("WRITE", "CARRY", "LSHIFT"), max_pc=3),
        ProcedureSpec("CARRY", ("MOVE", "WRITE"), max_pc=3),
        ProcedureSpec("LSHIFT", ("MOVE",), max_pc=4),
    ),
    root="ADD",
    max_pc=4,
)
"""The addition hierarchy: the procedures, which operations each may use, and pc clips (ADD
only needs to know whether it has started; LSHIFT counts to 4)."""


def symbols(obs: np.ndarray) -> np.ndarray:
    """The 4 symbols under the pointers (10 = blank) from a 44-number observation."""
    return np.asarray(obs).reshape(N_TAPES, N_SYMBOLS).argmax(axis=1)


def to_env_action(d: Decision) -> int:
    """Env action id of an elementary decision (``STOP`` included)."""
    if d.kind == "stop":
        return STOP_ACTION
    if d.op == "MOVE":
        return move_action(int(d.args[0]), int(d.args[1]))
    if d.op == "WRITE":
        return write_action(int(d.args[0]), int(d.args[1]))
    raise ValueError(f"not an elementary action of the addition env: {d!r}")


def from_env_action(a: int) -> Decision:
    """The decision for an env action id (inverse of :func:`to_env_action`)."""
    a = int(a)
    if a == STOP_ACTION:
        return Decision("stop")
    if a < 8:
        return Decision("act", "MOVE", (a // 2, a % 2))
    return Decision("act", "WRITE", ((a - 8) // 10, (a - 8) % 10))


class Teacher:
    """The scripted expert: decides for each procedure from its pc and the 4 symbols."""

    name = "teacher"

    def decide(self, frame: Frame, obs: np.ndarray) -> Decision:
        s = symbols(obs)
        val = [0 if v == BLANK else int(v) for v in s]
        pc = frame.pc
        if frame.proc == "ADD":
            if pc > 0 and s[IN1] == BLANK and s[IN2] == BLANK and s[CARRY_TAPE] == BLANK:
                return TERMINATE
            return Decision("call", "ADD1")
        if frame.proc == "ADD1":
            total = val[IN1] + val[IN2] + val[CARRY_TAPE]
            if pc == 0:
                return Decision("act", "WRITE", (OUT, total % 10))
            if pc == 1:
                return Decision("call", "CARRY" if total >= 10 else "LSHIFT")
            if pc == 2 and s[OUT] != BLANK:
                return Decision("call", "LSHIFT")
            return TERMINATE
        if frame.proc == "CARRY":
            return (
                [
                    Decision("act", "MOVE", (CARRY_TAPE, LEFT)),
                    Decision("act", "WRITE", (CARRY_TAPE, 1)),
                    Decision("act", "MOVE", (CARRY_TAPE, RIGHT)),
                ][pc]
                if pc < 3
                else TERMINATE
            )
        if frame.proc == "LSHIFT":
            return Decision("act", "MOVE", (pc, LEFT)) if pc < 4 else TERMINATE
        raise ValueError(f"the teacher has no procedure {frame.proc!r}")


def _load_problem(env: AdditionEnv, problem: tuple[int, int]) -> tuple[np.ndarray, dict]:
    return env.set_problem(*problem), {"a": problem[0], "b": problem[1]}


FAMILY = ProgramFamily(
    name="addition",
    spec=SPEC,
    env_id="rlsuite/Addition-v0",
    env_cls=AdditionEnv,
    teacher=Teacher,
    to_env_action=to_env_action,
    describe_action=describe_action,
    load_problem=_load_problem,
    stop_action=STOP_ACTION,
    n_actions=N_ACTIONS,
    train_lengths=tuple(range(1, 11)),
    eval_lengths=(10, 100, 500, 1000),
    unit="digits per number",
    detail_metric="digit_accuracy",
    title="long-hand addition",
    symbols=symbols,
    headline=lambda info: f"{info['a']} + {info['b']} = {info['a'] + info['b']}",
)
"""Long-hand addition as a program family (what ``hier-train synthesis`` runs by default)."""


def rollout(
    env: AdditionEnv,
    policy: Any,
    seed: int,
    record: bool = True,
    problem: tuple[int, int] | None = None,
) -> Trace:
    """Run ``policy`` (procedures) on one seeded problem; the trace's info says if it was right."""
    return FAMILY.rollout(env, policy, seed, record=record, problem=problem)


def teacher_trace(env: AdditionEnv, seed: int, problem: tuple[int, int] | None = None) -> Trace:
    return FAMILY.teacher_trace(env, seed, problem=problem)


def make_traces(
    n: int, seed: int, lengths: Sequence[int] = tuple(range(1, 11)), strong: bool = True
) -> list[Trace]:
    """``n`` teacher demonstrations with lengths drawn uniformly from ``lengths``."""
    return FAMILY.make_traces(n, seed, lengths, strong=strong)


class ProcedureController(FamilyController):
    """Evaluation controller: runs a procedure policy (learned model or teacher) on the env."""

    def __init__(self, policy: Any, name: str = "PHP"):
        super().__init__(policy, FAMILY, name)
