"""Parametrized hierarchical procedures (PHP, Fox et al., ICLR 2018): the model shared by
the program-synthesis and the robot halves of the hierarchy app.

A *hierarchy* is a set of procedures with one root. A procedure, given the observation,
its program counter ``pc`` (the number of operations it has completed, clipped at
``max_pc``) and the arguments it was called with,

- decides whether to terminate (its *termination predicate*; never at ``pc == 0``), and if not
- chooses an *operation* (its *operation network*): an elementary action with the action's
  arguments, or a call of a sub-procedure with the callee's arguments.

Execution keeps a call stack of :class:`Frame` s: a call pushes a frame, a termination pops
it and increments the caller's ``pc``, an elementary action goes to the environment and
increments the ``pc`` of the frame that took it. When the root terminates, the program is
done (:data:`STOP`). The same :class:`Executor` runs the scripted teachers (which record
*strong* traces: every decision with the stack, or *weak* ones: observations and actions
only) and the learned :class:`ProcedureModel` (greedy).

Training: :meth:`ProcedureModel.strong_loss` (cross-entropy / Gaussian NLL on terminations,
operations and arguments) for strong traces. Weak traces (observations and actions only)
go through the same entry point, :meth:`ProcedureModel.fit`, one of two ways:

- exact marginal (``weak_infer=None``): :class:`WeakLattice` computes the marginal
  log-likelihood of weak traces by a forward pass over every hidden call stack (pcs
  clipped, so the stack space is finite); its gradient is the expectation-gradient (the EM
  gradient: the expected complete-data gradient under the posterior over stacks). This
  covers argument-free hierarchies (the synthesis side);
- hard EM (``weak_infer=f``): ``f(model, weak)`` fills the hidden call trees in (it may
  train the model's lower levels on partial stacks as it goes) and returns strong traces
  (:func:`trace_from_calls`), which train the model with the strong loss. This covers
  procedures with continuous arguments, whose stacks cannot be enumerated (the robot side:
  DDCO-style semi-Markov segmentation, :func:`rlsuite.apps.hierarchy.robot.model.infer_stacks`).

Per-procedure inputs: an :class:`InputView` lets each procedure see the observation its own
way (e.g. relative to the object it was called with) and output continuous arguments in
frame-relative units; :attr:`ProcedureSpec.max_ops` bounds a call's operations (a time-out).

A small hierarchy with continuous actions and procedure arguments::

    >>> spec = HierarchySpec(
    ...     obs_dim=6,
    ...     actions=(ActionSpec("MOVE_TO", (ArgSpec("delta", "continuous", 3),)),
    ...              ActionSpec("GRIP", (ArgSpec("close", "discrete", 2),))),
    ...     procedures=(ProcedureSpec("PICK_AND_PLACE", ("PICK", "PLACE")),
    ...                 ProcedureSpec("PICK", ("MOVE_TO", "GRIP"), (ArgSpec("object", "discrete", 2),)),
    ...                 ProcedureSpec("PLACE", ("MOVE_TO", "GRIP"), (ArgSpec("target", "continuous", 3),))),
    ...     root="PICK_AND_PLACE", max_pc=8)
    >>> model = ProcedureModel(spec, hidden=(32,))
    >>> ex = Executor(spec, model)
    >>> ex.reset()
    >>> d = ex.act(np.zeros(6, dtype=np.float32))
    >>> d.kind, d.op in ("MOVE_TO", "GRIP")
    ('act', True)

Write a scripted expert as a policy (``decide(frame, obs) -> Decision``), run it through an
:class:`Executor` with ``record=True`` to get :class:`Trace` s (:func:`save_traces` /
:func:`load_traces`; :func:`call_tree` reads one as nested :class:`Call` s), train with
:meth:`ProcedureModel.fit` (strong and/or weak traces), and act with ``Executor(spec, model)``.
The robot (``rlsuite.apps.hierarchy.robot.program``) is such a hierarchy: root
PICK_AND_PLACE, skills PICK(object) / PLACE(object), leaves MOVE_TO(goal) / OPEN / CLOSE
emitting a continuous STEP(command), with its own :class:`InputView`.
"""

from __future__ import annotations

import abc
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

NEG = -1e9
"""Log-probability used for impossible events (finite, so gradients stay finite)."""


# --------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class ArgSpec:
    """One argument of an elementary action or of a procedure."""

    name: str
    """Its name (for reading traces)."""
    kind: Literal["discrete", "continuous"] = "discrete"
    """``discrete``: an int in ``[0, size)``; ``continuous``: a float vector of length ``size``."""
    size: int = 2
    """Number of categories (discrete) or dimension (continuous)."""

    def validate(self) -> None:
        if self.kind not in ("discrete", "continuous"):
            raise ValueError(
                f"argument {self.name!r}: kind must be 'discrete' or 'continuous', got {self.kind!r}"
            )
        if self.size < 1:
            raise ValueError(f"argument {self.name!r}: size must be >= 1, got {self.size}")

    @property
    def width(self) -> int:
        """Input width when fed to a network (one-hot for discrete)."""
        return self.size


@dataclass(frozen=True)
class ActionSpec:
    """An elementary action type (the environment executes it)."""

    name: str
    """Its name, e.g. ``MOVE``."""
    args: tuple[ArgSpec, ...] = ()
    """Its arguments, e.g. pointer and direction."""


@dataclass(frozen=True)
class ProcedureSpec:
    """A procedure: which operations it may choose and which arguments it receives."""

    name: str
    """Its name, e.g. ``ADD1``."""
    ops: tuple[str, ...]
    """Names of the elementary actions and sub-procedures it may choose."""
    args: tuple[ArgSpec, ...] = ()
    """Arguments it is called with (its caller's operation network outputs them)."""
    max_pc: int | None = None
    """Clip this procedure's pc here (default: the hierarchy's ``max_pc``); smaller values
    shrink the stack space weak supervision sums over."""
    max_ops: int | None = None
    """Safety limit: the :class:`Executor` terminates a call once it has done this many
    operations, whatever its policy says (recorded as a ``terminate`` decision); ``None``:
    no limit. The robot's leaves use it as a time-out."""


