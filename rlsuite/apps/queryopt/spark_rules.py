"""Rewrites for Spark SQL: the app's rules through sqlglot's Spark dialect, plus Spark's
physical-operator choices, and a :class:`~rlsuite.apps.queryopt.rewriter.Rewriter` that
checks every rewrite's rows on Spark.

The actions, in order (an action's index is its number in the Spark MDP; STOP is last):

- the logical rules of :mod:`rlsuite.apps.queryopt.rules`, translated:
  ``eager_aggregation``, ``unnest_subqueries`` and ``or_to_union_all`` as they are; the
  join orders with Catalyst's cost-based join reordering off (``spark.sql.cbo.joinReorder.enabled =
  false``, Spark's default), which keeps the written order of inner joins, in place of
  PostgreSQL's ``join_collapse_limit = 1``; ``filter_after_aggregation`` without the
  ``OFFSET 0`` fence, which means nothing to Spark (its optimizer drops ``OFFSET 0``
  and pushes the filter back below the aggregate), and with Spark's own way to keep a
  filter above an aggregate instead: the query runs with Catalyst's predicate pushdown
  rule excluded (``spark.sql.optimizer.excludedRules =
  org.apache.spark.sql.catalyst.optimizer.PushDownPredicates``). Join conditions still
  reach their joins (Catalyst's join reordering extracts them), and every such rewrite's
  rows are compared with the original's before it is used;
- join strategy hints per joined relation (``BROADCAST``, ``MERGE``, ``SHUFFLE_HASH``,
  ``SHUFFLE_REPLICATE_NL`` on the first, second and third relation of ``FROM``): the
  counterpart of PostgreSQL's planner arms, but per join instead of per query;
- adaptive execution switches: AQE off, AQE's partition coalescing off, automatic
  broadcast joins off.

PostgreSQL's planner arms (``arm_no_nestloop`` ...) are refused with the reason: they
are ``enable_*`` settings of PostgreSQL's planner and Spark has no such switch; its
join strategy is chosen per join with the hints above. So are the CTE materialisation
rules (``cte_not_materialized``, ``cte_materialized``): ``AS [NOT] MATERIALIZED`` is
PostgreSQL's syntax, and Catalyst inlines deterministic CTEs on its own.

Example::

    >>> q = parse("SELECT r.b, count(1) FROM r JOIN s ON r.b = s.b GROUP BY r.b",
    ...           R.Catalog({"r": {"a": "int", "b": "int"}, "s": {"b": "int", "d": "int"}}))
    >>> print(spark_sql(apply("hint_broadcast_1", q)))  # doctest: +NORMALIZE_WHITESPACE
    SELECT /*+ BROADCAST(s) */ r.b AS b, COUNT(1) AS _col_1 FROM r AS r JOIN s AS s ON r.b = s.b GROUP BY r.b
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import sqlglot
from sqlglot import exp

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.featurizer import QUERY_KEYS, Featurizer
from rlsuite.apps.queryopt.rewriter import Decision
from rlsuite.apps.queryopt.verify import same_rows

if TYPE_CHECKING:
    from rlsuite.apps.queryopt.engines.base import Engine

DIALECT = "spark"
PUSHDOWN_RULE = "org.apache.spark.sql.catalyst.optimizer.PushDownPredicates"
FENCE = ("spark.sql.optimizer.excludedRules", PUSHDOWN_RULE)
"""Spark's way to keep a filter above an aggregate: no predicate pushdown for this query."""
HINTS = ("BROADCAST", "MERGE", "SHUFFLE_HASH", "SHUFFLE_REPLICATE_NL")
HINT_POSITIONS = (0, 1, 2)
"""Relations of ``FROM`` (in order) a join hint can name."""

REFUSED: dict[str, str] = {
    name: (
        f"{name} is a PostgreSQL planner switch ({setting}); Spark has none: its join "
        "strategy is chosen per join with the hint_* actions (BROADCAST, MERGE, "
        "SHUFFLE_HASH, SHUFFLE_REPLICATE_NL)"
    )
    for name, setting in (
        ("arm_no_nestloop", "enable_nestloop = off"),
        ("arm_no_hashjoin", "enable_hashjoin = off"),
        ("arm_no_mergejoin", "enable_mergejoin = off"),
    )
}
"""Rules of the PostgreSQL registry that do not apply on Spark, with the reason."""
REFUSED.update(
    {
        name: (
            f"{name} writes PostgreSQL's AS {what}, which Spark SQL does not parse; "
            "Catalyst inlines every deterministic CTE itself"
        )
        for name, what in (
            ("cte_not_materialized", "NOT MATERIALIZED"),
            ("cte_materialized", "MATERIALIZED"),
        )
    }
)


