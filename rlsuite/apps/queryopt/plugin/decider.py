"""Deciders: the queryopt app's rewriters as the model server serves them.

A :class:`Decider` serves any of the app's rewriters
(:class:`~rlsuite.apps.queryopt.rewriter.Rewriter`): :class:`ModelDecider` runs a
checkpoint of ``qopt-bench train`` (the
:class:`~rlsuite.apps.queryopt.train.LearnedRewriter`), :class:`RulesDecider` applies
fixed rules (no learned model). Both validate a rewrite on the database (it must
re-parse and plan, and return the original's rows) and fall back to the original SQL.
The server's own sessions run with ``qopt.enabled=off`` (they never ask the server) and
with the workload's settings as a served session has them (:func:`served_settings`). A
decider is warmed (:meth:`Decider.warm`) before the server listens.

Example::

    >>> d = RulesDecider(dsn, "joins", ["eager_aggregation"])  # doctest: +SKIP
    >>> d.decide(SEED_QUERY).applied  # doctest: +SKIP
    ('eager_aggregation',)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.rewriter import Decision, FixedRules, Rewriter

if TYPE_CHECKING:
    from rlsuite.apps.queryopt.engines.postgres import Database

log = logging.getLogger(__name__)

ARM_SETTINGS = ("join_collapse_limit", "from_collapse_limit", "geqo")
"""Settings besides ``enable_*`` that an answer's arm may carry (the extension refuses others)."""


def _no_recursion(dsn: str) -> str:
    """The DSN with ``qopt.enabled=off``, so the server's own queries never ask the server."""
    if "://" in dsn:
        sep = "&" if "?" in dsn else "?"
        return f"{dsn}{sep}options=-c%20qopt.enabled%3Doff"
    return f"{dsn} options='-c qopt.enabled=off'"


def _full_data(db: Database, schema: str, timeout_s: float = 60.0) -> Any:
    """DuckDB's answers on ``schema``'s own tables (None without its postgres scanner)."""
    from rlsuite.apps.queryopt.choosers import full_data_reference

    return full_data_reference(db, schema, timeout_s)


def served_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """The workload's session settings as a served session can have them: without any
    ``qopt.`` setting.

    A served session loads pg_qopt, which reserves the ``qopt.`` prefix, so no served
    statement runs with, say, the udf workload's ``qopt.udf_cost``: its UDF runs at the
    function's own default. The server's row checks and timed runs must run as the served
    statement does. With the workload's setting pinned they ran the UDF at another cost
    (1000 loop iterations where the served statements ran 100: 32 ms checks of a 4 ms
    query, and ratios measured at the wrong cost after a drift)."""
    return {k: str(v) for k, v in settings.items() if not k.startswith("qopt.")}


def _arm(settings: dict[str, str], base: dict[str, str]) -> dict[str, str]:
    return {
        k: str(v)
        for k, v in settings.items()
        if (k.startswith("enable_") or k in ARM_SETTINGS) and base.get(k) != str(v)
    }


