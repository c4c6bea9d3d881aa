"""Query rewriting replayed from the model server's experience store: learn from what was served.

The online learner of ``qopt-bench serve --learn`` trains the same DQN as
``qopt-bench train`` (the platform's ``replay`` plan) on this env instead of on
:class:`~rlsuite.apps.queryopt.envs.rewrite.QueryRewriteEnv`: no query runs, every
transition comes from executions measured inside PostgreSQL by ``pg_qopt``
(:mod:`rlsuite.apps.queryopt.plugin.experience`), so it learns the runtimes clients
actually saw, at whatever the UDF costs or the data looks like *now*.

States
    The featurizer's vector (:class:`~rlsuite.apps.queryopt.featurizer.Featurizer`),
    exactly as the serving model saw it: the stored observation before each rewrite
    step of a served decision.

Actions
    ``Discrete(len(RULES) + 1)`` as in ``QueryRewriteEnv``: apply rule ``i``, or STOP
    (``rules=``: a model's own list of rules instead, as there).

Rewards
    0 until the episode ends; then ``-runtime / standard runtime`` of the decision
    reached, over the shape's newest ``per_decision`` measurements of each (capped at
    ``max_ratio``). A decision never measured on that shape (an action off the logged
    paths, or a prefix nobody ran) ends the episode at ``-(1 + pessimism)``: an
    untried rewrite is scored a little worse than the standard plan, so the model
    picks only what was measured and exploration stays with the server. With
    ``log_reward=True`` the same ratios are scored ``-log(ratio)`` (unmeasured:
    ``-log(1 + pessimism)``): a 30 s query made 4.4 s or 3.4 s differ by 0.26, not by
    0.03, so the step that takes a capped query from fast to faster is learnable. Its
    action values are then no longer minus a predicted ratio (what the plugin's guard
    reads), so such a model is for offline use.

Starts
    The query as written; with ``prefix_starts > 0``, that share of episodes starts
    instead at one of the shape's logged rewrite prefixes (exploring starts: the values
    of a decision's later steps, e.g. STOP after a measured rewrite, are trained as often
    as the first step's, not only after an epsilon-greedy first step happened to reach
    them).

Termination
    STOP, an action off the logged paths, or the ``max_steps``-th rewrite.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.envs import step_action
from rlsuite.apps.queryopt.featurizer import Featurizer

LEVEL_SHIFT = 4.0
"""A decision's runtime changing by more than this factor marks a drift between two runs."""


@dataclass
class ShapeExperience:
    """What the store knows of one query shape."""

    states: dict[tuple[str, ...], np.ndarray] = field(default_factory=dict)
    """The observation after each applied prefix (``()``: the query as written)."""
    ms: dict[tuple[str, ...], list[float]] = field(default_factory=dict)
    """Newest runtimes per decision (``()``: the standard plan)."""
    ratios: dict[tuple[str, ...], list[float]] = field(default_factory=dict)
    """Newest runtimes per decision, each over the standard plan's run nearest to it in the
    shape's executions (so that a drift, a dearer UDF, does not compare runs across it)."""
    paired: bool = False
    """Whether ``ratios`` were paired from the shape's run sequence (:func:`summarise`);
    then a decision none of whose runs could be paired has no ratio."""

    def ratio(self, applied: tuple[str, ...], max_ratio: float = 10.0) -> float | None:
        """Median runtime of ``applied`` relative to the standard plan's; None when unmeasured."""
        std = self.ms.get(())
        if not std:
            return None
        if applied == ():
            return 1.0
        if self.ratios.get(applied):
            return min(max_ratio, statistics.median(self.ratios[applied]))
        if self.paired:  # measured only across a drift from every standard run: not known
            return None
        got = self.ms.get(applied)  # runs not paired (built by hand): medians over medians
        if not got:
            return None
        return min(max_ratio, statistics.median(got) / max(statistics.median(std), 1e-3))


def summarise(
    rows: Sequence[Any], schema: str | None = None, per_decision: int = 5, size: int | None = None
) -> dict[str, ShapeExperience]:
    """Group experience rows by shape (newest ``per_decision`` runtimes per decision).

    Each run of a rewrite is paired with the standard plan's run nearest to it, unless the
    rewrite's own runtime jumped by more than :data:`LEVEL_SHIFT` between that standard
    run and this run (its run nearest to the standard run against this one): a drift lies
    between them (the UDF got dearer), and the standard run measured before it says nothing
    about the run after it. Such runs are left unpaired until the standard plan is measured
    again (the model server does that when a decision's runtime jumps)."""
    out: dict[str, ShapeExperience] = {}
    seq: dict[str, list[tuple[tuple[str, ...], float]]] = {}
    for e in rows:  # oldest first: later rows overwrite states and push out runtimes
        if schema is not None and e.schema != schema:
            continue
        sx = out.setdefault(e.shape, ShapeExperience())
        runs = sx.ms.setdefault(tuple(e.applied), [])
        runs.append(float(e.ms))
        del runs[:-per_decision]
        seq.setdefault(e.shape, []).append((tuple(e.applied), float(e.ms)))
        for i, f in enumerate(e.features[: len(e.applied) + 1]):
            v = np.asarray(f, dtype=np.float32)
            if size is None or v.shape == (size,):
                sx.states[tuple(e.applied[:i])] = v
    for shp, runs_ in seq.items():
        std_at = [k for k, (a, _) in enumerate(runs_) if a == ()]
        if not std_at:
            continue
        sx = out[shp]
        sx.paired = True
        at: dict[tuple[str, ...], list[int]] = {}
        for k, (a, _) in enumerate(runs_):
            at.setdefault(a, []).append(k)
        for k, (a, ms) in enumerate(runs_):
            if a == ():
                continue
            j = bisect.bisect_left(std_at, k)
            near = min(std_at[max(0, j - 1) : j + 1], key=lambda x: abs(x - k))
            mine = at[a]
            i = bisect.bisect_left(mine, near)
            ref = min(mine[max(0, i - 1) : i + 1], key=lambda x: abs(x - near))
            lo, hi = sorted((ms, runs_[ref][1]))
            if hi > LEVEL_SHIFT * max(lo, 1e-3):
                continue
            r = sx.ratios.setdefault(a, [])
            r.append(ms / max(runs_[near][1], 1e-3))
            del r[:-per_decision]
    return out