@dataclass(frozen=True)
class SparkAction:
    """One action of the Spark MDP: a function from query to query (or NotApplicable)."""

    name: str
    fn: Callable[[R.Query], R.Query]
    description: str
    kind: str
    """``logical``, ``hint`` or ``aqe``."""


def parse(sql: str, catalog: R.Catalog) -> R.Query:
    """Parse Spark SQL and qualify it; raises :class:`~rlsuite.apps.queryopt.rules.UnsupportedQuery`."""
    return R.Query.parse(sql, catalog, dialect=DIALECT)


def from_postgres(sql: str) -> str:
    """A workload query (written for PostgreSQL) as Spark SQL, through sqlglot."""
    return sqlglot.transpile(sql, read="postgres", write=DIALECT)[0]


def spark_queries(workload: Any, split: str, n: int, seed: int = 0) -> list[str]:
    """``n`` queries of ``split`` as Spark SQL; the split is the PostgreSQL text's, so a
    query is held out on both engines alike."""
    return [from_postgres(q) for q in workload.queries(split, n, seed)]


def spark_sql(q: R.Query) -> str:
    """The query as Spark SQL (hints included)."""
    return q.expression.sql(dialect=DIALECT)


def key(q: R.Query) -> str:
    """Identifies a query with its settings on Spark (hints are part of the SQL)."""
    return spark_sql(q) + " -- " + ",".join(f"{k}={v}" for k, v in q.settings)


def _with(q: R.Query, e: exp.Expression, settings: Mapping[str, str], name: str) -> R.Query:
    return R.Query(e, tuple(sorted(settings.items())), q.applied + (name,), q.catalog)


# ------------------------------------------------------------------ hints
def _hints(e: exp.Expression) -> list[exp.Expression]:
    h = e.args.get("hint") if isinstance(e, exp.Select) else None
    return list(h.expressions) if h is not None else []


def _hinted_aliases(h: exp.Expression) -> set[str]:
    return {x.name for x in h.expressions}


def _relations(sel: exp.Select) -> list[exp.Expression]:
    from_ = sel.args.get("from_") or sel.args.get("from")
    if from_ is None:
        return []
    return [from_.this] + [j.this for j in sel.args.get("joins") or []]


def _strip_hints(e: exp.Expression) -> tuple[exp.Expression, list[exp.Expression]]:
    e = e.copy()
    hints = []
    for sel in e.find_all(exp.Select):
        hints += _hints(sel)
        sel.set("hint", None)
    return e, hints


def _put_hints(e: exp.Expression, hints: list[exp.Expression]) -> exp.Expression:
    """Put hints back on the SELECT whose FROM names their relations (dropped if none does)."""
    for h in hints:
        for sel in e.find_all(exp.Select):
            names = {r.alias_or_name for r in _relations(sel)}
            if _hinted_aliases(h) <= names:
                old = _hints(sel)
                sel.set("hint", exp.Hint(expressions=old + [h.copy()]))
                break
    return e


def _hint_action(strategy: str, pos: int) -> Callable[[R.Query], R.Query]:
    name = f"hint_{strategy.lower()}_{pos}"

    def fn(q: R.Query) -> R.Query:
        sel = q.expression
        if not isinstance(sel, exp.Select):
            raise R.NotApplicable(f"{name} needs a SELECT, got {sel.key.upper()}")
        rels = _relations(sel)
        if len(rels) < 2:
            raise R.NotApplicable("the query has no join")
        if pos >= len(rels):
            raise R.NotApplicable(f"the query joins {len(rels)} relations, none at position {pos}")
        alias = rels[pos].alias_or_name
        if not alias:
            raise R.NotApplicable(f"relation {pos} has no name a hint can use")
        for h in _hints(sel):
            if alias in _hinted_aliases(h):
                raise R.NotApplicable(f"relation {alias} already has the hint {h.name}")
        new = sel.copy()
        hint = exp.JoinHint(this=strategy, expressions=[exp.to_table(alias)])
        new.set("hint", exp.Hint(expressions=_hints(new) + [hint]))
        return _with(q, new, q.settings_dict, name)

    fn.__name__ = name
    return fn