class Decider:
    """A :class:`~rlsuite.apps.queryopt.rewriter.Rewriter` as the model server serves it.

    The rewriter works on sessions with ``qopt.enabled=off`` (the server's own
    queries never ask the server). A decision keeps, of its settings, only the
    planner arm (what differs from the workload's own settings), and a new
    statement of a known shape gets the shape's rules replayed
    (:class:`~rlsuite.apps.queryopt.rewriter.FixedRules`) instead of the rewriter.
    Statements are featurized over ``actions`` (a model's own rules, in order; empty: the
    MDP's 14), what the server records with their runtimes and retrains over.
    """

    def __init__(
        self,
        rewriter: Rewriter,
        db: Database,
        base: Mapping[str, str],
        workload: str = "joins",
        workload_config: Mapping[str, Any] | None = None,
        max_steps: int = 2,
        env: Any = None,
        check_schema: str | None = None,
        reference: Any = None,
        actions: Sequence[str] = (),
    ):
        self.rewriter = rewriter
        self.actions: tuple[str, ...] = tuple(actions) or R.RULE_NAMES
        """The actions statements are featurized over (the model's rules, in order)."""
        self.db = db
        self.base = served_settings(base)
        self.schema = rewriter.schema
        self.name = rewriter.name
        self.workload, self.workload_config = workload, dict(workload_config or {})
        self.max_steps = int(max_steps)
        self._env = env
        self.check_schema = check_schema
        """A small copy of the schema: a rewrite of a statement too slow to finish has its
        rows compared there (as ``qopt-bench rewrite`` does)."""
        self.reference = reference
        """``reference(sql)``: the original's rows by DuckDB on the same tables
        (:class:`~rlsuite.apps.queryopt.choosers.FullDataReference`); a rewrite of a statement
        too slow to finish is compared with it first, on the small copy where it cannot run."""
        self._verified: dict[tuple[str, tuple[str, ...]], Decision] = {}

    @property
    def rewrites(self) -> bool:
        """Whether a new statement's decision may be anything but the standard plan (a
        request for one waits ``wait_ms`` only then)."""
        return True

    @property
    def own_rules(self) -> tuple[str, ...]:
        """:attr:`actions` when they are a set of their own (a model's, or fixed rules'),
        else ``()`` (the MDP's 14): what the featurizing env and a retrain are told."""
        return () if self.actions == R.RULE_NAMES else self.actions

    @property
    def env(self) -> Any:
        """The MDP env that featurizes statements (the model's own, or one of ``max_steps``)."""
        if self._env is None:
            from rlsuite.apps.queryopt.envs.rewrite import QueryRewriteEnv

            self._env = QueryRewriteEnv(
                dsn=self.db.dsn,
                workload=self.workload,
                workload_config=self.workload_config,
                max_steps=self.max_steps,
                **({"rules": list(self.own_rules)} if self.own_rules else {}),
            )
        return self._env

    def features(self, sql: str, applied: Sequence[str]) -> list[list[float]]:
        """The model's input along ``applied``: the state before each rule and after the last."""
        return [[float(x) for x in v] for v in self.env.observe(sql, applied)]

    def candidates(self, sql: str) -> list[tuple[str, ...]]:
        """Each rule that applies to ``sql`` on its own (what exploration may try)."""
        self.env.reset(seed=0, options={"sql": sql})
        return [(n,) for n, q in self.env._applicable.items() if isinstance(q, R.Query)]

    def validated(
        self,
        sql: str,
        applied: Sequence[str],
        original: list | None,
        timeout_ms: int,
        timing: dict | None = None,
    ) -> Decision | str:
        """``applied`` on ``sql`` if it applies, plans and returns the original's rows
        (``original``); otherwise why not. ``timing["s"]`` gets the rewrite's runtime in
        that check."""
        from rlsuite.apps.queryopt.rewriter import rewrite
        from rlsuite.apps.queryopt.verify import has_order_by, same_rows

        d = rewrite(self.db, self.schema, sql, list(applied), False, timeout_ms, self.base)
        if tuple(d.applied) != tuple(applied):
            return f"{'+'.join(applied)} does not apply here ({d.reason or 'no change'})"
        got = self.db.run(d.sql, self.schema, timeout_ms, d.settings)
        if timing is not None:
            timing["s"] = got.runtime_s
        if got.timed_out:
            return f"{'+'.join(applied)} ran past {timeout_ms} ms while its rows were checked"
        if original is None:  # too slow to finish: DuckDB on the same tables, or the copy
            from rlsuite.apps.queryopt.choosers import FULL_DATA
            from rlsuite.apps.queryopt.engines.base import RunResult
            from rlsuite.apps.queryopt.verify import check_rewrite

            past = RunResult(None, timeout_ms / 1000, timed_out=True)
            v = check_rewrite(
                self.db,
                self.schema,
                sql,
                d.sql,
                self.base,
                d.settings,
                timeout_ms,
                self.check_schema,
                self.reference,
                FULL_DATA,
                measured=(past, got),
                reference_first=True,
            )
            if not v.keep:
                return v.reason
            return self._served(sql, replace(d, checked_on=v.checked_on))
        if not same_rows(original, got.rows or [], ordered=has_order_by(sql)):
            return f"{'+'.join(applied)} returned other rows than the original: never served"
        return self._served(sql, replace(d, checked_on=self.schema))

    def warm(self) -> float:
        """Run every step of a decision once on one of the workload's training statements and
        throw the results away: imports, first-call caches and the check connection are paid
        for before the first request, not by it. Then time the decision and its row check once
        more, warm: returns those seconds, what a first request would wait for."""
        from rlsuite.apps.queryopt.workloads import get

        sql = get(self.workload, **self.workload_config).queries("train", 1, 0)[0]
        self.decide(sql)
        cands = self.candidates(sql)
        self.features(sql, ())
        original = self.db.run(sql, self.schema, 1000, self.base)
        for applied in cands[:1]:
            self.features(sql, applied)
            self.validated(sql, applied, original.rows or [], 1000, {})
        t0 = time.perf_counter()
        d = self.decide(sql)
        if d.applied:  # the decision's row check, as a new statement's first request has it
            original = self.db.run(sql, self.schema, 1000, self.base)
            self.validated(sql, d.applied, original.rows or [], 1000, {})
        return time.perf_counter() - t0

    def decide(self, sql: str) -> Decision:
        """The rewriter's decision for a new statement."""
        d = self.rewriter.rewrite(sql, check=False)
        if d.applied and d.rows_match:  # verified by the rewriter itself
            self._verified[(sql, tuple(d.applied))] = d
        return self._served(sql, d)

    def original_past_timeout(self, sql: str) -> bool:
        """Whether the last decision on ``sql`` ran its original past the timeout (only a
        decider that runs the original knows; the others say False)."""
        return False

    def verified(self, sql: str, applied: Sequence[str]) -> Decision | None:
        """The served form of ``applied`` on ``sql`` when the rewriter's own decision
        verified it (its rows compared, as :meth:`validated` would), else None."""
        d = self._verified.pop((sql, tuple(applied)), None)
        return None if d is None else self._served(sql, d)

    def replay(self, sql: str, applied: Sequence[str]) -> Decision:
        """The rules ``applied`` (a known shape's) on ``sql``, validated as any rewrite."""
        return self._served(sql, FixedRules(self.db, self.schema, applied, self.base).rewrite(sql))

    def _served(self, sql: str, d: Decision) -> Decision:
        if not d.applied:
            return Decision(sql, {}, (), dict(d.reasons))
        return Decision(
            d.sql, _arm(d.settings, self.base), tuple(d.applied), checked_on=d.checked_on
        )

    def close(self) -> None:
        self.rewriter.close()
        close = getattr(self.reference, "close", None)
        if close is not None:
            close()
        self.db.close()


