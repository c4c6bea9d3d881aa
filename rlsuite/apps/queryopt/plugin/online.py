"""Online learning in the model server: bounded exploration, regression protection, retraining.

Three pieces, as Bao has them:

- :class:`ShapeBook` decides, per answer, what a query shape gets: the *served*
  decision, or, within a bounded share of answers, an exploration: the standard plan
  measured again (when its measurement is missing or stale) or a not-yet-measured
  candidate rewrite (the rules that apply to the query, one at a time; one already
  measured no faster than the standard plan is tried again four times less often). The served
  decision is the one *verified* fastest, when one is: among the model's choice and the
  candidates, the decision whose runtime is lowest relative to the standard plan's, at
  least ``verify_margin`` faster, measured on this shape's executions when both have
  fresh runs, else by the row check (the original and the rewrite run back to back on the
  server's own session before anything is served). Otherwise it is the current model's
  choice. A decision caught regressing is never served. A candidate whose row check ran
  more than ``explore_slower`` times slower than the original is not explored: that
  check already measured it, so no user query pays for it. It keeps the newest runtimes per
  shape and decision, and falls a shape back to the standard plan when the served
  decision's last ``regression_runs`` executions are slower than the standard plan's
  by more than ``regression_threshold`` (saying why), as measured after those executions:
  a standard-plan runtime from before them may predate a drift, so the standard plan is
  measured again before the shape is judged. A shape whose original ran past the
  server's timeout is never explored (:meth:`ShapeBook.set_no_explore`): one exploration
  of its standard plan would hold a client's statement for minutes. Pure logic: no database.
- :class:`~.learner.OnlineLearner` retrains the DQN in the background every
  ``retrain_every`` new rewards or ``retrain_seconds`` seconds, with the same learner as
  ``qopt-bench train`` (the platform's ``replay`` plan via
  :func:`rlsuite.apps.queryopt.train.train`) on the experience store
  (:mod:`rlsuite.apps.queryopt.envs.replay`), in a niced process of its own
  (:mod:`.retrainer`), over the served model's own actions: serving never waits on training.
- :func:`~.guard.guard`: a new model is swapped in only when, on the recently seen shapes, its
  choices are not predicted slower than the current model's by more than
  ``guard_margin`` (predictions: the store's measured runtimes of a decision on that
  shape, else the new model's own Q-value, in units of the standard plan's runtime).
  A retrain that raises or produces non-finite values keeps the current model.

Decisions are validated as before serving: every rewrite a shape is given has its rows
compared with the original's on the server's own session first (the model server does
that; see :mod:`.modelserver`).
"""

from __future__ import annotations

import logging
import math
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlsuite.apps.queryopt.plugin.guard import Applied
from rlsuite.platform.plans import check_at_least_one

log = logging.getLogger("rlsuite.queryopt.serve")

ShapeKey = tuple[str, str]
"""(normalised search_path, shape)."""
PAIR_WITHIN = 10
MIN_PAIRS = 2
"""A measured ratio needs at least this many such pairs (one exploration is not enough: it
may sit just before a drift that its paired standard run comes after)."""
SLOW_RETRY = 4
"""A candidate measured no faster than the standard plan is explored again only once its
runtimes are this many times ``stale_after`` old."""
"""A decision's run is compared with a standard-plan run at most this many executions of
its shape later (see :meth:`ShapeState.score`)."""