# ------------------------------------------------------------ logical rules
def _logical(name: str) -> Callable[[R.Query], R.Query]:
    def fn(q: R.Query) -> R.Query:
        bare, hints = _strip_hints(q.expression)
        out = R.apply(name, replace(q, expression=bare))
        e = _put_hints(out.expression.copy(), hints)
        settings = out.settings_dict
        settings.pop("join_collapse_limit", None)
        if name.startswith("join_order"):
            settings["spark.sql.cbo.joinReorder.enabled"] = "false"
        if name == "filter_after_aggregation":
            for sub in e.find_all(exp.Select):
                if sub.args.get("offset") is not None:
                    sub.set("offset", None)
            settings[FENCE[0]] = FENCE[1]
        return R.Query(e, tuple(sorted(settings.items())), out.applied, out.catalog)

    fn.__name__ = name
    return fn


def _setting_action(name: str, setting: str, value: str) -> Callable[[R.Query], R.Query]:
    def fn(q: R.Query) -> R.Query:
        if q.settings_dict.get(setting) == value:
            raise R.NotApplicable(f"{setting} is already {value}")
        return _with(q, q.expression.copy(), {**q.settings_dict, setting: value}, name)

    fn.__name__ = name
    return fn


def _build() -> tuple[SparkAction, ...]:
    acts: list[SparkAction] = []
    for r in R.RULES:
        if r.name in REFUSED:
            continue
        desc = " ".join(r.description.split())
        if r.name == "filter_after_aggregation":
            desc = "Evaluate UDF predicates on grouping columns once per group (pushdown excluded)"
        if r.name.startswith("join_order"):
            desc = desc.split(", fixed by")[0] + ", kept with Catalyst's CBO join reordering off."
        acts.append(SparkAction(r.name, _logical(r.name), desc, "logical"))
    for strategy in HINTS:
        for pos in HINT_POSITIONS:
            acts.append(
                SparkAction(
                    f"hint_{strategy.lower()}_{pos}",
                    _hint_action(strategy, pos),
                    f"/*+ {strategy}(x) */ on relation {pos} of FROM",
                    "hint",
                )
            )
    for name, setting, value, desc in (
        ("aqe_off", "spark.sql.adaptive.enabled", "false", "adaptive query execution off"),
        (
            "aqe_no_coalesce",
            "spark.sql.adaptive.coalescePartitions.enabled",
            "false",
            "AQE keeps every shuffle partition (no coalescing)",
        ),
        (
            "no_auto_broadcast",
            "spark.sql.autoBroadcastJoinThreshold",
            "-1",
            "no automatic broadcast joins (hints still broadcast)",
        ),
    ):
        acts.append(SparkAction(name, _setting_action(name, setting, value), desc, "aqe"))
    return tuple(acts)


ACTIONS: tuple[SparkAction, ...] = _build()
ACTION_NAMES: tuple[str, ...] = tuple(a.name for a in ACTIONS)
STOP = len(ACTIONS)
"""The STOP action's number in the Spark MDP."""


def get(name: str) -> SparkAction:
    """The action called ``name``; a PostgreSQL-only rule is refused with the reason."""
    if name in REFUSED:
        raise R.NotApplicable(REFUSED[name])
    for a in ACTIONS:
        if a.name == name:
            return a
    raise ValueError(f"unknown Spark rewrite {name!r}; rewrites: {', '.join(ACTION_NAMES)}")


def apply(name: str, q: R.Query) -> R.Query:
    """Apply one action; raises :class:`~rlsuite.apps.queryopt.rules.NotApplicable` with the reason."""
    act = get(name)
    if name in q.applied:
        raise R.NotApplicable(f"{name} was already applied")
    try:
        out = act.fn(q)
    except R.NotApplicable:
        raise
    except Exception as err:  # noqa: BLE001 - a rule bug must not escape as a crash
        raise R.NotApplicable(f"{name} failed on this query: {type(err).__name__}: {err}") from err
    if key(out) == key(q):
        raise R.NotApplicable("the rewrite leaves this query unchanged on Spark")
    return out