class RulesDecider(Decider):
    """Fixed rules in order (the queryopt app's rewriter with its validation; no model).

    Its actions are its rules, in their order (what statements are featurized over, what
    exploration tries and what ``serve --learn --rules`` retrains over); with no rules (the
    standard plan: ``serve --learn`` from no model), the MDP's default rules."""

    def __init__(
        self,
        dsn: str,
        workload: str,
        rules: Sequence[str],
        workload_config: dict[str, Any] | None = None,
        max_steps: int = 2,
    ):
        from rlsuite.apps.queryopt.engines.postgres import Database
        from rlsuite.apps.queryopt.workloads import get

        actions = tuple(r.name for r in R.named(tuple(rules))) or R.RULE_NAMES  # unknown, twice
        w = get(workload, **(workload_config or {}))
        db = Database(_no_recursion(dsn))  # connects on first use
        super().__init__(
            FixedRules(db, w.schema, rules, served_settings(w.settings())),
            db,
            w.settings(),
            workload,
            workload_config,
            max_steps,
            check_schema=getattr(w, "check_schema", None),
            reference=_full_data(db, w.schema),
            actions=actions,
        )
        self.rules = list(rules)
        self.name = "rules: " + ",".join(self.rules) if self.rules else "no model yet"

    @property
    def rewrites(self) -> bool:
        return bool(self.rules)


