"""The rules' vocabulary: the query being rewritten, the catalog, a registered rule, and
the helpers over sqlglot expressions that several rule families share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError
from sqlglot.optimizer.qualify import qualify

DIALECT = "postgres"
COUNT_COLUMN = "qopt_cnt"


class NotApplicable(Exception):
    """The rule does not apply to this query; ``str(e)`` says why."""


class UnsupportedQuery(ValueError):
    """The SQL cannot be parsed or qualified; the rewriter passes it through unchanged."""


@dataclass(frozen=True)
class Catalog:
    """What rules may know about the database: columns and estimated row counts."""

    columns: Mapping[str, Mapping[str, str]]
    """``{table: {column: type}}`` (lower-case names), for qualifying columns."""
    rows: Mapping[str, float] = field(default_factory=dict)
    """Estimated rows per table (``pg_class.reltuples``), for join ordering."""
    not_null: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Columns declared ``NOT NULL`` per table; a rule that needs a column to be non-NULL
    refuses one missing here."""


@dataclass(frozen=True)
class Query:
    """A query being rewritten: the expression, its planner settings, the rules applied so far."""

    expression: exp.Expression
    """A qualified sqlglot expression (``SELECT`` or set operation)."""
    settings: tuple[tuple[str, str], ...] = ()
    """``SET LOCAL`` planner settings the query runs with (sorted pairs)."""
    applied: tuple[str, ...] = ()
    """Names of the rules applied, in order."""
    catalog: Catalog | None = None
    """The catalog the expression was qualified against."""

    @staticmethod
    def parse(sql: str, catalog: Catalog, dialect: str = DIALECT) -> Query:
        """Parse and qualify ``sql`` (written in ``dialect``, PostgreSQL's by default);
        raises :class:`UnsupportedQuery` with the reason."""
        try:
            parsed = sqlglot.parse(sql, read=dialect)
        except ParseError as e:
            raise UnsupportedQuery(
                f"sqlglot cannot parse the query: {str(e).splitlines()[0]}"
            ) from e
        parsed = [p for p in parsed if p is not None]
        if len(parsed) != 1:
            raise UnsupportedQuery(f"expected exactly one statement, got {len(parsed)}")
        e = parsed[0]
        if not isinstance(e, exp.Query):
            raise UnsupportedQuery(f"only SELECT queries are rewritten, got {e.key.upper()}")
        ctes = {c.alias_or_name.lower() for c in e.find_all(exp.CTE)}
        unknown = sorted(
            {t.name.lower() for t in e.find_all(exp.Table)} - set(catalog.columns) - ctes
        )
        if unknown:
            raise UnsupportedQuery(
                f"unknown table(s) {', '.join(unknown)}; known: {', '.join(sorted(catalog.columns))}"
            )
        try:
            e = qualify(
                e,
                schema={k: dict(v) for k, v in catalog.columns.items()},
                dialect=dialect,
                quote_identifiers=False,
                validate_qualify_columns=True,
            )
        except (OptimizeError, Exception) as err:  # noqa: BLE001 - sqlglot raises several kinds
            raise UnsupportedQuery(f"cannot resolve the query's tables and columns: {err}") from err
        return Query(e, (), (), catalog)

    def sql(self, pretty: bool = False) -> str:
        return self.expression.sql(dialect=DIALECT, pretty=pretty)

    @property
    def settings_dict(self) -> dict[str, str]:
        return dict(self.settings)

    def key(self) -> str:
        """Identifies the query and its settings (for caches)."""
        return self.sql() + " -- " + ",".join(f"{k}={v}" for k, v in self.settings)


@dataclass(frozen=True)
class Rule:
    """One registered rewrite."""

    name: str
    fn: Callable[[exp.Expression, Catalog], exp.Expression | tuple[exp.Expression, dict]]
    description: str

    def __call__(self, query: Query) -> Query:
        catalog = query.catalog or Catalog({})
        out = self.fn(query.expression.copy(), catalog)
        settings = dict(query.settings)
        if isinstance(out, tuple):
            out, extra = out
            settings.update(extra)
        if out.sql(dialect=DIALECT) == query.sql() and settings == dict(query.settings):
            raise NotApplicable("the rule leaves this query unchanged")
        return Query(out, tuple(sorted(settings.items())), query.applied + (self.name,), catalog)


def conjuncts(cond: exp.Expression | None) -> list[exp.Expression]:
    if cond is None:
        return []
    if isinstance(cond, exp.And):
        return conjuncts(cond.left) + conjuncts(cond.right)
    if isinstance(cond, exp.Paren):
        return conjuncts(cond.this)
    return [cond]


def and_all(conds: list[exp.Expression]) -> exp.Expression | None:
    if not conds:
        return None
    return exp.and_(*[c.copy() for c in conds]) if len(conds) > 1 else conds[0].copy()


def tables_of(e: exp.Expression) -> set[str]:
    """Table aliases referenced by the columns of ``e`` (outside nested subqueries too)."""
    return {c.table for c in e.find_all(exp.Column) if c.table}


def plain_select(e: exp.Expression, what: str) -> exp.Select:
    if not isinstance(e, exp.Select):
        raise NotApplicable(f"{what} needs a plain SELECT, got {e.key.upper()}")
    if e.args.get("with_") or e.args.get("with"):
        raise NotApplicable(f"{what} does not handle WITH clauses")
    return e


