"""What a hierarchy is: its elementary actions, its procedures and their arguments.

A :class:`HierarchySpec` names the observation width, the elementary actions
(:class:`ActionSpec`), the procedures (:class:`ProcedureSpec`: which operations each may
choose, which arguments it is called with, its pc clip and time-out) and the root.
:meth:`HierarchySpec.validate` rejects unknown operations, call cycles and bad clips; specs
round-trip through plain dicts (:meth:`HierarchySpec.to_dict` /
:meth:`HierarchySpec.from_dict`) so saved models carry them.

Example::

    >>> spec = HierarchySpec(
    ...     obs_dim=3,
    ...     actions=(ActionSpec("A", (ArgSpec("x", "discrete", 3),)),),
    ...     procedures=(ProcedureSpec("ROOT", ("SUB",)), ProcedureSpec("SUB", ("A",))),
    ...     root="ROOT")
    >>> spec.validate(); spec.op_args("A")[0].size
    3
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal


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
    """Safety limit: the :class:`~.executor.Executor` terminates a call once it has done this many
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
