"""Call trees: a strong trace read as nested :class:`Call` s, and back.

:func:`call_tree` reads a strong trace's events as the root call with its sub-calls and
actions; :func:`trace_from_calls` turns a call tree over a weak trace's observations and
actions into a strong trace, which is how a filled-in (e.g. hard-EM) call stack becomes
training data for the strong loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlsuite.apps.hierarchy.procedures.spec import HierarchySpec
from rlsuite.apps.hierarchy.procedures.traces import TERMINATE, Decision, Event, Trace


@dataclass
class Call:
    """One procedure call of a trace, with what it did: sub-calls and elementary actions."""

    proc: str
    """The procedure called."""
    args: tuple = ()
    """The arguments it was called with."""
    children: list[Call | int] = field(default_factory=list)
    """In order: sub-calls, and elementary actions as their step index in the trace."""
    terminated: bool = False
    """Whether it returned within the trace (filled in by :func:`call_tree`)."""

    def steps(self) -> list[int]:
        """Every action step of this call and its sub-calls, in order."""
        out: list[int] = []
        for c in self.children:
            out.extend(c.steps() if isinstance(c, Call) else [c])
        return out

    def calls(self) -> list[Call]:
        """This call and every call below it, depth first (the order they were made in)."""
        out = [self]
        for c in self.children:
            if isinstance(c, Call):
                out.extend(c.calls())
        return out

    @property
    def start(self) -> int:
        return self.steps()[0]

    @property
    def end(self) -> int:
        """One past the last action step."""
        return self.steps()[-1] + 1


def call_tree(trace: Trace) -> Call:
    """The root call of a strong trace, with every sub-call and action (its call tree)."""
    if trace.events is None:
        raise ValueError(
            "call_tree needs a strong trace (with events); fill in a weak one first "
            "(procedures.fit.fit(model, weak=..., weak_infer=...))"
        )
    root: Call | None = None
    stack: list[Call] = []
    for ev in trace.events:
        d = ev.decision
        if not stack:
            if root is not None:
                raise ValueError("trace has events after its root returned")
            root = Call(ev.proc, tuple(ev.args))
            stack.append(root)
        top = stack[-1]
        if d.kind == "call":
            c = Call(d.op, tuple(d.args))
            top.children.append(c)
            stack.append(c)
        elif d.kind == "act":
            top.children.append(ev.step)
        elif d.kind == "terminate":
            top.terminated = True
            stack.pop()
    if root is None:
        raise ValueError("trace has no events")
    return root


def trace_from_calls(
    spec: HierarchySpec,
    root: Call,
    observations: np.ndarray,
    actions: Sequence[Decision],
    info: dict[str, Any] | None = None,
) -> Trace:
    """A strong trace from a call tree over a weak trace's observations and actions.

    The events come out in the order an :class:`~.executor.Executor` would have recorded
    them; a call terminates exactly when an action (or the final STOP) follows its last
    action. This is how a filled-in (e.g. hard-EM) call stack becomes training data for the
    strong loss.
    """
    if root.proc != spec.root:
        raise ValueError(f"the call tree's root is {root.proc!r}, not the spec's {spec.root!r}")
    T = len(actions)
    steps = root.steps()
    n_act = T - 1 if T and actions[-1].kind == "stop" else T
    if steps != list(range(n_act)):
        raise ValueError(
            f"the call tree must cover the trace's actions 0..{n_act - 1} once each, in order"
        )
    events: list[Event] = []

    def walk(c: Call, depth: int) -> None:
        proc = spec.proc(c.proc)
        for j, ch in enumerate(c.children):
            if isinstance(ch, Call):
                if ch.proc not in proc.ops or spec.is_action(ch.proc):
                    raise ValueError(f"{c.proc} cannot call {ch.proc!r}; its ops: {proc.ops}")
                if not ch.children:
                    raise ValueError(f"call of {ch.proc} does nothing (no actions)")
                events.append(
                    Event(ch.start, c.proc, j, c.args, Decision("call", ch.proc, ch.args), depth)
                )
                walk(ch, depth + 1)
            else:
                d = actions[ch]
                if d.op not in proc.ops or not spec.is_action(d.op):
                    raise ValueError(f"{c.proc} cannot take action {d.op!r}; its ops: {proc.ops}")
                events.append(Event(ch, c.proc, j, c.args, d, depth))
        if c.end < T:
            events.append(Event(c.end, c.proc, len(c.children), c.args, TERMINATE, depth))

    walk(root, 1)
    return Trace(np.asarray(observations, np.float32), list(actions), events, dict(info or {}))