@dataclass(frozen=True)
class OnlineConfig:
    """How the model server explores, protects against regressions and retrains."""

    explore_share: float = 0.05
    """At most this share of any ``explore_window`` consecutive answers runs a
    not-yet-validated decision or re-measures the standard plan (0: never explore)."""
    explore_window: int = 100
    """The answers over which ``explore_share`` is counted."""
    regression_threshold: float = 0.2
    """A served decision slower than the standard plan by more than this share..."""
    regression_runs: int = 3
    """...over its last this many executions makes its shape fall back to the standard plan."""
    stale_after: int = 100
    """A runtime measured more than this many executions of its shape ago is stale: the
    standard plan is measured again, a candidate explored again (the workload drifts)."""
    retry_after: int = 10
    """Executions of a shape between two tries of the same exploration (a try whose
    runtime never arrives, e.g. a cancelled query, is not repeated at once)."""
    retrain_every: int = 50
    """Retrain after this many new rewards..."""
    retrain_seconds: float = 120.0
    """...or after this many seconds with at least one new reward."""
    guard_margin: float = 0.05
    """A new model may be predicted at most this much slower than the current one."""
    iterations: int = 2
    """Training iterations per retrain."""
    env_steps_per_iteration: int = 300
    """Replayed env steps per iteration."""
    max_steps: int = 2
    """Rewrites per decision (the featurizer's step count), when the server starts
    without a model; with one, the model's."""
    keep_models: int = 3
    """Retrained models kept on disk (the served one is never deleted)."""
    verify_margin: float = 0.25
    """A decision is served as verified when its runtime is at most 1 / (1 + this) of the
    standard plan's (measured, or in the row check); the fastest such one wins."""
    explore_slower: float = 2.0
    """A candidate whose row check ran more than this many times the original's is not
    explored (its check measured it already)."""

    def validate(self) -> None:
        if not 0.0 <= self.explore_share <= 1.0:
            raise ValueError(f"explore share must be in [0, 1], got {self.explore_share}")
        if self.regression_threshold < 0:
            raise ValueError(f"regression threshold must be >= 0, got {self.regression_threshold}")
        check_at_least_one(
            self,
            (
                "explore_window",
                "regression_runs",
                "stale_after",
                "retry_after",
                "retrain_every",
                "iterations",
                "env_steps_per_iteration",
                "max_steps",
                "keep_models",
            ),
            lambda k: k.replace("_", " "),
        )
        if self.retrain_seconds <= 0 or self.guard_margin < 0:
            raise ValueError("retrain seconds must be > 0 and the guard margin >= 0")
        if self.verify_margin < 0 or self.explore_slower < 1:
            raise ValueError(
                f"the verify margin must be >= 0 (got {self.verify_margin}) and explore-slower "
                f">= 1 (got {self.explore_slower})"
            )


@dataclass
class ShapeState:
    """What the server knows of one query shape."""

    executions: int = 0
    """Answers given for this shape."""
    model_choice: Applied | None = None
    """The current model's decision (None: not decided yet)."""
    model_version: int = -1
    """The model version that made ``model_choice``."""
    candidates: list[Applied] = field(default_factory=list)
    """Decisions worth exploring (the model's and each applicable rule)."""
    runs: dict[Applied, deque] = field(default_factory=dict)
    """Newest (execution index, ms) per decision; ``()`` is the standard plan."""
    tried_at: dict[Applied, int] = field(default_factory=dict)
    blocked: dict[Applied, str] = field(default_factory=dict)
    """Decisions caught regressing, with the reason (served: the standard plan instead)."""
    suspect: int | None = None
    """The execution at which the served decision looked slow against a standard plan
    measured before its slow runs (the workload may have drifted since, a dearer UDF, a
    bigger table): the standard plan is measured again before the shape is judged."""
    served_by_kind: dict[str, int] = field(default_factory=dict)
    last_served: Applied = ()
    """The decision last given as served (not explored): what the regression check judges,
    also once verification has stopped serving it."""
    checks: dict[Applied, float] = field(default_factory=dict)
    """Per decision: its row check's runtime over the original's in that check (newest)."""
    paired: dict[Applied, float] = field(default_factory=dict)
    """Per decision: its last measured runtime over the standard plan's (see ``score``)."""
    cfg: OnlineConfig | None = None
    """The book's settings (None: serve the model's choice, no verification)."""
    no_explore: str = ""
    """Why this shape is never explored (its standard plan ran past the server's timeout:
    an exploration of it, or of a candidate no one has timed, could hold a client's statement
    for minutes); empty: explored within the share."""

    def model_served(self) -> Applied:
        """The model's choice, unless it was caught regressing."""
        c = self.model_choice or ()
        return () if c in self.blocked else c

    def score(self, applied: Applied) -> float | None:
        """``applied``'s runtime over the standard plan's, measured on this shape: each of its
        newest runs over the first standard-plan run after it, when that came within
        ``PAIR_WITHIN`` executions (the median of those ratios, from ``MIN_PAIRS`` at
        least). Runs from before and after
        a drift (the UDF got dearer, the table grew) are so never held against each other:
        until the standard plan is measured again, the last ratio holds (the regression
        check has it measured when the decision looks slow). Else the row check's ratio;
        None when neither was measured."""
        if not applied:
            return 1.0
        stale = self.cfg.stale_after if self.cfg is not None else 100
        got = [(at, ms) for at, ms in self.runs.get(applied, ()) if self.executions - at < stale]
        std = [(at, ms) for at, ms in self.runs.get((), ()) if self.executions - at < stale]
        pairs = []
        for at, ms in got[-3:]:
            after = next((s for s in std if s[0] >= at), None)
            if after is not None and after[0] - at <= PAIR_WITHIN:
                pairs.append(ms / max(after[1], 1e-6))
        if len(pairs) >= MIN_PAIRS:
            self.paired[applied] = statistics.median(pairs)
        if applied in self.paired:
            return self.paired[applied]
        return self.checks.get(applied)

    def verified(self) -> Applied | None:
        """The decision verified fastest (see the module doc), or None."""
        if self.cfg is None:
            return None
        best, bound = None, 1.0 / (1.0 + self.cfg.verify_margin)
        for a in [self.model_choice or (), *self.candidates]:
            if not a or a in self.blocked:
                continue
            sc = self.score(a)
            if sc is not None and sc <= bound:
                best, bound = a, sc
        return best

    def served(self) -> Applied:
        """What this shape gets when it is not explored: the verified fastest decision,
        else the model's choice (unless caught regressing)."""
        v = self.verified()
        return v if v is not None else self.model_served()

    def recent(self, applied: Applied, within: int, n: int = 5) -> list[float]:
        """Runtimes of ``applied`` measured in the last ``within`` executions (newest ``n``)."""
        out = [ms for at, ms in self.runs.get(applied, ()) if self.executions - at < within]
        return out[-n:]


