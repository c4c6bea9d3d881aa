"""Running procedures: the call stack (:class:`Frame`) and the :class:`Executor`.

A call pushes a frame, a termination pops it and increments the caller's ``pc``, an
elementary action goes to the environment and increments the ``pc`` of the frame that took
it. When the root terminates, the program is done (:data:`~.traces.STOP`). The same
executor runs scripted teachers and learned models (anything with ``decide(frame, obs)``,
a :class:`Policy`) and, with ``record=True``, records their :class:`~.traces.Trace` s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from rlsuite.apps.hierarchy.procedures.spec import HierarchySpec
from rlsuite.apps.hierarchy.procedures.traces import STOP, TERMINATE, Decision, Event, Trace


@dataclass
class Frame:
    """One entry of the call stack."""

    proc: str
    """The running procedure."""
    args: tuple = ()
    """The arguments it was called with."""
    pc: int = 0
    """Operations completed so far (not clipped)."""
    memory: Any = None
    """Free slot for a policy's per-frame state (the NPI baseline keeps its LSTM state here)."""


class Policy(Protocol):
    """Anything that decides for the frame on top of the stack."""

    def decide(self, frame: Frame, obs: np.ndarray) -> Decision: ...


class Executor:
    """Runs a policy over a call stack; ``act(obs)`` returns the next elementary action.

    With ``record=True`` it keeps the trace (:meth:`trace`). A policy may return
    ``terminate`` at ``pc == 0`` only as an error: procedures do at least one operation.
    """

    def __init__(self, spec: HierarchySpec, policy: Policy, record: bool = False):
        spec.validate()
        self.spec = spec
        self.policy = policy
        self.record = record
        self._procs = {p.name: p for p in spec.procedures}
        self._max_inner = 4 * (len(spec.procedures) + 1) + 4
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self.stack: list[Frame] = [Frame(self.spec.root)]
        self.done = False
        self.observations: list[np.ndarray] = []
        self.actions: list[Decision] = []
        self.events: list[Event] = []
        if hasattr(self.policy, "reset"):
            self.policy.reset()

    def act(self, obs: np.ndarray) -> Decision:
        if self.done:
            return STOP
        step = len(self.actions)
        if self.record:
            self.observations.append(np.asarray(obs, dtype=np.float32).copy())
        for _ in range(self._max_inner):
            f = self.stack[-1]
            limit = self._procs[f.proc].max_ops
            d = TERMINATE if limit is not None and f.pc >= limit else self.policy.decide(f, obs)
            if self.record:
                self.events.append(Event(step, f.proc, f.pc, f.args, d, len(self.stack)))
            if d.kind == "terminate":
                if f.pc == 0:
                    raise RuntimeError(
                        f"procedure {f.proc} terminated before doing anything (pc 0)"
                    )
                self.stack.pop()
                if not self.stack:
                    self.done = True
                    self.actions.append(STOP)
                    return STOP
                self.stack[-1].pc += 1
            elif d.kind == "call":
                if d.op not in self._procs[f.proc].ops or d.op not in self._procs:
                    raise RuntimeError(
                        f"{f.proc} cannot call {d.op!r}; it may choose {self._procs[f.proc].ops}"
                    )
                self.stack.append(Frame(d.op, tuple(d.args)))
            elif d.kind == "act":
                if d.op not in self._procs[f.proc].ops or d.op in self._procs:
                    raise RuntimeError(
                        f"{f.proc} cannot take action {d.op!r}; it may choose {self._procs[f.proc].ops}"
                    )
                f.pc += 1
                self.actions.append(d)
                return d
            else:
                raise RuntimeError(f"policy returned {d!r}: expected terminate, call or act")
        raise RuntimeError(
            f"no elementary action after {self._max_inner} decisions (stack: "
            f"{[fr.proc for fr in self.stack]}); is the policy calling without acting?"
        )

    def trace(self, info: dict[str, Any] | None = None, strong: bool = True) -> Trace:
        if not self.record:
            raise RuntimeError("this executor was built with record=False")
        obs = (
            np.stack(self.observations)
            if self.observations
            else np.zeros((0, self.spec.obs_dim), np.float32)
        )
        return Trace(
            obs, list(self.actions), list(self.events) if strong else None, dict(info or {})
        )
