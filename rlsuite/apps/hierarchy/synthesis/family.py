"""What a program family is: a procedure hierarchy, its env, its scripted teacher and the
glue between them (:class:`ProgramFamily`), with the rollout, demonstrations and the
evaluation controller every family shares.

Each family module (:mod:`.program`: long-hand addition; :mod:`.sort`: bubble sort)
defines one ``FAMILY``; :mod:`.programs` names them for the CLI and the experiment. The
experiment, the baselines and the saved models go through a family and never check a
program's name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlsuite.apps.hierarchy.procedures.executor import Executor, Policy
from rlsuite.apps.hierarchy.procedures.spec import HierarchySpec
from rlsuite.apps.hierarchy.procedures.traces import Decision, Trace


@dataclass(frozen=True)
class ProgramFamily:
    """One program family of the synthesis experiment."""

    name: str
    """Its CLI name, e.g. ``addition``."""
    spec: HierarchySpec
    """The procedure hierarchy (its root runs the whole program)."""
    env_id: str
    """The registered env id (built with ``{"length": L}``)."""
    env_cls: Callable[..., Any]
    """The env class, called with ``length=L``."""
    teacher: Callable[[], Policy]
    """Builds the scripted expert (a procedure policy)."""
    to_env_action: Callable[[Decision], int]
    """Env action id of an elementary decision (``STOP`` included)."""
    describe_action: Callable[[int], str]
    """Readable form of an env action id."""
    load_problem: Callable[[Any, Any], tuple[np.ndarray, dict[str, Any]]]
    """``(env, problem) -> (observation, info)``: put a given problem in the env."""
    stop_action: int
    """Env action id of STOP (what a controller answers once its policy breaks the rules)."""
    n_actions: int
    """Number of env action ids (the flat baseline's output)."""
    train_lengths: tuple[int, ...]
    """Default lengths of the demonstrations."""
    eval_lengths: tuple[int, ...]
    """Default evaluation lengths."""
    unit: str
    """What a length counts, for tables and plots, e.g. ``digits per number``."""
    detail_metric: str
    """The env's per-item accuracy in ``episode_metrics()``, e.g. ``digit_accuracy``."""
    title: str
    """A short name for titles, e.g. ``long-hand addition``."""
    symbols: Callable[[np.ndarray], np.ndarray]
    """The symbol under each pointer of an observation (for printing traces)."""
    headline: Callable[[dict[str, Any]], str]
    """One line about a problem from a trace's info, e.g. ``568 + 32 = 600``."""

    # ------------------------------------------------------------------
    def make_env(self, length: int) -> Any:
        return self.env_cls(length=int(length))

    def rollout(
        self, env: Any, policy: Any, seed: int, record: bool = True, problem: Any = None
    ) -> Trace:
        """Run ``policy`` (procedures) on one seeded problem (or ``problem``); the trace's
        info says whether the result was right."""
        ex = Executor(self.spec, policy, record=record)
        obs, info = env.reset(seed=seed)
        if problem is not None:
            obs, info = self.load_problem(env, problem)
        while True:
            d = ex.act(obs)
            obs, _, term, trunc, _ = env.step(self.to_env_action(d))
            if term or trunc:
                break
        info = dict(info, correct=env.is_correct(), length=env.length, seed=seed)
        if not record:
            return Trace(np.zeros((0, self.spec.obs_dim), np.float32), [], None, info)
        return ex.trace(info)

    def teacher_trace(self, env: Any, seed: int, problem: Any = None) -> Trace:
        """The teacher's strong trace on one problem (it must get the problem right)."""
        tr = self.rollout(env, self.teacher(), seed, problem=problem)
        if not tr.info["correct"]:  # pragma: no cover - a teacher bug
            raise AssertionError(f"the {self.name} teacher got problem {tr.info} wrong")
        return tr

    def make_traces(
        self, n: int, seed: int, lengths: Sequence[int] | None = None, strong: bool = True
    ) -> list[Trace]:
        """``n`` teacher demonstrations with lengths drawn uniformly from ``lengths``
        (default :attr:`train_lengths`); weak ones keep observations and actions only."""
        lengths = self.train_lengths if lengths is None else tuple(lengths)
        if n < 0:
            raise ValueError(f"the number of traces must be >= 0, got {n}")
        if not lengths or min(lengths) < 1:
            raise ValueError(f"trace lengths must be positive, got {list(lengths)}")
        rng = np.random.default_rng(seed)
        envs: dict[int, Any] = {}
        out = []
        for i in range(n):
            L = int(rng.choice(list(lengths)))
            env = envs.setdefault(L, self.make_env(L))
            tr = self.teacher_trace(env, seed=int(rng.integers(2**31)) + i)
            out.append(tr if strong else tr.weak())
        return out

    def controller(self, policy: Any, name: str = "php") -> ProcedureController:
        return ProcedureController(policy, self, name)


class ProcedureController:
    """Evaluation controller: runs a procedure policy (learned model or teacher) on a
    family's env, one elementary action per observation."""

    def __init__(self, policy: Any, family: ProgramFamily, name: str = "php"):
        self.policy = policy
        self.family = family
        self.name = name
        self.executor = Executor(family.spec, policy)

    def reset(self, seed: int | None = None) -> None:
        self.executor.reset()

    def act(self, obs: np.ndarray) -> int:
        try:
            return self.family.to_env_action(self.executor.act(obs))
        except RuntimeError:
            return self.family.stop_action  # a learned policy that breaks the stack rules gives up