@dataclass(frozen=True)
class HierarchySpec:
    """A set of procedures over one observation and action vocabulary."""

    obs_dim: int
    """Length of the (flat, float) observation vector."""
    actions: tuple[ActionSpec, ...]
    """The elementary action types."""
    procedures: tuple[ProcedureSpec, ...]
    """The procedures; calls must form an acyclic graph."""
    root: str
    """The procedure that runs the whole task (called without arguments)."""
    max_pc: int = 4
    """Program counters are clipped at this value before the networks see them (a
    procedure may set a smaller clip of its own)."""

    def pc_clip(self, name: str) -> int:
        """The clip of procedure ``name``'s program counter."""
        p = self.proc(name)
        return self.max_pc if p.max_pc is None else p.max_pc

    def validate(self) -> None:
        if self.obs_dim < 1:
            raise ValueError(f"obs_dim must be >= 1, got {self.obs_dim}")
        if self.max_pc < 1:
            raise ValueError(f"max_pc must be >= 1, got {self.max_pc}")
        names = [a.name for a in self.actions] + [p.name for p in self.procedures]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"names used twice among actions and procedures: {sorted(dup)}")
        for a in self.actions:
            for arg in a.args:
                arg.validate()
        procs = {p.name: p for p in self.procedures}
        if self.root not in procs:
            raise ValueError(f"root {self.root!r} is not a procedure; procedures: {sorted(procs)}")
        if procs[self.root].args:
            raise ValueError(f"the root procedure {self.root!r} cannot take arguments")
        for p in self.procedures:
            for arg in p.args:
                arg.validate()
            if not p.ops:
                raise ValueError(f"procedure {p.name!r} has no operations")
            if p.max_ops is not None and p.max_ops < 1:
                raise ValueError(f"procedure {p.name!r}: max_ops must be >= 1, got {p.max_ops}")
            if p.max_pc is not None and not 1 <= p.max_pc <= self.max_pc:
                raise ValueError(
                    f"procedure {p.name!r}: max_pc must be in 1..{self.max_pc} (the hierarchy's), got {p.max_pc}"
                )
            for op in p.ops:
                if op not in names:
                    raise ValueError(
                        f"procedure {p.name!r} lists unknown operation {op!r}; known: {names}"
                    )
        # acyclic call graph
        state: dict[str, int] = {}

        def visit(n: str, path: tuple[str, ...]) -> None:
            if state.get(n) == 2:
                return
            if state.get(n) == 1:
                raise ValueError(
                    f"procedures call each other in a cycle: {' -> '.join(path + (n,))}"
                )
            state[n] = 1
            for op in procs[n].ops:
                if op in procs:
                    visit(op, path + (n,))
            state[n] = 2

        for p in self.procedures:
            visit(p.name, ())

    # lookups -----------------------------------------------------------------
    def proc(self, name: str) -> ProcedureSpec:
        for p in self.procedures:
            if p.name == name:
                return p
        raise KeyError(f"unknown procedure {name!r}")

    def action(self, name: str) -> ActionSpec:
        for a in self.actions:
            if a.name == name:
                return a
        raise KeyError(f"unknown action {name!r}")

    def is_action(self, name: str) -> bool:
        return any(a.name == name for a in self.actions)

    def op_args(self, op: str) -> tuple[ArgSpec, ...]:
        """Arguments an operation carries: the action's, or the callee procedure's."""
        return self.action(op).args if self.is_action(op) else self.proc(op).args

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> HierarchySpec:
        def args(xs):
            return tuple(ArgSpec(**x) for x in xs)

        return HierarchySpec(
            obs_dim=int(d["obs_dim"]),
            actions=tuple(ActionSpec(a["name"], args(a["args"])) for a in d["actions"]),
            procedures=tuple(
                ProcedureSpec(
                    p["name"], tuple(p["ops"]), args(p["args"]), p.get("max_pc"), p.get("max_ops")
                )
                for p in d["procedures"]
            ),
            root=d["root"],
            max_pc=int(d["max_pc"]),
        )


# --------------------------------------------------------------------------- execution


@dataclass(frozen=True)
class Decision:
    """What a procedure does next: ``terminate``, ``call`` a procedure, or ``act``."""

    kind: Literal["terminate", "call", "act", "stop"]
    """``stop`` is what :class:`Executor` returns once the root has terminated."""
    op: str = ""
    """The procedure called or the action taken."""
    args: tuple = ()
    """Its arguments: ints (discrete) and float arrays (continuous), in spec order."""


TERMINATE = Decision("terminate")
STOP = Decision("stop")


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
    :meth:`WeakLattice.state_names` writes them: ``ADD@1 > ADD1@1``; ``STOP`` at the end)."""
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


# --------------------------------------------------------------------------- call trees


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
            "(ProcedureModel.fit(weak=..., weak_infer=...))"
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

    The events come out in the order an :class:`Executor` would have recorded them; a call
    terminates exactly when an action (or the final STOP) follows its last action. This is
    how a filled-in (e.g. hard-EM) call stack becomes training data for the strong loss.
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


# --------------------------------------------------------------------------- trace files


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
    import json
    import os

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
    import json
    import os

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


# --------------------------------------------------------------------------- model


class _Heads:
    """Column layout of one procedure's output vector."""

    def __init__(self, spec: HierarchySpec, proc: ProcedureSpec):
        self.n_ops = len(proc.ops)
        col = 1 + self.n_ops  # 0: termination logit, then op logits
        self.args: list[list[tuple[ArgSpec, slice]]] = []
        for op in proc.ops:
            heads = []
            for a in spec.op_args(op):
                heads.append((a, slice(col, col + a.size)))
                col += a.size
            self.args.append(heads)
        self.width = col


