"""Pick and apply rewrites safely: the one :class:`Rewriter` protocol and its :class:`Decision`.

Every way of choosing rewrites answers ``rewrite(sql, check) -> Decision``:
:class:`FixedRules` (the same rules every time), :class:`GreedyByCost` (the rule
the engine's cost model finds cheapest, one at a time), the trained model
(:class:`~rlsuite.apps.queryopt.train.LearnedRewriter`), and through them the
in-server plugin's model server. The benchmark, ``qopt-bench`` and the model
server take any of them.

Underneath, :func:`rewrite` applies a sequence of rules (chosen by a policy or
by hand), then checks the result on the real database, any
:class:`~rlsuite.apps.queryopt.engines.base.Engine`: sqlglot re-parses the
SQL, the engine plans it (``EXPLAIN``), and, with ``check=True``, both queries
run and their rows are compared as multisets (as lists under ``ORDER BY``). Any
failure returns the original SQL unchanged, with the reason.

Example::

    >>> res = rewrite(db, "qopt_joins", SEED_QUERY, ["eager_aggregation"], check=True)  # doctest: +SKIP
    >>> res.changed, res.applied                                                           # doctest: +SKIP
    (True, ('eager_aggregation',))
    >>> FixedRules(db, "qopt_joins", ["eager_aggregation"]).rewrite(SEED_QUERY).applied    # doctest: +SKIP
    ('eager_aggregation',)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import sqlglot
from sqlglot import exp

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.rules.base import AGGS, conjuncts, tables_of
from rlsuite.apps.queryopt.verify import check_rewrite

if TYPE_CHECKING:
    from rlsuite.apps.queryopt.engines.base import Engine

_CATALOGS: dict[tuple[str, str], R.Catalog] = {}


def catalog(db: Engine, schema: str, cached: bool = True) -> R.Catalog:
    """Columns and row estimates of ``schema``, cached per (dsn, schema)."""
    key = (db.dsn, schema)
    if cached and key in _CATALOGS:
        return _CATALOGS[key]
    cols = db.columns(schema)
    if not cols:
        raise ValueError(
            f"schema {schema} has no tables: load a workload first (`qopt-bench setup --workload W`)"
        )
    c = R.Catalog(cols, db.row_counts(schema), db.not_null_columns(schema))
    _CATALOGS[key] = c
    return c


@dataclass
class Decision:
    """What a rewriter chose for one query (and what :func:`rewrite` did)."""

    sql: str
    """The SQL to run (the original when nothing applied or a check failed)."""
    settings: dict[str, str] = field(default_factory=dict)
    """Planner settings to run ``sql`` with."""
    applied: tuple[str, ...] = ()
    """Rules applied, in order."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Why a requested rule was not applied, or why the whole rewrite was dropped (``*``)."""
    rows_match: bool | None = None
    """Result of the row comparison (None when not checked)."""
    checked_on: str | None = None
    """The schema the rows were compared on (the query's own, or a small copy of it)."""

    @property
    def changed(self) -> bool:
        return bool(self.applied)

    @property
    def reason(self) -> str:
        """The reasons on one line: ``rule: why; rule: why``."""
        return "; ".join(f"{k}: {v}" for k, v in self.reasons.items())


class Rewriter(Protocol):
    """Chooses rewrites for SQL over one workload schema; never fails a query.

    Whatever goes wrong (unparseable SQL, a model error, a rewrite the engine
    rejects or, with ``check``, one that returns other rows), the decision is the
    original SQL with the reason.
    """

    name: str
    """Shown in tables and by the model server."""
    schema: str
    """The workload schema the queries run in."""

    def rewrite(self, sql: str, check: bool = False) -> Decision:
        """The rewrite of ``sql``; ``check`` runs both queries and compares their rows."""
        ...

    def close(self) -> None: ...


def apply_rules(query: R.Query, names: Iterable[str]) -> tuple[R.Query, dict[str, str]]:
    """Apply ``names`` in order, skipping those that do not apply (with reasons)."""
    reasons: dict[str, str] = {}
    for n in names:
        try:
            query = R.apply(n, query)
        except R.NotApplicable as e:
            reasons[n] = str(e)
    return query, reasons


def rewrite(
    db: Engine,
    schema: str,
    sql: str,
    names: Iterable[str],
    check: bool = False,
    timeout_ms: int = 60_000,
    base_settings: dict[str, str] | None = None,
    check_schema: str | None = None,
) -> Decision:
    """Apply the rules ``names`` to ``sql`` and validate the result (see module doc)."""
    base_settings = dict(base_settings or {})
    names = list(names)
    for n in names:
        R.get(n)  # unknown names are a caller error
    passthrough = Decision(sql, dict(base_settings))
    try:
        q = R.Query.parse(sql, catalog(db, schema))
    except R.UnsupportedQuery as e:
        passthrough.reasons["*"] = str(e)
        return passthrough
    q, reasons = apply_rules(q, names)
    passthrough.reasons = reasons
    if not q.applied:
        return passthrough
    return validate(db, schema, sql, q, reasons, check, timeout_ms, base_settings, check_schema)