def flatten_from(sel: exp.Select, what: str) -> tuple[list[exp.Table], list[exp.Expression]]:
    """The base tables of FROM (comma or INNER JOIN ... ON) and all join/where conjuncts."""
    from_ = sel.args.get("from_") or sel.args.get("from")
    if from_ is None:
        raise NotApplicable(f"{what} needs a FROM clause")
    items = [from_.this]
    conds: list[exp.Expression] = conjuncts(
        sel.args.get("where").this if sel.args.get("where") else None
    )
    for j in sel.args.get("joins") or []:
        kind = (j.args.get("kind") or "").upper()
        side = (j.args.get("side") or "").upper()
        if side or kind not in ("", "INNER", "CROSS"):
            raise NotApplicable(f"{what} handles only inner joins, found {side or kind} JOIN")
        if j.args.get("using"):
            raise NotApplicable(f"{what} does not handle JOIN ... USING")
        items.append(j.this)
        conds += conjuncts(j.args.get("on"))
    for t in items:
        if not isinstance(t, exp.Table) or not t.alias_or_name:
            raise NotApplicable(f"{what} needs base tables in FROM, found {t.sql(dialect=DIALECT)}")
    return items, conds


def sources(sel: exp.Select) -> list[exp.Expression]:
    """The relations of ``sel``'s FROM and JOINs, in order (empty without FROM)."""
    from_ = sel.args.get("from_") or sel.args.get("from")
    if from_ is None:
        return []
    return [from_.this] + [j.this for j in sel.args.get("joins") or []]


def has_subquery(e: exp.Expression) -> bool:
    return any(True for _ in e.find_all(exp.Subquery, exp.Exists)) or any(
        isinstance(s, exp.Select) for s in e.find_all(exp.Select) if s is not e
    )


def set_from(
    sel: exp.Select, items: list[exp.Expression], conds: list[exp.Expression]
) -> exp.Select:
    sel.set("joins", None)
    sel = sel.from_(items[0], copy=False)
    for it in items[1:]:
        sel.append("joins", exp.Join(this=it))
    sel.set("where", exp.Where(this=and_all(conds)) if conds else None)
    return sel


AGGS = (exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg)

_VOLATILE = ("random", "clock_timestamp", "nextval", "setseed", "gen_random_uuid")


def volatile_call(e: exp.Expression) -> str | None:
    """A function call in ``e`` that may give another value per evaluation (or a user
    function, which may), as SQL; None when there is none. A rule that evaluates an
    expression more or fewer times than the original refuses such a call."""
    for f in e.find_all(exp.Func):
        name = (f.sql_name() if not isinstance(f, exp.Anonymous) else f.name).lower()
        if isinstance(f, exp.Anonymous | exp.Rand) or name in _VOLATILE:
            return f.sql(dialect=DIALECT)
    return None


TIME_FUNCS = (exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime)
"""``now()``, ``current_date``, ...: one value per statement in PostgreSQL, but not in every
engine, and not across the statements a rewrite's check compares."""


def varying_call(e: exp.Expression) -> str | None:
    """:func:`volatile_call`, or else a time function (:data:`TIME_FUNCS`) in ``e``, as SQL;
    None when there is neither. A decorrelation refuses a subquery with one."""
    v = volatile_call(e)
    if v is None:
        t = next(e.find_all(*TIME_FUNCS), None)
        v = t.sql(dialect=DIALECT) if t is not None else None
    return v


def explicit_cross_joins(sel: exp.Select) -> None:
    """``FROM a, b`` as ``FROM a CROSS JOIN b``, before a LEFT JOIN is appended.

    PostgreSQL binds ``FROM a, b LEFT JOIN x ON x.k = a.k`` as ``a, (b LEFT JOIN x)``, where
    ``a`` is out of reach of the ``ON``.
    """
    for j in sel.args.get("joins") or []:
        if (
            not j.args.get("kind")
            and not j.args.get("side")
            and not j.args.get("on")
            and not j.args.get("using")
        ):
            j.set("kind", "CROSS")


def fresh_alias(e: exp.Expression, stem: str) -> str:
    """``stem`` plus the first number no table or subquery of ``e`` is called."""
    used = {t.alias_or_name for t in e.find_all(exp.Table, exp.Subquery)}
    i = 0
    while f"{stem}{i}" in used:
        i += 1
    return f"{stem}{i}"


def left_join_derived(
    outer: exp.Select, derived: exp.Select, alias: str, on: exp.Expression | None
) -> None:
    """Append ``LEFT JOIN (derived) AS alias ON on`` to ``outer`` (its comma joins made
    explicit first, so the ``ON`` sees every table before it)."""
    explicit_cross_joins(outer)
    outer.append(
        "joins",
        exp.Join(
            this=exp.Subquery(this=derived, alias=exp.TableAlias(this=exp.to_identifier(alias))),
            side="LEFT",
            on=on,
        ),
    )


def not_in_subqueries(e: exp.Expression) -> list[tuple[exp.Not, exp.In]]:
    """Each ``x NOT IN (SELECT ..)`` of ``e``: its ``NOT`` node and its ``IN`` node."""
    out = []
    for neg in e.find_all(exp.Not):
        inn = neg.this
        if isinstance(inn, exp.In) and isinstance(inn.args.get("query"), exp.Subquery):
            out.append((neg, inn))
    return out