class InputView(abc.ABC):
    """Hook: what a procedure's network sees, and in which units it outputs continuous arguments.

    The default (no view) feeds ``[observation, one-hot(clipped pc), arguments]`` and reads
    arguments as they are. A subclass can give each procedure its own view of the frame, e.g.
    the observation relative to the object it was called with (the robot's skills), its
    unclipped pc (a leaf's elapsed steps), and express argument outputs relative to the frame
    (a MOVE_TO goal as an offset from the skill's object). Everything is torch, batched:
    ``obs`` ``[N, obs_dim]``, ``pc`` ``[N]`` (long, not clipped), ``args`` one tensor per
    argument of the procedure (discrete: ``[N]`` long; continuous: ``[N, size]``).
    Saved models store the view's import path and :meth:`config`; it must be importable.
    """

    @abc.abstractmethod
    def in_dim(self, spec: HierarchySpec, proc: ProcedureSpec) -> int:
        """Width of :meth:`features` for ``proc``."""

    @abc.abstractmethod
    def features(
        self, proc: str, obs: torch.Tensor, pc: torch.Tensor, args: list[torch.Tensor]
    ) -> torch.Tensor:
        """The network input ``[N, in_dim]`` of procedure ``proc``'s frames."""

    def encode_arg(
        self,
        proc: str,
        op: str,
        index: int,
        obs: torch.Tensor,
        args: list[torch.Tensor],
        value: torch.Tensor,
    ) -> torch.Tensor:
        """Continuous argument ``index`` of operation ``op`` (``[N, size]``) in network units."""
        return value

    def decode_arg(
        self,
        proc: str,
        op: str,
        index: int,
        obs: torch.Tensor,
        args: list[torch.Tensor],
        raw: torch.Tensor,
    ) -> torch.Tensor:
        """Inverse of :meth:`encode_arg`: the argument passed on from a network output."""
        return raw

    def config(self) -> dict[str, Any]:
        """Keyword arguments that rebuild this view (saved with the model)."""
        return {}


class _SplitNet(nn.Module):
    """Operation network and termination predicate as two MLPs on the same input."""

    def __init__(self, d_in: int, hidden: Sequence[int], width: int):
        super().__init__()
        self.term = _mlp(d_in, hidden, 1)
        self.ops = _mlp(d_in, hidden, width - 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.term(x), self.ops(x)], dim=-1)