def applicable(q: R.Query) -> dict[str, R.Query | str]:
    """For each action: the rewritten query, or the reason it does not apply."""
    out: dict[str, R.Query | str] = {}
    for a in ACTIONS:
        try:
            out[a.name] = apply(a.name, q)
        except R.NotApplicable as e:
            out[a.name] = str(e)
    return out


# ------------------------------------------------------------- featurizer
OPERATORS = (
    "BroadcastHashJoin",
    "SortMergeJoin",
    "ShuffledHashJoin",
    "BroadcastNestedLoopJoin",
    "CartesianProduct",
    "HashAggregate",
    "ObjectHashAggregate",
    "SortAggregate",
    "Exchange",
    "BroadcastExchange",
    "BatchEvalPython",
    "Filter",
    "Sort",
    "FileScan",
    "AdaptiveSparkPlan",
)
VERSION = 1


@dataclass(frozen=True)
class SparkFeaturizer(Featurizer):
    """Query shape + Spark's plan (log estimated size, operator counts) + action
    applicability + actions applied + step + the UDF cost knob."""

    version: int = VERSION
    actions: ClassVar[tuple[str, ...]] = ACTION_NAMES
    bounds: ClassVar[tuple[float, float]] = (0.0, 100.0)

    @property
    def size(self) -> int:
        return len(QUERY_KEYS) + 2 + len(OPERATORS) + 2 * len(ACTIONS) + 2

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "spark",
            "version": self.version,
            "max_steps": self.max_steps,
            "actions": list(ACTION_NAMES),
            "operators": list(OPERATORS),
            "size": self.size,
        }

    @staticmethod
    def from_description(d: Mapping[str, Any]) -> SparkFeaturizer:
        if d.get("engine") != "spark":
            raise ValueError("the model was trained on PostgreSQL; train one with --engine spark")
        if d.get("version") != VERSION or list(d.get("actions", [])) != list(ACTION_NAMES):
            raise ValueError(
                f"the model was trained over Spark actions {d.get('actions')} (v{d.get('version')}); "
                f"this code has {list(ACTION_NAMES)} (v{VERSION}). Retrain it."
            )
        return SparkFeaturizer(max_steps=int(d["max_steps"]))

    def plan_vector(self, plan: Mapping[str, Any]) -> list[float]:
        """Spark's estimated size and rows (log, scaled) and its operator counts."""
        size = float(plan.get("size_bytes", math.nan))
        rows = float(plan.get("row_count", math.nan))
        v = [math.log1p(size) / 40.0 if math.isfinite(size) else 0.0]
        v.append(math.log1p(rows) / 30.0 if math.isfinite(rows) else 0.0)
        ops = plan.get("operators", {})
        return v + [math.log1p(float(ops.get(o, 0))) for o in OPERATORS]


# --------------------------------------------------------------- rewriting
def has_order_by(sql: str) -> bool:
    try:
        return sqlglot.parse_one(sql, read=DIALECT).args.get("order") is not None
    except Exception:  # noqa: BLE001
        return False


def spark_catalog(engine: Engine, schema: str) -> R.Catalog:
    cols = engine.columns(schema)
    if not cols:
        raise ValueError(
            f"{schema} is not loaded on Spark: run `qopt-bench setup --engine spark "
            f"--workload {schema.removeprefix('qopt_')}`"
        )
    return R.Catalog(cols, engine.row_counts(schema))