class ReplayRewriteEnv(gym.Env):
    """Rewrite decisions replayed from measured experience; reward = -relative runtime."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        *,
        experience: str = "",
        workload: str = "joins",
        workload_config: Mapping[str, Any] | None = None,
        schema: str | None = None,
        max_steps: int = 2,
        per_decision: int = 5,
        pessimism: float = 0.1,
        max_ratio: float = 10.0,
        log_reward: bool = False,
        rules: Sequence[str] | None = None,
        prefix_starts: float = 0.0,
        worker_index: int = 0,
        vector_index: int = 0,
        **_ignored: Any,
    ):
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        if not 0.0 <= prefix_starts <= 1.0:
            raise ValueError(f"prefix_starts must be in [0, 1], got {prefix_starts}")
        self.prefix_starts = float(prefix_starts)
        self.action_names = tuple(r.name for r in R.named(tuple(rules))) if rules else R.RULE_NAMES
        self.stop_action = len(self.action_names)
        self.featurizer = Featurizer(max_steps=max_steps, rules=self.action_names)
        self.observation_space = gym.spaces.Box(0.0, 100.0, (self.featurizer.size,), np.float32)
        self.action_space = gym.spaces.Discrete(self.stop_action + 1)
        self.experience, self.workload = experience, workload
        self.workload_config = dict(workload_config or {})
        self.schema = schema or f"qopt_{workload}"
        self.max_steps, self.per_decision = int(max_steps), int(per_decision)
        self.pessimism, self.max_ratio = float(pessimism), float(max_ratio)
        self.log_reward = bool(log_reward)
        self._shapes: list[ShapeExperience] | None = None
        self._shape: ShapeExperience | None = None
        self._applied: tuple[str, ...] = ()
        self._steps = 0

    @property
    def shapes(self) -> list[ShapeExperience]:
        """Shapes with a measured standard plan and a known starting state."""
        if self._shapes is None:
            from rlsuite.apps.queryopt.plugin.experience import read_only

            by = summarise(
                read_only(self.experience) if self.experience else [],
                self.schema,
                self.per_decision,
                self.featurizer.size,
            )
            self._shapes = [s for s in by.values() if () in s.states and s.ms.get(())]
            if not self._shapes:
                raise ValueError(
                    f"experience store {self.experience} holds no shape of {self.schema} with a "
                    "measured standard plan: nothing to learn from yet"
                )
        return self._shapes

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._shape = self.shapes[int(self.np_random.integers(len(self.shapes)))]
        self._applied = ()
        if self.prefix_starts and self.np_random.random() < self.prefix_starts:
            later = sorted(p for p in self._shape.states if 0 < len(p) < self.max_steps)
            if later:
                self._applied = later[int(self.np_random.integers(len(later)))]
        self._steps = len(self._applied)
        return self._shape.states[self._applied].copy(), {}

    def _end(self, applied: tuple[str, ...]) -> float:
        assert self._shape is not None
        r = self._shape.ratio(applied, self.max_ratio)
        return self._score(1.0 + self.pessimism if r is None else r)

    def _score(self, ratio: float) -> float:
        if self.log_reward:
            return -math.log(max(ratio, 1e-4))
        return -ratio

    def step(self, action: int):
        a = step_action(action, self.stop_action, self._shape is not None)
        obs = self._shape.states[self._applied]
        if a == self.stop_action:
            return obs.copy(), self._end(self._applied), True, False, {}
        nxt = (*self._applied, self.action_names[a])
        if nxt not in self._shape.states:  # off the logged paths: unknown, ends pessimistic
            return obs.copy(), self._score(1.0 + self.pessimism), True, False, {"unlogged": True}
        self._applied, self._steps = nxt, self._steps + 1
        obs = self._shape.states[nxt]
        if self._steps >= self.max_steps:
            return obs.copy(), self._end(nxt), True, False, {}
        return obs.copy(), 0.0, False, False, {}
