"""Rewrite rules: pure functions over sqlglot expressions, in an ordered registry.

Each rule takes a :class:`Query` (a qualified sqlglot ``SELECT`` plus the
planner settings it runs with) and a :class:`Catalog`, and returns a new
:class:`Query`, or raises :class:`NotApplicable` with the reason. Rules never
touch the database; :mod:`rlsuite.apps.queryopt.rewriter` runs and checks
their output.

The registry ``RULES`` is ordered; a rule's index is its action number in the
MDP (STOP comes after the last rule).

Example::

    >>> q = Query.parse("SELECT R.b, count(1) FROM R, S WHERE R.b = S.b GROUP BY R.b",
    ...                 Catalog({"r": {"a": "int", "b": "int", "c": "int"}, "s": {"b": "int", "d": "int"}}))
    >>> print(apply("eager_aggregation", q).sql())  # doctest: +NORMALIZE_WHITESPACE
    SELECT r.b AS b, CAST(COALESCE(SUM(s.qopt_cnt), 0) AS BIGINT) AS _col_1 FROM r AS r,
    (SELECT s.b AS b, COUNT(*) AS qopt_cnt FROM s AS s GROUP BY s.b) AS s WHERE r.b = s.b GROUP BY r.b
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.unnest_subqueries import unnest_subqueries

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


# ----------------------------------------------------------------- helpers
def _conjuncts(cond: exp.Expression | None) -> list[exp.Expression]:
    if cond is None:
        return []
    if isinstance(cond, exp.And):
        return _conjuncts(cond.left) + _conjuncts(cond.right)
    if isinstance(cond, exp.Paren):
        return _conjuncts(cond.this)
    return [cond]


def _and(conds: list[exp.Expression]) -> exp.Expression | None:
    if not conds:
        return None
    return exp.and_(*[c.copy() for c in conds]) if len(conds) > 1 else conds[0].copy()


def _tables_of(e: exp.Expression) -> set[str]:
    """Table aliases referenced by the columns of ``e`` (outside nested subqueries too)."""
    return {c.table for c in e.find_all(exp.Column) if c.table}


def _plain_select(e: exp.Expression, what: str) -> exp.Select:
    if not isinstance(e, exp.Select):
        raise NotApplicable(f"{what} needs a plain SELECT, got {e.key.upper()}")
    if e.args.get("with_") or e.args.get("with"):
        raise NotApplicable(f"{what} does not handle WITH clauses")
    return e


def _flatten_from(sel: exp.Select, what: str) -> tuple[list[exp.Table], list[exp.Expression]]:
    """The base tables of FROM (comma or INNER JOIN ... ON) and all join/where conjuncts."""
    from_ = sel.args.get("from_") or sel.args.get("from")
    if from_ is None:
        raise NotApplicable(f"{what} needs a FROM clause")
    items = [from_.this]
    conds: list[exp.Expression] = _conjuncts(
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
        conds += _conjuncts(j.args.get("on"))
    for t in items:
        if not isinstance(t, exp.Table) or not t.alias_or_name:
            raise NotApplicable(f"{what} needs base tables in FROM, found {t.sql(dialect=DIALECT)}")
    return items, conds


def _has_subquery(e: exp.Expression) -> bool:
    return any(True for _ in e.find_all(exp.Subquery, exp.Exists)) or any(
        isinstance(s, exp.Select) for s in e.find_all(exp.Select) if s is not e
    )


def _set_from(
    sel: exp.Select, items: list[exp.Expression], conds: list[exp.Expression]
) -> exp.Select:
    sel.set("joins", None)
    sel = sel.from_(items[0], copy=False)
    for it in items[1:]:
        sel.append("joins", exp.Join(this=it))
    sel.set("where", exp.Where(this=_and(conds)) if conds else None)
    return sel


# ------------------------------------------------------------------- rules
_AGGS = (exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg)


def eager_aggregation(e: exp.Expression, catalog: Catalog) -> exp.Expression:
    """Pre-aggregate each table that only feeds an equi-join by its join key, carrying counts.

    ``SELECT R.b, count(1) FROM R, S WHERE R.b = S.b GROUP BY R.b`` becomes a join
    of R with ``(SELECT b, COUNT(*) AS qopt_cnt FROM S GROUP BY b)`` and
    ``count`` becomes ``SUM(qopt_cnt)``; ``sum(x)`` becomes ``SUM(x * qopt_cnt)``,
    ``min`` / ``max`` stay. The seed's example 1 (aggregate before the join).
    """
    sel = _plain_select(e, "eager aggregation")
    if sel.args.get("distinct"):
        raise NotApplicable("eager aggregation does not handle SELECT DISTINCT")
    if any(True for _ in sel.find_all(exp.Window)):
        raise NotApplicable("eager aggregation does not handle window functions")
    if _has_subquery(sel):
        raise NotApplicable("eager aggregation does not handle subqueries")
    aggs = [a for a in sel.find_all(*_AGGS)]
    if not aggs and not sel.args.get("group"):
        raise NotApplicable("the query has no aggregation")
    tables, conds = _flatten_from(sel, "eager aggregation")
    if len(tables) < 2:
        raise NotApplicable("eager aggregation needs a join")
    aliases = [t.alias_or_name for t in tables]
    local: dict[str, list[exp.Expression]] = {a: [] for a in aliases}
    joins: dict[str, list[exp.EQ]] = {a: [] for a in aliases}
    blocked: set[str] = set()
    rest: list[exp.Expression] = []
    for c in conds:
        ts = _tables_of(c)
        if len(ts) == 1:
            local[next(iter(ts))].append(c)
        elif (
            isinstance(c, exp.EQ)
            and isinstance(c.left, exp.Column)
            and isinstance(c.right, exp.Column)
            and len(ts) == 2
        ):
            for a in ts:
                joins[a].append(c)
            rest.append(c)
        else:
            blocked |= ts
            rest.append(c)
    # columns used outside the WHERE/ON clauses
    outside = [p for p in sel.expressions]
    for k in ("group", "having", "order"):
        if sel.args.get(k) is not None:
            outside.append(sel.args[k])
    used_outside: set[str] = set()
    for o in outside:
        used_outside |= _tables_of(o)
    eligible = [a for a in aliases if a not in blocked and a not in used_outside and joins[a]]
    if not eligible:
        raise NotApplicable(
            "no joined table is used only by its join key (nothing to pre-aggregate)"
        )
    by_name = {t.alias_or_name: t.name for t in tables}
    chosen: list[str] = []
    # largest tables first; never two pre-aggregated tables joined to each other; keep one table whole
    for a in sorted(
        eligible, key=lambda x: (-float(catalog.rows.get(by_name[x], 0.0)), aliases.index(x))
    ):
        partners = {c.left.table for c in joins[a]} | {c.right.table for c in joins[a]}
        if partners.isdisjoint(chosen) and len(chosen) + 1 < len(aliases):
            chosen.append(a)
    chosen.sort(key=aliases.index)
    # the aggregates must be expressible with counts
    for a in aggs:
        if isinstance(a, exp.Avg):
            raise NotApplicable("eager aggregation does not rewrite AVG")
        if a.args.get("distinct") or isinstance(a.this, exp.Distinct):
            if isinstance(a, exp.Min | exp.Max):
                continue
            raise NotApplicable(f"eager aggregation does not rewrite {a.sql(dialect=DIALECT)}")
        if isinstance(a, exp.Count) and not (
            isinstance(a.this, exp.Star) or isinstance(a.this, exp.Literal)
        ):
            raise NotApplicable("eager aggregation rewrites COUNT(*) / COUNT(constant) only")
    mult: exp.Expression = exp.column(COUNT_COLUMN, table=chosen[0])
    for a in chosen[1:]:
        mult = exp.Mul(this=mult, expression=exp.column(COUNT_COLUMN, table=a))
    by_alias = {t.alias_or_name: t for t in tables}
    new_items: list[exp.Expression] = []
    for t in tables:
        a = t.alias_or_name
        if a not in chosen:
            new_items.append(t.copy())
            continue
        keys = sorted({(c.left if c.left.table == a else c.right).name for c in joins[a]})
        inner = exp.select(
            *[exp.alias_(exp.column(k, table=a), k) for k in keys],
            exp.alias_(exp.Count(this=exp.Star()), COUNT_COLUMN),
        )
        inner = inner.from_(by_alias[a].copy())
        if local[a]:
            inner = inner.where(_and(local[a]))
        inner = inner.group_by(*[exp.column(k, table=a) for k in keys])
        new_items.append(exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(a))))
    kept = [c for a in aliases if a not in chosen for c in local[a]] + rest
    new = sel.copy()
    new = _set_from(new, new_items, kept)

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Count):
            return exp.Cast(
                this=exp.func("COALESCE", exp.Sum(this=mult.copy()), exp.Literal.number(0)),
                to=exp.DataType.build("BIGINT"),
            )
        if isinstance(node, exp.Sum):
            out = exp.Sum(
                this=exp.Mul(this=exp.Paren(this=node.this.copy()), expression=mult.copy())
            )
            # PostgreSQL's sum(integer) is bigint, but x * count is bigint and sum(bigint) is
            # numeric: cast back so the rewrite returns the query's column types.
            if _column_type(node.this, by_alias, catalog) in ("integer", "smallint"):
                out = exp.Cast(this=out, to=exp.DataType.build("BIGINT"))
            return out
        return node

    for k in ("expressions", "having", "order"):
        v = new.args.get(k)
        if v is None:
            continue
        if isinstance(v, list):
            new.set(k, [x.transform(swap) for x in v])
        else:
            new.set(k, v.transform(swap))
    return new


def _column_type(
    e: exp.Expression, tables: Mapping[str, exp.Expression], catalog: Catalog
) -> str | None:
    """The catalog type of a plain column of one of ``tables`` (None for anything else)."""
    if not isinstance(e, exp.Column) or e.table not in tables:
        return None
    t = tables[e.table]
    name = t.name.lower() if isinstance(t, exp.Table) else ""
    return catalog.columns.get(name, {}).get(e.name.lower())


def _has_udf(e: exp.Expression) -> bool:
    return any(True for _ in e.find_all(exp.Anonymous))


def filter_after_aggregation(e: exp.Expression, catalog: Catalog) -> exp.Expression:
    """Evaluate expensive predicates on grouping columns once per group, after aggregating.

    A WHERE conjunct that calls a user-defined function and reads only GROUP BY
    columns moves above the aggregation, behind an ``OFFSET 0`` fence (otherwise
    PostgreSQL pushes it back down). The seed's example 2: ``sigma(gamma(R))``.
    """
    sel = _plain_select(e, "filter after aggregation")
    group = sel.args.get("group")
    if group is None or not group.expressions:
        raise NotApplicable("the query has no GROUP BY")
    for k in ("order", "limit", "offset", "distinct"):
        if sel.args.get(k) is not None:
            raise NotApplicable(f"filter after aggregation does not handle {k.upper()}")
    if any(isinstance(g, exp.Column) is False for g in group.expressions):
        raise NotApplicable("filter after aggregation needs plain GROUP BY columns")
    gcols = {(g.table, g.name): g for g in group.expressions}
    where = sel.args.get("where")
    conds = _conjuncts(where.this if where else None)
    move, keep = [], []
    for c in conds:
        cols = list(c.find_all(exp.Column))
        if (
            _has_udf(c)
            and cols
            and not _has_subquery(c)
            and all((col.table, col.name) in gcols for col in cols)
        ):
            move.append(c)
        else:
            keep.append(c)
    if not move:
        raise NotApplicable("no WHERE predicate calls a function on GROUP BY columns only")
    inner = sel.copy()
    inner.set("where", exp.Where(this=_and(keep)) if keep else None)
    names = [p.alias_or_name for p in inner.expressions]
    hidden: dict[tuple[str, str], str] = {}
    for key, g in gcols.items():
        for p in inner.expressions:
            if (
                isinstance(p, exp.Alias)
                and isinstance(p.this, exp.Column)
                and (p.this.table, p.this.name) == key
            ):
                hidden[key] = p.alias
                break
        else:
            alias = f"qopt_g{len(hidden)}"
            inner.append("expressions", exp.alias_(g.copy(), alias))
            hidden[key] = alias
    inner.set("offset", exp.Offset(expression=exp.Literal.number(0)))
    sub = "qopt_agg"
    pred = _and(move).transform(
        lambda n: (
            exp.column(hidden[(n.table, n.name)], table=sub) if isinstance(n, exp.Column) else n
        )
    )
    outer = (
        exp.select(*[exp.alias_(exp.column(n, table=sub), n) for n in names])
        .from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(sub))))
        .where(pred)
    )
    return outer


def _join_order(
    e: exp.Expression, catalog: Catalog, largest_first: bool
) -> tuple[exp.Expression, dict]:
    what = "join ordering"
    sel = _plain_select(e, what)
    tables, conds = _flatten_from(sel, what)
    if len(tables) < 3:
        raise NotApplicable("join ordering needs at least three tables")
    if any(_has_subquery(c) for c in conds):
        raise NotApplicable("join ordering does not handle subqueries in predicates")
    by_alias = {t.alias_or_name: t for t in tables}

    def size(a: str) -> float:
        return float(catalog.rows.get(by_alias[a].name, 1000.0))

    remaining = sorted(by_alias, key=lambda a: (-size(a) if largest_first else size(a), a))
    edges = [(c, _tables_of(c)) for c in conds]
    order = [remaining.pop(0)]
    while remaining:
        connected = [a for a in remaining if any(a in ts and ts & set(order) for _, ts in edges)]
        nxt = (connected or remaining)[0]
        remaining.remove(nxt)
        order.append(nxt)
    placed: set[str] = set()
    used: set[int] = set()
    new = sel.copy()
    new.set("joins", None)
    new.set("where", None)
    new = new.from_(by_alias[order[0]].copy(), copy=False)
    placed.add(order[0])
    where: list[exp.Expression] = []
    for a in order[1:]:
        placed.add(a)
        on = []
        for i, (c, ts) in enumerate(edges):
            if i not in used and a in ts and ts <= placed and len(ts) > 1:
                on.append(c)
                used.add(i)
        j = (
            exp.Join(this=by_alias[a].copy(), kind="CROSS")
            if not on
            else exp.Join(this=by_alias[a].copy(), on=_and(on))
        )
        new.append("joins", j)
    where = [c for i, (c, _) in enumerate(edges) if i not in used]
    new.set("where", exp.Where(this=_and(where)) if where else None)
    return new, {"join_collapse_limit": "1"}


def join_order_small_first(e: exp.Expression, catalog: Catalog):
    """Explicit JOINs from the smallest table up (connected first), fixed by ``join_collapse_limit = 1``."""
    return _join_order(e, catalog, largest_first=False)


def join_order_large_first(e: exp.Expression, catalog: Catalog):
    """Explicit JOINs from the largest table down (connected first), fixed by ``join_collapse_limit = 1``."""
    return _join_order(e, catalog, largest_first=True)


def unnest(e: exp.Expression, catalog: Catalog) -> exp.Expression:
    """Unnest and decorrelate subqueries into joins with sqlglot's optimizer (``unnest_subqueries``)."""
    if not any(True for _ in e.find_all(exp.Subquery, exp.Exists, exp.In)):
        raise NotApplicable("the query has no subqueries")
    _check_correlation(e)
    # PostgreSQL binds ``FROM a, b LEFT JOIN x ON x.k = a.k`` as ``a, (b LEFT JOIN x)``, where
    # ``a`` is out of reach; the unnested joins need the comma list as explicit CROSS JOINs first.
    for sel in list(e.find_all(exp.Select)):
        for j in sel.args.get("joins") or []:
            if (
                not j.args.get("kind")
                and not j.args.get("side")
                and not j.args.get("on")
                and not j.args.get("using")
            ):
                j.set("kind", "CROSS")
    return unnest_subqueries(e)


