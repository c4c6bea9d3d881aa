"""Aggregation rules: aggregate before a join (eager aggregation), filter after it."""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from rlsuite.apps.queryopt.rules.base import (
    AGGS,
    COUNT_COLUMN,
    DIALECT,
    Catalog,
    NotApplicable,
    and_all,
    conjuncts,
    flatten_from,
    has_subquery,
    plain_select,
    set_from,
    tables_of,
)


def eager_aggregation(e: exp.Expression, catalog: Catalog) -> exp.Expression:
    """Pre-aggregate each table that only feeds an equi-join by its join key, carrying counts.

    ``SELECT R.b, count(1) FROM R, S WHERE R.b = S.b GROUP BY R.b`` becomes a join
    of R with ``(SELECT b, COUNT(*) AS qopt_cnt FROM S GROUP BY b)`` and
    ``count`` becomes ``SUM(qopt_cnt)``; ``sum(x)`` becomes ``SUM(x * qopt_cnt)``,
    ``min`` / ``max`` stay. The seed's example 1 (aggregate before the join).
    """
    sel = plain_select(e, "eager aggregation")
    if sel.args.get("distinct"):
        raise NotApplicable("eager aggregation does not handle SELECT DISTINCT")
    if any(True for _ in sel.find_all(exp.Window)):
        raise NotApplicable("eager aggregation does not handle window functions")
    if has_subquery(sel):
        raise NotApplicable("eager aggregation does not handle subqueries")
    aggs = [a for a in sel.find_all(*AGGS)]
    if not aggs and not sel.args.get("group"):
        raise NotApplicable("the query has no aggregation")
    tables, conds = flatten_from(sel, "eager aggregation")
    if len(tables) < 2:
        raise NotApplicable("eager aggregation needs a join")
    aliases = [t.alias_or_name for t in tables]
    local: dict[str, list[exp.Expression]] = {a: [] for a in aliases}
    joins: dict[str, list[exp.EQ]] = {a: [] for a in aliases}
    blocked: set[str] = set()
    rest: list[exp.Expression] = []
    for c in conds:
        ts = tables_of(c)
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
        used_outside |= tables_of(o)
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
            inner = inner.where(and_all(local[a]))
        inner = inner.group_by(*[exp.column(k, table=a) for k in keys])
        new_items.append(exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(a))))
    kept = [c for a in aliases if a not in chosen for c in local[a]] + rest
    new = sel.copy()
    new = set_from(new, new_items, kept)

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
    sel = plain_select(e, "filter after aggregation")
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
    conds = conjuncts(where.this if where else None)
    move, keep = [], []
    for c in conds:
        cols = list(c.find_all(exp.Column))
        if (
            _has_udf(c)
            and cols
            and not has_subquery(c)
            and all((col.table, col.name) in gcols for col in cols)
        ):
            move.append(c)
        else:
            keep.append(c)
    if not move:
        raise NotApplicable("no WHERE predicate calls a function on GROUP BY columns only")
    inner = sel.copy()
    inner.set("where", exp.Where(this=and_all(keep)) if keep else None)
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
    pred = and_all(move).transform(
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