def _mlp(d_in: int, hidden: Sequence[int], d_out: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for w in hidden:
        layers += [nn.Linear(d_in, w), nn.Tanh()]
        d_in = w
    layers.append(nn.Linear(d_in, d_out))
    return nn.Sequential(*layers)


WeakInfer = Callable[["ProcedureModel", Sequence[Trace]], list[Trace]]
"""Fills in weak traces' call stacks (hard EM): ``(model, weak traces) -> strong traces``."""


class ProcedureModel(nn.Module):
    """One operation network + termination predicate per procedure (an MLP each), on
    ``[observation, one-hot(clipped pc), procedure arguments]`` or, with an
    :class:`InputView`, on the view's features.

    ``balance_termination`` weighs the rare "terminate" labels up (``pos_weight`` =
    sqrt(#continue / #terminate) per procedure; for long-running leaves);
    ``separate_termination`` gives each termination predicate its own MLP instead of a
    shared one with the operation network.
    """

    def __init__(
        self,
        spec: HierarchySpec,
        hidden: Sequence[int] = (64, 64),
        cache: bool = True,
        seed: int | None = None,
        view: InputView | None = None,
        balance_termination: bool = False,
        separate_termination: bool = False,
    ):
        super().__init__()
        spec.validate()
        if seed is not None:  # a reproducible initialisation (EM's result depends on it)
            torch.manual_seed(seed)
        self.spec = spec
        self.hidden = tuple(int(h) for h in hidden)
        self.cache_enabled = cache
        self.view = view
        self.balance_termination = bool(balance_termination)
        self.separate_termination = bool(separate_termination)
        self.P = spec.max_pc + 1
        self.heads = [_Heads(spec, p) for p in spec.procedures]
        self.index = {p.name: i for i, p in enumerate(spec.procedures)}
        self.clip = [spec.pc_clip(p.name) for p in spec.procedures]
        self.nets = nn.ModuleList([self._make_net(pi) for pi in range(len(spec.procedures))])
        # one learned log-std per continuous head (shared over inputs)
        self.log_std = nn.ParameterDict()
        for pi, (_p, h) in enumerate(zip(spec.procedures, self.heads)):
            for oi, heads in enumerate(h.args):
                for ai, (a, _s) in enumerate(heads):
                    if a.kind == "continuous":
                        self.log_std[f"{pi}_{oi}_{ai}"] = nn.Parameter(torch.full((a.size,), -1.0))
        self._cache: dict[Any, Decision] = {}
        self.extra: dict[str, Any] = {}

    def _make_net(self, pi: int) -> nn.Module:
        p, h = self.spec.procedures[pi], self.heads[pi]
        if self.view is None:
            d_in = self.spec.obs_dim + self.P + sum(a.width for a in p.args)
        else:
            d_in = int(self.view.in_dim(self.spec, p))
        if self.separate_termination:
            return _SplitNet(d_in, self.hidden, h.width)
        return _mlp(d_in, self.hidden, h.width)

    def reset_procedure(self, name: str, seed: int | None = None) -> None:
        """Fresh random weights for procedure ``name`` (to learn it anew: *recreate*)."""
        pi = self.index[name]
        if seed is not None:
            torch.manual_seed(seed)
        self.nets[pi] = self._make_net(pi)
        for k, v in self.log_std.items():
            if k.split("_")[0] == str(pi):
                v.data.fill_(-1.0)
        self._cache.clear()

    # encoding ----------------------------------------------------------------
    def _encode_args(self, proc: ProcedureSpec, args_rows: Sequence[tuple]) -> torch.Tensor | None:
        if not proc.args:
            return None
        cols = []
        for ai, a in enumerate(proc.args):
            vals = [r[ai] for r in args_rows]
            if a.kind == "discrete":
                cols.append(
                    F.one_hot(torch.as_tensor(np.asarray(vals, dtype=np.int64)), a.size).float()
                )
            else:
                cols.append(
                    torch.as_tensor(np.asarray(vals, dtype=np.float32)).reshape(len(vals), a.size)
                )
        return torch.cat(cols, dim=1)

    @staticmethod
    def _arg_tensors(proc: ProcedureSpec, args_rows: Sequence[tuple]) -> list[torch.Tensor]:
        out = []
        for ai, a in enumerate(proc.args):
            vals = [r[ai] for r in args_rows]
            if a.kind == "discrete":
                out.append(torch.as_tensor(np.asarray(vals, dtype=np.int64)).reshape(len(vals)))
            else:
                out.append(
                    torch.as_tensor(np.asarray(vals, dtype=np.float32)).reshape(len(vals), a.size)
                )
        return out

    def inputs(
        self, pi: int, obs: torch.Tensor, pc: torch.Tensor, args: torch.Tensor | None
    ) -> torch.Tensor:
        pc1 = F.one_hot(pc.clamp(max=self.clip[pi]), self.P).float()
        parts = [obs, pc1] + ([args] if args is not None else [])
        return torch.cat(parts, dim=-1)

    def frame_inputs(
        self, pi: int, obs: torch.Tensor, pc: torch.Tensor, args_rows: Sequence[tuple]
    ) -> torch.Tensor:
        """Network input of procedure ``pi`` for frames (``pc`` not clipped; ``args_rows``
        one argument tuple per row), through the view if there is one."""
        proc = self.spec.procedures[pi]
        if self.view is None:
            return self.inputs(pi, obs, pc, self._encode_args(proc, args_rows))
        return self.view.features(proc.name, obs, pc, self._arg_tensors(proc, args_rows))

    # acting ------------------------------------------------------------------
    def clear_cache(self) -> None:
        self._cache.clear()

    def train(self, mode: bool = True):  # noqa: D102 - weights change: forget cached decisions
        self._cache.clear()
        return super().train(mode)

    @torch.no_grad()
    def decide(self, frame: Frame, obs: np.ndarray) -> Decision:
        """Greedy decision for the top frame (memoised on (procedure, pc, args, obs))."""
        pi = self.index[frame.proc]
        pc = min(frame.pc, self.clip[pi])
        key = None
        if self.cache_enabled:
            key = (
                frame.proc,
                pc if self.view is None else frame.pc,
                _hashable(frame.args),
                np.asarray(obs, dtype=np.float32).tobytes(),
            )
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        proc = self.spec.procedures[pi]
        o = torch.as_tensor(np.asarray(obs, dtype=np.float32)).reshape(1, -1)
        if self.view is None:
            x = self.inputs(pi, o, torch.tensor([pc]), self._encode_args(proc, [frame.args]))
        else:
            x = self.frame_inputs(pi, o, torch.tensor([frame.pc]), [frame.args])
        out = self.nets[pi](x)[0]
        h = self.heads[pi]
        if frame.pc > 0 and out[0].item() > 0.0:
            d = TERMINATE
        else:
            oi = int(out[1 : 1 + h.n_ops].argmax())
            op = proc.ops[oi]
            args = []
            for ai, (a, s) in enumerate(h.args[oi]):
                if a.kind == "discrete":
                    args.append(int(out[s].argmax()))
                else:
                    raw = out[s]
                    if self.view is not None:
                        fargs = self._arg_tensors(proc, [frame.args])
                        raw = self.view.decode_arg(proc.name, op, ai, o, fargs, raw[None])[0]
                    args.append(raw.numpy().astype(np.float32).copy())
            d = Decision("act" if self.spec.is_action(op) else "call", op, tuple(args))
        if key is not None:
            if len(self._cache) > 2_000_000:
                self._cache.clear()
            self._cache[key] = d
        return d

    # strong supervision -----------------------------------------------------
    def prepare_strong(
        self, traces: Sequence[Trace], only: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """Tensors of every recorded decision, grouped by procedure (reuse across epochs);
        ``only``: keep the decisions of these procedures alone."""
        rows: list[list[tuple[np.ndarray, Event]]] = [[] for _ in self.spec.procedures]
        for tr in traces:
            if tr.events is None:
                raise ValueError("prepare_strong needs strong traces (with events)")
            for ev in tr.events:
                rows[self.index[ev.proc]].append((tr.observations[ev.step], ev))
        data = []
        for pi, proc in enumerate(self.spec.procedures):
            evs = rows[pi]
            if not evs or (only is not None and proc.name not in only):
                data.append({})
                continue
            obs = torch.as_tensor(np.stack([o for o, _ in evs]))
            pc = torch.tensor([e.pc for _, e in evs])
            frame_args = [e.args for _, e in evs]
            x = self.frame_inputs(pi, obs, pc, frame_args)
            term = torch.tensor([1.0 if e.decision.kind == "terminate" else 0.0 for _, e in evs])
            term_mask = pc > 0
            op = torch.tensor(
                [
                    proc.ops.index(e.decision.op) if e.decision.kind != "terminate" else -1
                    for _, e in evs
                ]
            )
            arg_targets = []
            for oi, heads in enumerate(self.heads[pi].args):
                sel = (op == oi).nonzero().flatten()
                per = []
                for ai, (a, _s) in enumerate(heads):
                    vals = [evs[i][1].decision.args[ai] for i in sel.tolist()]
                    if a.kind == "discrete":
                        per.append(torch.tensor(np.asarray(vals, dtype=np.int64)))
                    else:
                        v = torch.as_tensor(np.asarray(vals, dtype=np.float32)).reshape(
                            len(vals), a.size
                        )
                        if self.view is not None and len(sel):
                            v = self.view.encode_arg(
                                proc.name,
                                proc.ops[oi],
                                ai,
                                obs[sel],
                                self._arg_tensors(proc, [frame_args[i] for i in sel.tolist()]),
                                v,
                            )
                        per.append(v)
                arg_targets.append((sel, per))
            pos_weight = None
            if self.balance_termination:
                npos = float(term[term_mask].sum())
                nneg = float(term_mask.sum()) - npos
                pos_weight = torch.tensor(max(1.0, nneg / max(npos, 1.0)) ** 0.5)
            data.append(
                dict(
                    x=x,
                    term=term,
                    term_mask=term_mask,
                    op=op,
                    args=arg_targets,
                    pos_weight=pos_weight,
                )
            )
        return data

    def strong_loss(self, data: list[dict[str, Any]]) -> tuple[torch.Tensor, int]:
        """Summed negative log-likelihood of all decisions, and the number of decisions."""
        total = torch.zeros(())
        n = 0
        for pi, d in enumerate(data):
            if not d:
                continue
            out = self.nets[pi](d["x"])
            h = self.heads[pi]
            m = d["term_mask"]
            if m.any():
                total = total + F.binary_cross_entropy_with_logits(
                    out[m, 0], d["term"][m], reduction="sum", pos_weight=d.get("pos_weight")
                )
            acting = d["op"] >= 0
            if acting.any():
                total = total + F.cross_entropy(
                    out[acting, 1 : 1 + h.n_ops], d["op"][acting], reduction="sum"
                )
            for oi, (sel, per) in enumerate(d["args"]):
                if len(sel) == 0:
                    continue
                for ai, (a, s) in enumerate(h.args[oi]):
                    total = total - self._arg_logp(pi, oi, ai, a, out[sel, s], per[ai]).sum()
            n += len(d["x"])
        return total, n

    def arg_mean_std(
        self, pi: int, oi: int, ai: int, x: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean (network units) and std of continuous argument ``ai`` of op ``oi`` of
        procedure ``pi`` on inputs ``x``: the Gaussian the strong loss fits."""
        a, s = self.heads[pi].args[oi][ai]
        if a.kind != "continuous":
            raise ValueError(f"argument {a.name!r} is not continuous")
        return self.nets[pi](x)[..., s], self.log_std[f"{pi}_{oi}_{ai}"].exp()

    def _arg_logp(
        self, pi: int, oi: int, ai: int, a: ArgSpec, raw: torch.Tensor, target: torch.Tensor
    ) -> torch.Tensor:
        if a.kind == "discrete":
            return F.log_softmax(raw, dim=-1).gather(-1, target.unsqueeze(-1)).squeeze(-1)
        log_std = self.log_std[f"{pi}_{oi}_{ai}"]
        z = (target - raw) / log_std.exp()
        return (-0.5 * z * z - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)

    # training ----------------------------------------------------------------
    def fit(
        self,
        strong: Sequence[Trace] = (),
        weak: Sequence[Trace] = (),
        epochs: int = 200,
        lr: float = 3e-3,
        weak_batch: int = 64,
        weak_weight: float = 1.0,
        seed: int = 0,
        progress: Callable[[int, dict[str, float]], None] | None = None,
        time_limit_s: float | None = None,
        target_loss: float | None = None,
        weak_infer: WeakInfer | None = None,
        only: Sequence[str] | None = None,
        cosine: bool = False,
    ) -> list[dict[str, float]]:
        """Adam on the strong NLL plus the weak traces' NLL: the one training entry point.

        Weak traces are used one of two ways:

        - ``weak_infer=None``: the exact marginal NLL over hidden call stacks
          (:class:`WeakLattice`, expectation-gradient). Needs procedures without
          arguments (the stacks must be enumerable): the synthesis side.
        - ``weak_infer=f``: hard EM. ``f(model, weak)`` fills in the traces' call stacks
          (it may train this model on partial stacks as it goes, e.g. leaf segmentation),
          returning strong traces, which then train the model with the strong loss like
          recorded ones. Any argument kind, continuous ones included: the robot side
          (:func:`rlsuite.apps.hierarchy.robot.model.infer_stacks`).

        ``only``: train these procedures alone (the others stay fixed). ``cosine``: cosine
        learning-rate decay over ``epochs``. Returns one row per epoch (``strong_nll``,
        ``weak_nll`` per decision / action). ``target_loss`` stops early once the combined
        per-item loss is below it.
        """
        if epochs < 0:
            raise ValueError(f"epochs must be >= 0, got {epochs}")
        if not strong and not weak:
            raise ValueError("fit needs at least one strong or weak trace")
        if only is not None:
            unknown = [n for n in only if n not in self.index]
            if unknown:
                raise ValueError(f"unknown procedures {unknown}; known: {sorted(self.index)}")
        from rlsuite.platform.cluster import configure_driver_threads

        configure_driver_threads()  # torch's one-thread-per-core default thrashes a busy machine
        if weak and weak_infer is not None:
            strong = [*strong, *weak_infer(self, weak)]
            weak = ()
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        self.train()
        sdata = self.prepare_strong(strong, only) if strong else None
        lattice = WeakLattice(self.spec) if weak else None
        if lattice is not None and (self.view is not None or self.separate_termination):
            raise ValueError(
                "the exact weak likelihood (WeakLattice) needs the default inputs and a shared "
                "termination head; give weak_infer (hard EM) for a model with a view"
            )
        wdata = lattice.prepare(weak) if lattice else None
        if only is None:
            params = list(self.parameters())
        else:
            keep = {str(self.index[n]) for n in only}
            params = [p for n in only for p in self.nets[self.index[n]].parameters()]
            params += [v for k, v in self.log_std.items() if k.split("_")[0] in keep]
        opt = torch.optim.Adam(params, lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(epochs, 1)) if cosine else None
        history = []
        t0 = time.perf_counter()
        for ep in range(epochs):
            row: dict[str, float] = {"epoch": float(ep)}
            batches = [None]
            if wdata is not None:
                # batches of similar lengths (less padding), in random order
                order = np.argsort(wdata.lengths.numpy() + rng.random(wdata.n), kind="stable")
                batches = [order[i : i + weak_batch] for i in range(0, wdata.n, weak_batch)]
                batches = [batches[i] for i in rng.permutation(len(batches))]
            s_sum = w_sum = 0.0
            s_n = w_n = 0
            for bi, idx in enumerate(batches):
                opt.zero_grad()
                loss = torch.zeros(())
                if sdata is not None and bi == 0:
                    sl, sn = self.strong_loss(sdata)
                    loss = loss + sl / max(sn, 1)
                    s_sum += float(sl.detach())
                    s_n += sn
                if idx is not None:
                    wl, wn = lattice.nll(self, wdata, idx)
                    loss = loss + weak_weight * wl / max(wn, 1)
                    w_sum += float(wl.detach())
                    w_n += wn
                if loss.requires_grad:
                    loss.backward()
                    opt.step()
            if sched is not None:
                sched.step()
            if s_n:
                row["strong_nll"] = s_sum / s_n
            if w_n:
                row["weak_nll"] = w_sum / w_n
            row["wall_s"] = time.perf_counter() - t0
            history.append(row)
            if progress is not None:
                progress(ep, row)
            combined = row.get("strong_nll", 0.0) + row.get("weak_nll", 0.0)
            if target_loss is not None and combined < target_loss:
                break
            if time_limit_s is not None and row["wall_s"] > time_limit_s:
                break
        self.eval()
        return history

    # persistence -------------------------------------------------------------
    def to_blob(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Everything :meth:`from_blob` needs (plain containers and tensors only)."""
        view = None
        if self.view is not None:
            cls = type(self.view)
            view = {"path": f"{cls.__module__}:{cls.__qualname__}", "config": self.view.config()}
        return {
            "spec": self.spec.to_dict(),
            "hidden": list(self.hidden),
            "state": self.state_dict(),
            "extra": dict(self.extra if extra is None else extra),
            "view": view,
            "options": {
                "balance_termination": self.balance_termination,
                "separate_termination": self.separate_termination,
                "cache": self.cache_enabled,
            },
        }

    def save(self, path: Any, extra: dict[str, Any] | None = None) -> None:
        torch.save(self.to_blob(extra), path)

    @staticmethod
    def from_blob(blob: dict[str, Any]) -> ProcedureModel:
        view = None
        if blob.get("view"):
            import importlib

            mod, _, name = blob["view"]["path"].partition(":")
            view = getattr(importlib.import_module(mod), name)(**blob["view"]["config"])
        opts = blob.get("options", {})
        model = ProcedureModel(
            HierarchySpec.from_dict(blob["spec"]),
            hidden=blob["hidden"],
            view=view,
            balance_termination=opts.get("balance_termination", False),
            separate_termination=opts.get("separate_termination", False),
            cache=opts.get("cache", True),
        )
        model.load_state_dict(blob["state"])
        model.extra = blob.get("extra", {})
        model.eval()
        return model

    @staticmethod
    def load(path: Any) -> ProcedureModel:
        blob = torch.load(path, map_location="cpu", weights_only=False)
        return ProcedureModel.from_blob(blob)


def _hashable(args: tuple) -> tuple:
    return tuple(a.tobytes() if isinstance(a, np.ndarray) else a for a in args)


# --------------------------------------------------------------------------- weak supervision


@dataclass
class WeakData:
    """Padded weak traces."""

    obs: torch.Tensor  # [N, T, obs_dim]
    act: torch.Tensor  # [N, T] action-type index, -1 for STOP, -2 for padding
    args: list[torch.Tensor]  # per (action type, arg): [N, T] long or [N, T, size] float
    lengths: torch.Tensor  # [N]
    n: int


class WeakLattice:
    """Exact forward algorithm over hidden call stacks, for weak (action-only) traces.

    A *state* is the call stack right after an elementary action: a path of procedures from
    the root, each with its clipped pc (the top one has just acted, so its pc >= 1); plus the
    initial stack ``[(root, 0)]`` and a final STOP state. Between two actions the stack can
    pop some frames (termination predicates), the new top chooses an operation, calls push
    frames (at pc 0, no termination), until one frame emits the observed action. Each such
    path is an *edge* with a list of factors (log-probabilities from the networks evaluated
    on the current observation). The log-likelihood of a trace is a logsumexp over edges per
    step; autograd gives the expectation-gradient.
    """

    def __init__(self, spec: HierarchySpec):
        spec.validate()
        for p in spec.procedures:
            if p.args:
                raise ValueError(
                    f"weak supervision enumerates call stacks and needs procedures without "
                    f"arguments; {p.name!r} takes {[a.name for a in p.args]}. Use strong traces "
                    "for procedures with arguments, or fill the weak traces' stacks in by hard EM "
                    "(ProcedureModel.fit(weak=..., weak_infer=...)) instead of this WeakLattice."
                )
        self.spec = spec
        self.K = spec.max_pc
        self.P = self.K + 1
        names = [p.name for p in spec.procedures]
        self.pidx = {n: i for i, n in enumerate(names)}
        self.aidx = {a.name: i for i, a in enumerate(spec.actions)}
        self.clip = [spec.pc_clip(n) for n in names]
        self.W = 2 + max(len(p.ops) for p in spec.procedures)  # TERM, NOTERM, ops...
        procs = {p.name: p for p in spec.procedures}

        # enumerate post-action stacks: call paths whose top has an action op
        paths: list[tuple[str, ...]] = []

        def walk(path: tuple[str, ...]) -> None:
            top = procs[path[-1]]
            if any(spec.is_action(o) for o in top.ops):
                paths.append(path)
            for o in top.ops:
                if o in procs:
                    walk(path + (o,))

        walk((spec.root,))
        states: list[tuple[tuple[int, int], ...]] = [((self.pidx[spec.root], 0),)]  # initial
        for path in paths:
            clips = [self.clip[self.pidx[n]] for n in path]
            ranges = [range(0, c + 1) for c in clips[:-1]] + [range(1, clips[-1] + 1)]
            for pcs in np.ndindex(*[len(r) for r in ranges]):
                st = tuple((self.pidx[n], ranges[i][pcs[i]]) for i, n in enumerate(path))
                states.append(st)
        self.states = states
        self.state_index = {s: i for i, s in enumerate(states)}
        self.STOP = len(states)
        self.n_states = len(states) + 1

        ctrl_pad = len(names) * self.P * self.W  # index of a zero column
        emit_pad = len(names) * self.P

        def cidx(p: int, k: int, col: int) -> int:
            return (p * self.P + k) * self.W + col

        edges: list[tuple[int, int, list[int], int, bool]] = []  # from, to, factors, emit, is_stop

        def expand(prefix: tuple[tuple[int, int], ...], factors: list[int], frm: int) -> None:
            """The top of ``prefix`` (not terminating, factors so far) picks an operation."""
            p, k = prefix[-1]
            proc = spec.procedures[p]
            if any(spec.is_action(op) for op in proc.ops):
                # one edge per emitting frame: the choice among its action types and the
                # action's arguments form the emission factor, looked up per step from the
                # observed action
                to = prefix[:-1] + ((p, min(k + 1, self.clip[p])),)
                edges.append((frm, self.state_index[to], list(factors), p * self.P + k, False))
            for oi, op in enumerate(proc.ops):
                if not spec.is_action(op):
                    expand(prefix + ((self.pidx[op], 0),), factors + [cidx(p, k, 2 + oi)], frm)

        for si, st in enumerate(states):
            n = len(st)
            factors: list[int] = []
            cur = list(st)
            for m in range(0, n + 1):
                # `cur` has had m frames popped; its top is the frame deciding now
                if m == n:
                    edges.append((si, self.STOP, list(factors), emit_pad, True))
                    break
                p, k = cur[-1]
                if k > 0:
                    expand(tuple(cur), factors + [cidx(p, k, 1)], si)
                    factors = factors + [cidx(p, k, 0)]
                else:
                    # pc 0 never terminates: no continuation with more pops
                    expand(tuple(cur), list(factors), si)
                    break
                cur.pop()
                if cur:
                    q, kq = cur[-1]
                    cur[-1] = (q, min(kq + 1, self.clip[q]))
        self.n_edges = len(edges)
        self.frm = torch.tensor([e[0] for e in edges])
        self.to = torch.tensor([e[1] for e in edges])
        self.is_stop = torch.tensor([e[4] for e in edges])
        # edge weight = [control log-probs, emission log-probs] @ M (a count matrix), so all
        # steps' edge weights come from one matrix product
        n_cols = ctrl_pad + 1 + emit_pad + 1
        M = torch.zeros(n_cols, self.n_edges)
        for ei, e in enumerate(edges):
            for c in e[2]:
                M[c, ei] += 1.0
            if not e[4]:
                M[ctrl_pad + 1 + e[3], ei] += 1.0
        self.M = M.to_sparse() if M.numel() > 4_000_000 else M

    def describe(self) -> str:
        return f"{self.n_states} stack states, {self.n_edges} transitions"

    def state_names(self, si: int) -> str:
        if si == self.STOP:
            return "STOP"
        return " > ".join(f"{self.spec.procedures[p].name}@{k}" for p, k in self.states[si])

    # data ----------------------------------------------------------------------
    def prepare(self, traces: Sequence[Trace]) -> WeakData:
        if not traces:
            raise ValueError("no weak traces")
        n = len(traces)
        tmax = max(len(t) for t in traces)
        obs = np.zeros((n, tmax, self.spec.obs_dim), np.float32)
        act = np.full((n, tmax), -2, np.int64)
        argbufs: list[np.ndarray] = []
        slots: dict[tuple[int, int], int] = {}
        for a_i, a in enumerate(self.spec.actions):
            for g_i, g in enumerate(a.args):
                slots[(a_i, g_i)] = len(argbufs)
                if g.kind == "discrete":
                    argbufs.append(np.zeros((n, tmax), np.int64))
                else:
                    argbufs.append(np.zeros((n, tmax, g.size), np.float32))
        for b, tr in enumerate(traces):
            if not tr.actions or tr.actions[-1].kind != "stop":
                raise ValueError(f"weak trace {b} does not end with STOP (the program's end)")
            obs[b, : len(tr)] = tr.observations
            for t, d in enumerate(tr.actions):
                if d.kind == "stop":
                    act[b, t] = -1
                    continue
                ai = self.aidx[d.op]
                act[b, t] = ai
                for g_i, v in enumerate(d.args):
                    argbufs[slots[(ai, g_i)]][b, t] = v
        self._slots = slots
        return WeakData(
            torch.as_tensor(obs),
            torch.as_tensor(act),
            [torch.as_tensor(x) for x in argbufs],
            torch.tensor([len(t) for t in traces]),
            n,
        )

    # likelihood -------------------------------------------------------------------
    def tables(
        self, model: ProcedureModel, obs: torch.Tensor, act: torch.Tensor, args: list[torch.Tensor]
    ):
        """Control log-probs ``[B, T, C+1]`` and emission log-probs ``[B, T, E+1]``."""
        B, T, D = obs.shape
        ctrl, emit = [], []
        pcs = torch.arange(self.P)
        for pi, proc in enumerate(self.spec.procedures):
            o = obs.unsqueeze(2).expand(B, T, self.P, D)
            pc1 = F.one_hot(pcs, self.P).float().expand(B, T, self.P, self.P)
            out = model.nets[pi](torch.cat([o, pc1], dim=-1))  # [B,T,P,width]
            h = model.heads[pi]
            term = out[..., 0]
            lt = F.logsigmoid(term)
            lnt = F.logsigmoid(-term)
            # pc 0 never terminates
            lt = torch.cat([torch.full_like(lt[..., :1], NEG), lt[..., 1:]], dim=-1)
            lnt = torch.cat([torch.zeros_like(lnt[..., :1]), lnt[..., 1:]], dim=-1)
            lops = F.log_softmax(out[..., 1 : 1 + h.n_ops], dim=-1)
            pad = torch.full((B, T, self.P, self.W - 2 - h.n_ops), NEG)
            ctrl.append(torch.cat([lt.unsqueeze(-1), lnt.unsqueeze(-1), lops, pad], dim=-1))
            em = torch.full((B, T, self.P), NEG)
            for oi, op in enumerate(proc.ops):
                if not self.spec.is_action(op):
                    continue
                ai = self.aidx[op]
                lp = lops[..., oi]
                for g_i, (g, s) in enumerate(h.args[oi]):
                    tgt = (
                        args[self._slots[(ai, g_i)]]
                        .unsqueeze(2)
                        .expand(B, T, self.P, *args[self._slots[(ai, g_i)]].shape[2:])
                    )
                    lp = lp + model._arg_logp(pi, oi, g_i, g, out[..., s], tgt)
                em = torch.where((act == ai).unsqueeze(-1), lp, em)
            emit.append(em)
        C = torch.stack(ctrl, dim=2).reshape(B, T, -1)
        C = torch.cat([C, torch.zeros(B, T, 1)], dim=-1)
        E = torch.stack(emit, dim=2).reshape(B, T, -1)
        E = torch.cat([E, torch.zeros(B, T, 1)], dim=-1)
        return C, E

    def forward_messages(
        self,
        model: ProcedureModel,
        data: WeakData,
        idx: Sequence[int] | None = None,
        probes: list[torch.Tensor] | None = None,
    ):
        """Log forward messages ``[B, T+1, n_states]`` and the per-trace log-likelihood.

        ``probes`` (a list to fill) receives one zero tensor per step added to the messages;
        the gradient of the log-likelihood with respect to each is the posterior marginal
        over stacks after that action.
        """
        idx = torch.as_tensor(np.arange(data.n) if idx is None else np.asarray(idx))
        lengths = data.lengths[idx]
        T = int(lengths.max())
        obs = data.obs[idx, :T]
        act = data.act[idx, :T]
        args = [a[idx, :T] for a in data.args]
        C, E = self.tables(model, obs, act, args)
        B = len(idx)
        # [B, T, n_edges]: every edge's log-weight at every step
        CE = torch.cat([C, E], dim=-1)
        Wt = (CE.reshape(B * T, -1) @ self.M).reshape(B, T, self.n_edges)
        alpha = torch.full((B, self.n_states), NEG)
        alpha[:, 0] = 0.0
        msgs = [alpha]
        to = self.to.unsqueeze(0).expand(B, -1)
        steps = Wt.unbind(1)  # one backward for all steps (indexing would allocate T copies)
        for t in range(T):
            stop_now = (act[:, t] == -1).unsqueeze(1)
            valid = torch.where(stop_now, self.is_stop.unsqueeze(0), ~self.is_stop.unsqueeze(0))
            cand = torch.where(valid, alpha[:, self.frm] + steps[t], torch.full_like(steps[t], NEG))
            # logsumexp of the candidates into each destination state
            mx = torch.full((B, self.n_states), NEG).scatter_reduce(
                1, to, cand.detach(), reduce="amax", include_self=True
            )
            ssum = torch.zeros(B, self.n_states).scatter_add(1, to, (cand - mx.gather(1, to)).exp())
            new = (ssum.clamp(min=1e-30).log() + mx).clamp(min=NEG)
            active = (t < lengths).unsqueeze(1)
            alpha = torch.where(active, new, alpha)
            if probes is not None:
                z = torch.zeros_like(alpha, requires_grad=True)
                probes.append(z)
                alpha = alpha + z
            msgs.append(alpha)
        return torch.stack(msgs, dim=1), alpha[:, self.STOP]

    def nll(
        self, model: ProcedureModel, data: WeakData, idx: Sequence[int]
    ) -> tuple[torch.Tensor, int]:
        _, ll = self.forward_messages(model, data, idx)
        n = int(data.lengths[torch.as_tensor(np.asarray(idx))].sum())
        return -ll.sum(), n

    def posterior_stacks(self, model: ProcedureModel, trace: Trace) -> list[tuple[str, float]]:
        """The most probable call stack after each action of a weak trace, with its
        posterior probability (forward-backward marginals, via autograd)."""
        data = self.prepare([trace])
        probes: list[torch.Tensor] = []
        with torch.enable_grad():
            _, ll = self.forward_messages(model, data, probes=probes)
            grads = torch.autograd.grad(ll.sum(), probes)
        out = []
        for g in grads:
            si = int(g[0].argmax())
            out.append((self.state_names(si), float(g[0, si])))
        return out