def _check_correlation(e: exp.Expression) -> None:
    """Refuse correlations sqlglot's unnesting does not preserve (seen: TPC-H Q21's ``<>``).

    Only conjunctive equalities between a subquery's own column and an outer column are
    decorrelated safely; anything else (``<>``, ``<``, OR, a function of both) is refused.
    """
    from sqlglot.optimizer.scope import traverse_scope

    for scope in traverse_scope(e):
        if scope.is_root or not scope.external_columns:
            continue
        where = (
            scope.expression.args.get("where") if isinstance(scope.expression, exp.Select) else None
        )
        external = {id(c) for c in scope.external_columns}
        for c in _conjuncts(where.this if where else None):
            if not any(id(col) in external for col in c.find_all(exp.Column)):
                continue
            if not (
                isinstance(c, exp.EQ)
                and isinstance(c.left, exp.Column)
                and isinstance(c.right, exp.Column)
            ):
                raise NotApplicable(
                    f"correlated predicate {c.sql(dialect=DIALECT)} is not a column equality; "
                    "unnesting it would change the rows"
                )
        outside_where = [
            col
            for col in scope.external_columns
            if not (where and any(col is x for x in where.find_all(exp.Column)))
        ]
        if outside_where:
            raise NotApplicable(
                f"the subquery uses outer column {outside_where[0].sql(dialect=DIALECT)} outside "
                "its WHERE clause"
            )