class ModelDecider(Decider):
    """A trained checkpoint (``qopt-bench train``) through the queryopt app's LearnedRewriter."""

    def __init__(
        self,
        model: str,
        dsn: str,
        workload: str | None = None,
        workload_config: dict[str, Any] | None = None,
        timeout_ms: int = 60_000,
    ):
        from rlsuite.apps.queryopt.engines.postgres import Database
        from rlsuite.apps.queryopt.train import LearnedRewriter
        from rlsuite.apps.queryopt.workloads import get

        learned = LearnedRewriter(
            model,
            _no_recursion(dsn),
            workload=workload,
            workload_config=workload_config,
            timeout_ms=timeout_ms,
        )
        env = learned.env
        name = env.workload.name if hasattr(env, "workload") else (workload or "joins")
        w = get(name, **(workload_config or {}))
        wcfg = workload_config
        if wcfg is None:
            wcfg = {
                k: getattr(env.workload, k)
                for k in ("udf_cost", "scale")
                if hasattr(env.workload, k)
            }
        db = Database(_no_recursion(dsn))
        super().__init__(
            learned,
            db,
            w.settings(),
            name,
            wcfg,
            learned.featurizer.max_steps,
            env,
            check_schema=getattr(w, "check_schema", None),
            reference=_full_data(db, w.schema),
            actions=learned.featurizer.actions,
        )
        self.checkpoint = learned.checkpoint


class MeasuredDecider(Decider):
    """The default: candidates measured within a budget and verified
    (:class:`~rlsuite.apps.queryopt.choosers.MeasuredChooser`); a statement too slow to
    finish has its rewrite's rows compared with DuckDB's answer on the same tables, or, where
    DuckDB cannot run it, on the workload's small copy."""

    def __init__(
        self,
        dsn: str,
        workload: str,
        workload_config: dict[str, Any] | None = None,
        budget_s: float = 60.0,
        timeout_ms: int = 60_000,
        rules: Sequence[str] = (),
        max_steps: int = 2,
        full_data: bool = True,
        shipped_model: bool = True,
    ):
        """``full_data``: verify a rewrite of a statement too slow to finish with DuckDB on
        the same tables (when its postgres scanner is installed); off, only on the small
        copy. ``shipped_model``: without ``rules``, the workload's shipped model's choice is
        one more candidate (as in ``qopt-bench rewrite``), when it loads."""
        from rlsuite.apps.queryopt.choosers import FULL_DATA, MeasuredChooser
        from rlsuite.apps.queryopt.engines.postgres import Database
        from rlsuite.apps.queryopt.workloads import get

        w = get(workload, **(workload_config or {}))
        db = Database(_no_recursion(dsn))
        check_schema = getattr(w, "check_schema", None)
        reference = _full_data(db, w.schema, budget_s) if full_data else None
        model = None
        if shipped_model and not rules and w.shipped_model:
            from rlsuite.apps.queryopt.train import LearnedRewriter

            try:
                model = LearnedRewriter(
                    w.shipped_model,
                    _no_recursion(dsn),
                    workload=w.name,
                    workload_config=workload_config,
                    timeout_ms=timeout_ms,
                )
            except Exception as e:  # noqa: BLE001 - only a candidate: left out, with the reason
                log.warning("the shipped model is left out (%s: %s)", type(e).__name__, e)
        chooser = MeasuredChooser(
            db,
            w.schema,
            served_settings(w.settings()),
            timeout_ms=timeout_ms,
            check_schema=check_schema,
            budget_s=budget_s,
            model=model,
            rules=rules,
            reference=reference,
            reference_label=FULL_DATA,
        )
        super().__init__(
            chooser,
            db,
            w.settings(),
            workload,
            workload_config,
            max_steps,
            check_schema=check_schema,
            reference=reference,
        )
        self._past_timeout: set[str] = set()
        try:
            self._warm_sql: str | None = w.queries("train", 1, 0)[0]
        except ValueError:  # a schema of the user's own: no query to warm up on
            self._warm_sql = None

    def decide(self, sql: str) -> Decision:
        d = super().decide(sql)
        if self.rewriter.last.original_timed_out:
            self._past_timeout.add(sql)
        return d

    def original_past_timeout(self, sql: str) -> bool:
        return sql in self._past_timeout

    def warm(self) -> float:
        """Imports, the catalog and the candidates of one training statement (plans only):
        a measured decision runs queries for up to its budget, which a warm-up must not.
        Returns the seconds the candidates took, warm."""
        if self._warm_sql is None:
            return 0.0
        self.rewriter.candidates(self._warm_sql)
        t0 = time.perf_counter()
        self.rewriter.candidates(self._warm_sql)
        return time.perf_counter() - t0
