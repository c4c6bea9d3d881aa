"""Demonstrations as data: decisions, strong and weak traces, and trace files.

A :class:`Trace` holds the observation before each elementary action, the actions (the
last one :data:`STOP` when the program finished) and, for a *strong* trace, every
:class:`Decision` with the frame that took it (:class:`Event` s); a *weak* trace has the
observations and actions only (:meth:`Trace.weak`). :func:`save_traces` /
:func:`load_traces` write and read them as a compressed ``.npz`` without pickle.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from rlsuite.apps.hierarchy.procedures.spec import HierarchySpec


@dataclass(frozen=True)
class Decision:
    """What a procedure does next: ``terminate``, ``call`` a procedure, or ``act``."""

    kind: Literal["terminate", "call", "act", "stop"]
    """``stop`` is what :class:`~.executor.Executor` returns once the root has terminated."""
    op: str = ""
    """The procedure called or the action taken."""
    args: tuple = ()
    """Its arguments: ints (discrete) and float arrays (continuous), in spec order."""


TERMINATE = Decision("terminate")
STOP = Decision("stop")


@dataclass(frozen=True)
class Event:
    """One decision in a strong trace."""

    step: int
    """Index of the observation (in the trace) the decision was taken on."""
    proc: str
    """The procedure that decided."""
    pc: int
    """Its program counter (not clipped)."""
    args: tuple
    """The procedure's own arguments."""
    decision: Decision
    """What it decided."""
    depth: int = 0
    """Stack depth (1 = root)."""


@dataclass
class Trace:
    """A demonstration: observation before each action, the actions (last: STOP), and
    for strong traces every decision with its frame."""

    observations: np.ndarray
    """``[T, obs_dim]`` float32; row ``t`` is the observation action ``t`` was chosen on."""
    actions: list[Decision]
    """``T`` decisions of kind ``act``, the last one :data:`STOP` when the program finished."""
    events: list[Event] | None = None
    """Every decision with its frame (strong supervision); ``None`` for a weak trace."""
    info: dict[str, Any] = field(default_factory=dict)
    """Free-form: the task instance (e.g. the two numbers)."""

    @property
    def strong(self) -> bool:
        return self.events is not None

    def weak(self) -> Trace:
        """The same demonstration without its call stack."""
        return Trace(self.observations, list(self.actions), None, dict(self.info))

    def __len__(self) -> int:
        return len(self.actions)


def stacks_after_actions(trace: Trace, spec: HierarchySpec) -> list[str]:
    """The call stack right after each action of a strong trace (pcs clipped, as
    :meth:`.weak.WeakLattice.state_names` writes them: ``ADD@1 > ADD1@1``; ``STOP`` at the end)."""
    if trace.events is None:
        raise ValueError("stacks_after_actions needs a strong trace (with events)")
    stack: list[list] = [[spec.root, 0]]
    out: list[str] = []
    for ev in trace.events:
        d = ev.decision
        if d.kind == "call":
            stack.append([d.op, 0])
        elif d.kind == "act":
            stack[-1][1] += 1
            out.append(" > ".join(f"{p}@{min(k, spec.pc_clip(p))}" for p, k in stack))
        elif d.kind == "terminate":
            stack.pop()
            if stack:
                stack[-1][1] += 1
            else:
                out.append("STOP")
    return out


def _enc(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return {"f": [float(x) for x in v.reshape(-1)]}
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, dict):
        return {k: _enc(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_enc(x) for x in v]
    return v


def _dec(v: Any) -> Any:
    if isinstance(v, dict):
        if set(v) == {"f"}:
            return np.asarray(v["f"], dtype=np.float32)
        return {k: _dec(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_dec(x) for x in v]
    return v


def _dec_decision(x: list) -> Decision:
    return Decision(x[0], x[1], tuple(_dec(a) for a in x[2]))


def save_traces(path: str, traces: Sequence[Trace]) -> None:
    """Write traces (strong or weak) to ``path``, a compressed ``.npz`` without pickle.

    Continuous arguments are stored as float32 lists, so a trace reads back equal."""
    if not traces:
        raise ValueError("no traces to save")
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    meta = []
    for tr in traces:
        meta.append(
            {
                "actions": [[d.kind, d.op, _enc(list(d.args))] for d in tr.actions],
                "events": None
                if tr.events is None
                else [
                    [
                        e.step,
                        e.proc,
                        e.pc,
                        _enc(list(e.args)),
                        [e.decision.kind, e.decision.op, _enc(list(e.decision.args))],
                        e.depth,
                    ]
                    for e in tr.events
                ],
                "info": _enc(tr.info),
            }
        )
    np.savez_compressed(
        path,
        observations=np.concatenate([np.asarray(t.observations, np.float32) for t in traces]),
        lengths=np.array([len(t.observations) for t in traces]),
        meta=np.array(json.dumps(meta)),
    )


def load_traces(path: str) -> list[Trace]:
    """Read traces written by :func:`save_traces`."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"no traces at {path!r}")
    with np.load(path, allow_pickle=False) as z:
        obs, lengths = z["observations"], z["lengths"]
        meta = json.loads(str(z["meta"]))
    out, i = [], 0
    for n, m in zip(lengths, meta):
        n = int(n)
        events = None
        if m["events"] is not None:
            events = [
                Event(e[0], e[1], e[2], tuple(_dec(a) for a in e[3]), _dec_decision(e[4]), e[5])
                for e in m["events"]
            ]
        out.append(
            Trace(obs[i : i + n], [_dec_decision(a) for a in m["actions"]], events, _dec(m["info"]))
        )
        i += n
    return out