def _arm(name: str, settings: dict[str, str]) -> Callable:
    def fn(e: exp.Expression, catalog: Catalog):
        return e, dict(settings)

    fn.__name__ = name
    return fn


# The registry: an action's number is its index here; STOP is len(RULES).
RULES: tuple[Rule, ...] = (
    Rule("eager_aggregation", eager_aggregation, eager_aggregation.__doc__.splitlines()[0]),
    Rule(
        "filter_after_aggregation",
        filter_after_aggregation,
        filter_after_aggregation.__doc__.splitlines()[0],
    ),
    Rule("join_order_small_first", join_order_small_first, join_order_small_first.__doc__),
    Rule("join_order_large_first", join_order_large_first, join_order_large_first.__doc__),
    Rule("unnest_subqueries", unnest, unnest.__doc__),
    Rule(
        "arm_no_nestloop",
        _arm("arm_no_nestloop", {"enable_nestloop": "off"}),
        "Bao arm: enable_nestloop = off",
    ),
    Rule(
        "arm_no_hashjoin",
        _arm("arm_no_hashjoin", {"enable_hashjoin": "off"}),
        "Bao arm: enable_hashjoin = off",
    ),
    Rule(
        "arm_no_mergejoin",
        _arm("arm_no_mergejoin", {"enable_mergejoin": "off"}),
        "Bao arm: enable_mergejoin = off",
    ),
)
RULE_NAMES: tuple[str, ...] = tuple(r.name for r in RULES)
STOP = len(RULES)
"""The STOP action's number."""


def get(name: str) -> Rule:
    for r in RULES:
        if r.name == name:
            return r
    raise ValueError(f"unknown rule {name!r}; rules: {', '.join(RULE_NAMES)}")


def apply(name: str, query: Query) -> Query:
    """Apply the rule called ``name``; raises :class:`NotApplicable` with the reason."""
    rule = get(name)
    if name in query.applied:
        raise NotApplicable(f"{name} was already applied")
    try:
        return rule(query)
    except NotApplicable:
        raise
    except Exception as err:  # noqa: BLE001 - a rule bug must not escape as a crash
        raise NotApplicable(f"{name} failed on this query: {type(err).__name__}: {err}") from err


def applicable(query: Query) -> dict[str, Query | str]:
    """For each rule: the rewritten query, or the reason it does not apply."""
    out: dict[str, Query | str] = {}
    for r in RULES:
        try:
            out[r.name] = apply(r.name, query)
        except NotApplicable as e:
            out[r.name] = str(e)
    return out


def with_settings(query: Query, **settings: str) -> Query:
    return replace(query, settings=tuple(sorted({**query.settings_dict, **settings}.items())))