def validate(
    db: Engine,
    schema: str,
    sql: str,
    q: R.Query,
    reasons: dict[str, str],
    check: bool,
    timeout_ms: int,
    base_settings: dict[str, str],
    check_schema: str | None = None,
) -> Decision:
    """Keep the rewrite only if it re-parses, plans, and (``check``) returns the same rows
    without running slower (:func:`~rlsuite.apps.queryopt.verify.check_rewrite`; rows are
    compared on ``check_schema`` when the original runs past ``timeout_ms``)."""
    new_sql = q.sql()
    settings = {**base_settings, **q.settings_dict}
    fallback = Decision(sql, dict(base_settings), (), dict(reasons))
    try:
        sqlglot.parse_one(new_sql, read=R.DIALECT)
    except Exception as e:  # noqa: BLE001
        fallback.reasons["*"] = f"the rewritten SQL does not parse: {e}"
        return fallback
    try:
        db.explain(new_sql, schema, settings)
    except Exception as e:  # noqa: BLE001
        fallback.reasons["*"] = f"{db.label} rejects the rewritten SQL: {e}"
        return fallback
    out = Decision(new_sql, settings, q.applied, dict(reasons))
    if check:
        verdict = check_rewrite(
            db, schema, sql, new_sql, base_settings, settings, timeout_ms, check_schema
        )
        if not verdict.keep:
            fallback.reasons["*"] = verdict.reason
            fallback.rows_match = verdict.rows_match
            return fallback
        out.rows_match = True
        out.checked_on = verdict.checked_on
    return out


class _RuleRewriter:
    """What the rule rewriters share: their engine session (``db``, ``schema``,
    ``settings``, ``timeout_ms``, ``check_schema``) and applying rules in it."""

    def __init__(
        self,
        db: Engine,
        schema: str,
        settings: Mapping[str, str] | None,
        timeout_ms: int,
        check_schema: str | None,
    ):
        self.db, self.schema = db, schema
        self.settings = dict(settings or {})
        self.timeout_ms = timeout_ms
        self.check_schema = check_schema

    def apply(self, sql: str, names: Sequence[str], check: bool) -> Decision:
        """:func:`rewrite` of ``sql`` with the rules ``names``, in this session."""
        return rewrite(
            self.db,
            self.schema,
            sql,
            names,
            check,
            self.timeout_ms,
            self.settings,
            self.check_schema,
        )

    def close(self) -> None:
        pass


class FixedRules(_RuleRewriter):
    """A hand-written rewriter: always try the same rules, in order."""

    def __init__(
        self,
        db: Engine,
        schema: str,
        names: Sequence[str],
        settings: Mapping[str, str] | None = None,
        timeout_ms: int = 60_000,
        check_schema: str | None = None,
    ):
        for n in names:
            R.get(n)  # unknown names fail here, with the list of rules
        super().__init__(db, schema, settings, timeout_ms, check_schema)
        self.names = list(names)
        self.name = "rules: " + ", ".join(self.names)

    def rewrite(self, sql: str, check: bool = False) -> Decision:
        return self.apply(sql, self.names, check)


class GreedyByCost(_RuleRewriter):
    """Apply, one at a time, the rule that lowers the engine's estimated cost most.

    A rule is taken only when it cuts the estimate by more than 10%; at most
    ``max_rules`` are applied; a rewrite the engine cannot plan is skipped. Needs no model
    and runs no query (only ``EXPLAIN``; the estimate is
    :meth:`~rlsuite.apps.queryopt.engines.base.Engine.estimated_cost`).
    """

    def __init__(
        self,
        db: Engine,
        schema: str,
        settings: Mapping[str, str] | None = None,
        timeout_ms: int = 60_000,
        max_rules: int = 3,
        check_schema: str | None = None,
    ):
        super().__init__(db, schema, settings, timeout_ms, check_schema)
        self.max_rules = max_rules
        self.name = "greedy by estimated cost"

    def choose(self, sql: str) -> list[str]:
        """The rules, in order; raises when ``sql`` cannot be parsed or planned."""
        db, schema, settings = self.db, self.schema, self.settings
        q = R.Query.parse(sql, catalog(db, schema))
        cost = db.estimated_cost(db.explain(q.sql(), schema, settings))
        for _ in range(self.max_rules):
            best = None
            for name, cand in R.applicable(q).items():
                if not isinstance(cand, R.Query):
                    continue
                try:
                    plan = db.explain(cand.sql(), schema, {**settings, **cand.settings_dict})
                except Exception:  # noqa: BLE001 - a rewrite the engine rejects is no candidate
                    continue
                c = db.estimated_cost(plan)
                if c < cost * 0.9 and (best is None or c < best[0]):
                    best = (c, name)
            if best is None:
                break
            cost = best[0]
            q = R.apply(best[1], q)
        return list(q.applied)

    def rewrite(self, sql: str, check: bool = False) -> Decision:
        try:
            names = self.choose(sql)
        except Exception as e:  # noqa: BLE001 - unparseable SQL: no rewrite, with the reason
            d = rewrite(self.db, self.schema, sql, [], check, self.timeout_ms, self.settings)
            d.reasons.setdefault("*", f"no rewrite: {e}")
            return d
        return self.apply(sql, names, check)


def query_features(e: exp.Expression) -> dict[str, float]:
    """Counts describing a query's shape (used by the MDP's featurizer)."""
    sel = e
    n_tables = sum(1 for _ in e.find_all(exp.Table))
    conds = []
    for w in e.find_all(exp.Where):
        conds += conjuncts(w.this)
    for j in e.find_all(exp.Join):
        conds += conjuncts(j.args.get("on"))
    n_join = sum(1 for c in conds if len(tables_of(c)) >= 2)
    group = sel.args.get("group") if isinstance(sel, exp.Select) else None
    return {
        "tables": n_tables,
        "join_preds": n_join,
        "filters": len(conds) - n_join,
        "group_keys": len(group.expressions) if group else 0,
        "aggregates": sum(1 for _ in e.find_all(*AGGS)),
        "subqueries": sum(1 for s in e.find_all(exp.Select) if s is not e),
        "udf_calls": sum(1 for _ in e.find_all(exp.Anonymous)),
        "order_by": 1.0 if isinstance(sel, exp.Select) and sel.args.get("order") else 0.0,
        "outer_joins": sum(1 for j in e.find_all(exp.Join) if j.args.get("side")),
    }