def validate(
    engine: Engine,
    schema: str,
    sql: str,
    q: R.Query,
    reasons: dict[str, str],
    timeout_ms: int,
    base_settings: Mapping[str, str],
    slower_than: float | None = None,
    check_runs: int = 1,
) -> Decision:
    """Keep a rewrite only if it re-parses, Spark plans it, and it returns the original's rows.

    Rows are always compared on Spark (as multisets; as lists under ``ORDER BY``): a
    rewrite that fails, times out or returns other rows is dropped for the original.
    With ``slower_than`` (a factor), a rewrite that ran more than that factor slower than
    the original in this check is dropped too (the check runs both anyway). With
    ``check_runs`` > 1 the two run that many times each, taking turns, and the rewrite is
    kept only if its slowest run beats ``slower_than`` times the original's fastest: a gain
    smaller than the spread of repeated runs (the noise) keeps the original.
    """
    if check_runs < 1:
        raise ValueError(f"check_runs must be >= 1, got {check_runs}")
    new_sql = spark_sql(q)
    settings = {**base_settings, **q.settings_dict}
    fallback = Decision(sql, dict(base_settings), (), dict(reasons))
    try:
        sqlglot.parse_one(new_sql, read=DIALECT)
        engine.explain(new_sql, schema, settings)
    except Exception as e:  # noqa: BLE001
        fallback.reasons["*"] = f"Spark rejects the rewritten SQL: {e}"
        return fallback
    runs = check_runs if slower_than is not None else 1
    ta: list[float] = []
    tb: list[float] = []
    for i in range(runs):
        try:
            a = engine.run(sql, schema, timeout_ms, base_settings)
            b = engine.run(new_sql, schema, timeout_ms, settings)
        except Exception as e:  # noqa: BLE001
            fallback.reasons["*"] = f"the rewrite failed on Spark: {e}"
            return fallback
        if a.timed_out or b.timed_out:
            fallback.reasons["*"] = f"cannot check rows: a query ran past {timeout_ms} ms"
            return fallback
        if i == 0 and not same_rows(a.rows or [], b.rows or [], ordered=has_order_by(sql)):
            fallback.reasons["*"] = "the rewrite returned different rows; kept the original"
            fallback.rows_match = False
            return fallback
        ta.append(a.runtime_s)
        tb.append(b.runtime_s)
    if slower_than is not None and max(tb) > slower_than * min(ta):
        what = "ran slower than" if runs == 1 else f"was not faster, in all {runs} runs, than"
        fallback.reasons["*"] = (
            f"the rewrite {what} Spark's own plan in the check "
            f"({_span(tb)} vs {_span(ta)}); kept the original"
        )
        fallback.rows_match = True
        return fallback
    return Decision(new_sql, settings, q.applied, dict(reasons), rows_match=True)


def _span(times: Sequence[float]) -> str:
    lo, hi = min(times), max(times)
    return f"{lo:.3f} s" if len(times) == 1 else f"{lo:.3f}-{hi:.3f} s"


def rewrite(
    engine: Engine,
    schema: str,
    sql: str,
    names: Iterable[str],
    timeout_ms: int = 60_000,
    base_settings: Mapping[str, str] | None = None,
) -> Decision:
    """Apply the actions ``names`` in order (refused ones noted with the reason), then
    :func:`validate` the result on Spark."""
    base = dict(base_settings or {})
    names = list(names)
    for n in names:
        if n not in REFUSED:
            get(n)  # unknown names are a caller error
    passthrough = Decision(sql, dict(base))
    try:
        q = parse(sql, spark_catalog(engine, schema))
    except R.UnsupportedQuery as e:
        passthrough.reasons["*"] = str(e)
        return passthrough
    reasons: dict[str, str] = {}
    for n in names:
        try:
            q = apply(n, q)
        except R.NotApplicable as e:
            reasons[n] = str(e)
    passthrough.reasons = reasons
    if not q.applied:
        return passthrough
    return validate(engine, schema, sql, q, reasons, timeout_ms, base)


class SparkRules:
    """A :class:`~rlsuite.apps.queryopt.rewriter.Rewriter` on Spark: the same actions every
    time, each rewrite's rows checked (``check`` is always on: Spark's answer is the reference)."""

    def __init__(
        self,
        engine: Engine,
        schema: str,
        names: Sequence[str],
        settings: Mapping[str, str] | None = None,
        timeout_ms: int = 60_000,
    ):
        for n in names:
            if n not in REFUSED:
                get(n)
        self.engine, self.schema, self.names = engine, schema, list(names)
        self.settings = dict(settings or {})
        self.timeout_ms = timeout_ms
        self.name = "Spark rules: " + ", ".join(self.names)

    def rewrite(self, sql: str, check: bool = True) -> Decision:
        return rewrite(self.engine, self.schema, sql, self.names, self.timeout_ms, self.settings)

    def close(self) -> None:
        pass