class ShapeBook:
    """Per-shape exploration and regression protection (thread-safe, no database)."""

    def __init__(self, cfg: OnlineConfig):
        cfg.validate()
        self.cfg = cfg
        self.shapes: dict[ShapeKey, ShapeState] = {}
        self._window: deque[bool] = deque(maxlen=cfg.explore_window)
        self._lock = threading.Lock()
        self.answers = 0
        self.explored = 0
        self.regressions: list[dict[str, Any]] = []

    def _state(self, sk: ShapeKey) -> ShapeState:
        st = self.shapes.get(sk)
        if st is None:
            st = self.shapes[sk] = ShapeState(cfg=self.cfg)
        return st

    def state(self, sk: ShapeKey) -> ShapeState:
        with self._lock:
            return self._state(sk)

    def served(self, sk: ShapeKey) -> Applied:
        with self._lock:
            return self._state(sk).served()

    def set_check(self, sk: ShapeKey, applied: Sequence[str], ratio: float) -> None:
        """A row check's runtime of ``applied`` over the original's, on the server's session."""
        if applied and math.isfinite(ratio) and ratio >= 0:
            with self._lock:
                self._state(sk).checks[tuple(applied)] = float(ratio)

    def set_no_explore(self, sk: ShapeKey, reason: str) -> None:
        """Never explore this shape again (:attr:`ShapeState.no_explore`)."""
        with self._lock:
            st = self._state(sk)
            if not st.no_explore:
                st.no_explore = reason
                log.info("shape %s: not explored: %s", sk[1], reason)

    def set_model_choice(self, sk: ShapeKey, applied: Sequence[str], version: int) -> None:
        with self._lock:
            st = self._state(sk)
            st.model_choice, st.model_version = tuple(applied), int(version)
            st.suspect = None
            self._add_candidates(st, [tuple(applied)])

    def add_candidates(self, sk: ShapeKey, candidates: Iterable[Sequence[str]]) -> None:
        with self._lock:
            self._add_candidates(self._state(sk), candidates)

    @staticmethod
    def _add_candidates(st: ShapeState, candidates: Iterable[Sequence[str]]) -> None:
        for c in candidates:
            c = tuple(c)
            if c and c not in st.candidates:
                st.candidates.append(c)

    def pick(self, sk: ShapeKey, ready: Callable[[Applied], bool]) -> tuple[Applied, str]:
        """The decision for one answer and how it is served (``model``, ``explore``,
        ``standard``). Explorations are limited to the share, and to decisions ``ready``
        (validated for this statement; ``ready`` may start validating it); one not ready is
        skipped."""
        cfg = self.cfg
        with self._lock:
            st = self._state(sk)
            st.executions += 1
            self.answers += 1
            served = st.served()
            if served and served != st.model_served():
                kind = "verified"
            else:
                kind = "model" if served or not st.blocked else "standard"
            choice: tuple[Applied, str] = (served, kind)
            budget = cfg.explore_share * cfg.explore_window
            if cfg.explore_share > 0 and not st.no_explore and sum(self._window) + 1 <= budget:
                want = self._exploration(st, served, ready)
                if want is not None:
                    choice = (want, "standard" if want == () else "explore")
                    st.tried_at[want] = st.executions
            explored = choice[1] not in ("model", "verified") and choice[0] != served
            if not explored:
                st.last_served = choice[0]
            self._window.append(explored)
            self.explored += int(explored)
            st.served_by_kind[choice[1]] = st.served_by_kind.get(choice[1], 0) + 1
            return choice

    def _exploration(
        self, st: ShapeState, served: Applied, ready: Callable[[Applied], bool]
    ) -> Applied | None:
        cfg = self.cfg

        def retry_ok(a: Applied) -> bool:
            return st.executions - st.tried_at.get(a, -(10**9)) >= cfg.retry_after

        def due(a: Applied) -> bool:
            # a candidate last measured no faster than the standard plan is tried again
            # SLOW_RETRY times less often (exploration goes where it may pay)
            slow = a != () and st.paired.get(a, 0.0) >= 1.0
            return not st.recent(a, cfg.stale_after * (SLOW_RETRY if slow else 1), 1) and (
                retry_ok(a)
            )

        if served != ():  # the served decision is measured first, then held against the standard
            if len(st.recent(served, cfg.stale_after)) < cfg.regression_runs:
                return None
            again = st.suspect is not None and (
                st.tried_at.get((), -(10**9)) < st.suspect or retry_ok(())
            )
            if due(()) or again:
                return ()
        slower = cfg.explore_slower

        def promising(c: Applied) -> bool:  # its row check did not already show it slow
            return st.checks.get(c, 0.0) <= slower

        order = sorted(st.candidates, key=lambda c: st.checks.get(c, slower))
        for c in order:
            if c != served and promising(c) and due(c):
                # one not validated yet starts validating, and nothing is explored meanwhile
                # (validating every candidate at once would hold up the other shapes)
                return c if ready(c) else None
        return None

    def record(self, sk: ShapeKey, applied: Sequence[str], ms: float) -> str | None:
        """A measured runtime; returns the reason when it makes the shape fall back now."""
        cfg = self.cfg
        applied = tuple(applied)
        with self._lock:
            st = self._state(sk)
            runs = st.runs.setdefault(applied, deque(maxlen=max(5, cfg.regression_runs)))
            runs.append((st.executions, float(ms)))
            if applied in st.blocked and applied != ():
                # an exploration of a blocked decision: lift the block once it beats the standard
                got, std = st.recent(applied, cfg.stale_after), st.recent((), cfg.stale_after)
                if len(got) >= 1 and std and statistics.median(got) < statistics.median(std):
                    reason = st.blocked.pop(applied)
                    log.info("shape %s: %s is faster again; unblocked (%s)", sk[1], applied, reason)
                return None
            return self._check(sk, st)

    def _check(self, sk: ShapeKey, st: ShapeState) -> str | None:
        cfg = self.cfg
        served = st.last_served
        if served == () or served in st.blocked:
            return None
        judged = [
            (at, ms) for at, ms in st.runs.get(served, ()) if st.executions - at < cfg.stale_after
        ][-cfg.regression_runs :]
        std = [(at, ms) for at, ms in st.runs.get((), ()) if st.executions - at < cfg.stale_after]
        if len(judged) < cfg.regression_runs or not std:
            return None
        mean = sum(ms for _, ms in judged) / len(judged)
        # the standard plan measured since the newest judged run, else all its fresh runs
        after = [ms for at, ms in std if at >= judged[-1][0]]
        base = statistics.median(after or [ms for _, ms in std])
        if mean <= (1.0 + cfg.regression_threshold) * base:
            st.suspect = None
            return None
        if not after:  # measured before the slow runs: maybe before a drift; measure it again
            if st.suspect is None:
                st.suspect = st.executions
                log.info(
                    "shape %s: %s looks slow; the standard plan is measured again", sk[1], served
                )
            return None
        st.suspect = None
        reason = (
            f"{'+'.join(served)} took {mean:.2f} ms on average over its last {len(judged)} "
            f"executions, the standard plan {base:.2f} ms (more than "
            f"{cfg.regression_threshold:.0%} slower): the shape falls back to the standard plan"
        )
        st.blocked[served] = reason
        self.regressions.append(
            {"shape": sk[1], "applied": list(served), "reason": reason, "time": time.time()}
        )
        log.warning("regression caught on shape %s: %s", sk[1], reason)
        return reason

    def report(self) -> list[dict[str, Any]]:
        """Per shape: what is served, its and the standard plan's recent runtimes, the speed-up."""
        out = []
        with self._lock:
            for (_sp, shp), st in self.shapes.items():
                served = st.served()
                std = st.recent((), self.cfg.stale_after)
                got = st.recent(served, self.cfg.stale_after)
                s_ms = statistics.median(std) if std else None
                g_ms = statistics.median(got) if got else None
                out.append(
                    {
                        "shape": shp,
                        "executions": st.executions,
                        "served": list(served),
                        "model_choice": list(st.model_choice or ()),
                        "model_version": st.model_version,
                        "standard_ms": s_ms,
                        "served_ms": g_ms,
                        "speedup": (s_ms / g_ms) if s_ms and g_ms else None,
                        "blocked": {"+".join(k): v for k, v in st.blocked.items()},
                        "by_kind": dict(st.served_by_kind),
                    }
                )
        return out
